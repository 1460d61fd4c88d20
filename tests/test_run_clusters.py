"""The one owner of a run's clusters (harness/clusters/owner.py): make probe PARALLEL and the pytest fixtures have
every cluster through it, and nothing else enters a cluster's life."""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.base.run import Run
from harness.base.versions import Release
from harness.clusters import lifecycle
from harness.clusters.kinds import Request
from harness.clusters.owner import RunClusters
from tests.stand_in_kind import StandInClusters

REPO = Path(__file__).resolve().parent.parent


def test_only_the_owner_enters_a_clusters_life() -> None:
    entering = []
    for path in sorted((REPO / "harness").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if called == "cluster_life":
                    entering.append(str(path.relative_to(REPO)))
    assert entering == ["harness/clusters/owner.py"]


def test_the_node_shutdown_clusters_facts_and_logs_are_kept_apart_from_the_runs_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered: list[tuple[str, bool, Path]] = []

    @contextlib.contextmanager
    def life(provider: Any, note: Any, keep: bool, logs: Path, failed: Any) -> Iterator[None]:
        note(cluster_name=provider.name, cluster_deleted=True)
        entered.append((provider.name, keep, logs))
        yield

    monkeypatch.setattr(lifecycle, "cluster_life", life)
    run = Run.start(tmp_path)
    kind = StandInClusters()
    runnable = kind.resolve(Request(version=Release.parse("1.27.3")), print)
    clusters = RunClusters(run, keep=True)
    own, shutdown = clusters.made(kind, runnable), clusters.made(kind, runnable, shutdown=True)
    with clusters.life(own), clusters.life(shutdown, shutdown=True):
        pass
    assert entered == [
        (own.name, True, run.directory / "kind-logs"),
        (shutdown.name, True, run.directory / "kind-logs-gns"),
    ]
    assert run.provenance["cluster_name"] == own.name
    assert run.provenance["shutdown_cluster"] == {"cluster_name": shutdown.name, "cluster_deleted": True}
    assert clusters.stopped(own) == f"the run on stand-in cluster {own.name}: the cluster was stopped and removed"
    run.write_provenance(cluster_kept=True)
    assert clusters.stopped(own).endswith("the cluster was left running (KEEP)")
