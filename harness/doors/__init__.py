"""The front doors: cli.py (make ...: parses, dispatches to commands/, one module per make command) and
pytest_plugin.py, which registers the plugin's parts by concern (plugin/: options, clusters, collection, probes,
outcomes, workers, summary); between
them cluster_gate.py (make probe PARALLEL's workers wait for its cluster), schedule.py (PARALLEL=auto: the worker
count and each worker's probes) and selection.py (the probes a PROBE selects, collected by a child pytest)."""
