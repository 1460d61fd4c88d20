"""pytest wiring for this repository: the suite's plugin lives in harness/doors/pytest_plugin.py.

It adds the options (--kind-version, --local-version, --kubeconfig, --replay, ...), replay of recordings and
the run's summary, and the cluster and probe fixtures, in parts by concern under harness/doors/plugin/ (a run's
clusters had through harness/clusters/owner.py, their one owner). Loaded here for `pytest` run in this
checkout (`make test`, `make probe`).
"""

pytest_plugins = ["harness.doors.pytest_plugin"]

# The families' folders of data, never looked into for tests: collection would else look at each of the 2,400
# recordings (0.1 s of CPU in every pytest that collects the probes: make test's workers, the tests' child pytest).
# Here rather than in pyproject.toml's norecursedirs, whose every change makes each checkout's .venv again.
collect_ignore_glob = ["probes/*/recordings", "probes/*/manifests"]
