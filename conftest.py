"""pytest wiring for this repository: the suite's plugin lives in harness/doors/pytest_plugin.py.

It adds the options (--kind-version, --local-version, --kubeconfig, --replay, ...), replay of recordings and
the run's summary, and the cluster and probe fixtures, in parts by concern under harness/doors/plugin/ (a run's
clusters had through harness/clusters/owner.py, their one owner). Loaded here for `pytest` run in this
checkout (`make test`, `make probe`).
"""

pytest_plugins = ["harness.doors.pytest_plugin"]
