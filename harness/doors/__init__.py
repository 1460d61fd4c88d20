"""The front doors: cli.py (make ...: parses, dispatches to commands/, one module per make command) and
pytest_plugin.py (options, collection, verdicts, summary) with probe_fixtures.py (run, cluster, probe); between
them cluster_gate.py (make probe PARALLEL's workers wait for its cluster), schedule.py (PARALLEL=auto: the worker
count and each worker's probes) and selection.py (the probes a PROBE selects, collected by a child pytest)."""
