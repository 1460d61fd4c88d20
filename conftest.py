"""pytest wiring for this repository: the suite's plugin lives in harness/doors/pytest_plugin.py.

It adds the options (--kind-version, --local-version, --kubeconfig, --replay, ...), replay of recordings and
the run's summary, and registers the cluster and probe fixtures of harness/doors/probe_fixtures.py (through
harness/clusters/lifecycle.py, one life for every cluster the suite makes). Loaded here for `pytest` run in this
checkout (`make test`, `make probe`).
"""

pytest_plugins = ["harness.doors.pytest_plugin"]
