"""The one owner of a run's clusters: every cluster a run makes or reaches is had here, whichever front door asks
for it (make probe PARALLEL, for its workers; the pytest fixtures, for one pytest: make probe with PARALLEL=1,
plain pytest, the node-shutdown probes' own pytest). Its provider comes from its kind (made for the run, or
re-attached to one another process made), its life is harness/clusters/lifecycle.py's `cluster_life`, what
happened goes into the run's record as it happens (a node-shutdown cluster's under `shutdown_cluster`), its
component logs under the run's directory, and what stopping left is said in one line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.base.run import Run
from harness.clusters import lifecycle
from harness.clusters.kinds import NODE_SHUTDOWN_ROLE, ClusterKind, Option, Runnable, ShutsNodesDown, reattached
from harness.clusters.lifecycle import ClusterProvider, LiveTarget, Note


@dataclass
class RunClusters:
    """The clusters of one run: its own, and the node-shutdown one beside it (`shutdown`); removed at the end of
    their life unless `keep` (KEEP=1), also after a failure, Ctrl-C or SIGTERM."""

    run: Run
    keep: bool
    _facts: dict[bool, dict[str, Any]] = field(default_factory=lambda: {False: {}, True: {}})

    def note(self, shutdown: bool = False) -> Note:
        """Where what happens to a cluster is written: the run record's top level, or its `shutdown_cluster`."""

        def note(**values: Any) -> None:
            self._facts[shutdown].update(values)
            if shutdown:
                self.run.write_provenance(shutdown_cluster=dict(self._facts[shutdown]))
            else:
                self.run.write_provenance(**values)

        return note

    def made(self, kind: ClusterKind, runnable: Runnable, shutdown: bool = False) -> ClusterProvider:
        """The provider of a cluster the kind makes for this run (the node-shutdown one with `shutdown`, of a kind
        that can make one)."""
        if shutdown:
            assert isinstance(kind, ShutsNodesDown), f"{kind.name} clusters have no node shutdown"
            return kind.shutdown_provider(runnable, self.run, self.note(shutdown=True))
        return kind.provider(runnable, self.run, self.note())

    def reached(self, kind: ClusterKind, kubeconfig: Path, context: str, option: Option) -> ClusterProvider:
        """The provider of the cluster of `context`, which another process made (never made or removed here)."""
        return reattached(kind, kubeconfig, context, option, self.run.directory / "run.json")

    @contextmanager
    def life(
        self, provider: ClusterProvider, shutdown: bool = False, failed: Callable[[], bool] = lambda: False
    ) -> Iterator[LiveTarget]:
        """The cluster made (or reached), ready, and removed after (see lifecycle.cluster_life)."""
        logs = self.run.directory / f"kind-logs{f'-{NODE_SHUTDOWN_ROLE}' if shutdown else ''}"
        with lifecycle.cluster_life(provider, self.note(shutdown), self.keep, logs, failed) as target:
            yield target

    def stopped(self, provider: ClusterProvider) -> str:
        """What stopping the run left of the run's own cluster, in one line (said after Ctrl-C)."""
        facts = self.run.provenance
        if facts.get("cluster_kept"):
            outcome = "the cluster was left running (KEEP)"
        elif error := facts.get("cluster_delete_error"):
            outcome = f"the cluster could not be removed ({str(error)[:200]}); make clean removes it"
        elif facts.get("cluster_deleted") or "cluster_ready_after_s" not in facts:
            outcome = "the cluster was stopped and removed"  # (or, stopped while it was made, removed then)
        else:
            outcome = "the cluster may be left: its removal did not finish; make clean removes it"
        return f"the run on {provider.kind} cluster {provider.name}: {outcome}"
