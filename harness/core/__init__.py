"""The probe core, which knows no kind of cluster: probe.py (what a probe works with), probe_helpers.py (what probes
share), observe.py (the watch-driven observer and its bounded waits) with timeline.py (the timeline, and sightings)
and observe_readings.py (what probes read off observers: of a pod, a Job, several watches) + views.py (watching),
basis.py (what an observation rests on), expectations.py (verdicts), transport.py (what a probe may ask of a
cluster) with transport_live.py, transport_recording.py, transport_replay.py (live / recording / replay) and
transport_raw.py (the API as its raw JSON), namespaces.py (each probe's namespace), node_containers.py, records.py
(probe records read back)."""
