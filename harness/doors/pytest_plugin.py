"""The suite's pytest plugin (loaded by conftest.py), in parts by concern as pytest's own plugins are, each
registered here (harness/doors/plugin/):
- options.py: the options and their checks, once, before collection, and choice.py: the kind of cluster they
  choose;
- clusters.py: the fixtures of the run and its clusters, had through the one owner of a run's clusters
  (harness/clusters/owner.py);
- collection.py: replay of recordings, REPEAT, probes with no cluster refused, the longest-first schedule;
- probes.py: the `probe` fixture, a probe's handle on its cluster or recording, and its record;
- outcomes.py: verdicts always concluded, undecided probes counted apart;
- workers.py: pytest-xdist's controller and workers sharing one run;
- summary.py: the run record's status and what is said after pytest's summary.

A probe function takes the `probe` fixture and is marked `@pytest.mark.probe`; its claim family is the folder
its module is in, probes/<family>/ (harness/base/families.py). Where it runs:
- `--kind-version 1.27` / `--kind-image ...`: on a kind cluster this run creates (deleted afterwards
  unless --keep-cluster / KEEP=1);
- `--local-version 1.27.3`: on a local cluster this run builds (once) and starts (harness/clusters/local/);
- `--kubeconfig F [--context C]`: on an existing cluster (node-level claims are "not observable");
- `--cluster-spec JSON`: on the cluster `make probe` resolved (and readied), of any kind (with --cluster-gate:
  the one make probe PARALLEL made, re-attached to once it is ready; with --manifests-checked MINOR, the minor whose
  schema make probe checked the manifests against, not checked again on a server of that minor);
- `--replay DIR`: on the recordings in DIR, once per recording of that probe, with no cluster at all (a probe
  without one is skipped by name: its claims rest on the expectations alone, as on a version no cluster ran).
Each kind of cluster declares its own options (harness/clusters/kinds.py); the plugin chooses one kind, once.
Probes selected with none of these are refused as a usage error in one line naming the options (exit 4): a run
that probed nothing never ends green, and a run record says "passed" only when a probe ran and passed.
"""

# (in an order where none imports a part listed after it, so that pytest imports each itself, asserts rewritten)
pytest_plugins = [
    "harness.doors.plugin.outcomes",
    "harness.doors.plugin.collection",
    "harness.doors.plugin.clusters",
    "harness.doors.plugin.probes",
    "harness.doors.plugin.options",
    "harness.doors.plugin.workers",
    "harness.doors.plugin.summary",
]
