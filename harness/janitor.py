"""`make clean`: find and remove what the suite left behind (after a second Ctrl-C, an OOM kill, kill -9).

Only the suite's own leftovers, recognised by name prefix and label:
- kind clusters named `plp-…` (the names the suite gives: `plp-<minor>-<run>`), deleted with kind;
- local clusters (harness/clusters/local/teardown.py) whose state folder is under the local root: their processes
  stopped by the ids they recorded, their mounts, cgroups, bridge and folders removed;
- on a cluster given by kubeconfig/context: namespaces labelled `pod-lifecycle-probes.test/suite=true`, whose
  pods first lose the suite's own finalizer (and only that one), then are deleted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harness.clusters.kind.install import TOOLS_DIR
from harness.clusters.local.host import DEFAULT_ROOT
from harness.clusters.local.teardown import leftover_clusters, stop_cluster
from harness.namespaces import CleanupReport, cleanup_probe_namespace
from harness.process import Runner, run_command
from harness.run import SUITE_LABEL
from harness.transport import raw_call

if TYPE_CHECKING:
    from harness.kubeapi import KubeApi

CLUSTER_PREFIX = "plp-"


@dataclass
class JanitorReport:
    clusters_deleted: list[str] = field(default_factory=list)
    clusters_left: list[str] = field(default_factory=list)  # not the suite's: never touched
    local_stopped: list[str] = field(default_factory=list)
    namespaces: list[CleanupReport] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def render(self) -> str:
        lines = [f"kind clusters deleted: {', '.join(self.clusters_deleted) or 'none'}"]
        if self.local_stopped:
            lines.append(f"local clusters stopped and removed: {', '.join(self.local_stopped)}")
        if self.clusters_left:
            lines.append(f"kind clusters left alone (not the suite's): {', '.join(self.clusters_left)}")
        for ns in self.namespaces:
            lines.append(
                f"namespace {ns.namespace}: finalizers removed from {len(ns.finalizers_removed)} pod(s), "
                f"{'deleted' if ns.namespace_deleted else 'NOT deleted'}"
            )
        lines += [f"error: {e}" for e in self.errors]
        return "\n".join(lines)


def installed_kind(tools: Path = TOOLS_DIR) -> str | None:
    """A kind the suite installed or built (`.tools/kind-<release>`) when none is on PATH: any release lists and
    deletes clusters (kind finds them by its container labels)."""
    found = [p for p in tools.glob("kind-v*") if p.is_file() and os.access(p, os.X_OK) and p.suffix != ".json"]
    return str(max(found, key=lambda p: p.stat().st_mtime)) if found else None


def clean_kind_clusters(report: JanitorReport, kind_bin: str = "kind", runner: Runner = run_command) -> None:
    listing = runner([kind_bin, "get", "clusters"], 60)
    if listing.returncode != 0:
        report.errors.append(f"kind get clusters failed: {listing.output}")
        return
    for name in (line.strip() for line in listing.stdout.splitlines()):
        if not name:
            continue
        if not name.startswith(CLUSTER_PREFIX):
            report.clusters_left.append(name)
            continue
        deleted = runner([kind_bin, "delete", "cluster", "--name", name], 180)
        if deleted.returncode == 0:
            report.clusters_deleted.append(name)
        else:
            report.errors.append(f"kind delete cluster --name {name}: {deleted.output}")


def clean_namespaces(report: JanitorReport, core: KubeApi) -> None:
    for namespace in raw_call(core.list_namespace, label_selector=f"{SUITE_LABEL}=true").get("items") or []:
        report.namespaces.append(cleanup_probe_namespace(core, namespace["metadata"]["name"]))


def clean_local_clusters(report: JanitorReport, root: Path = DEFAULT_ROOT) -> None:
    for state in leftover_clusters(root):
        stopped = stop_cluster(state)
        report.local_stopped.append(state.name)
        report.errors += [f"local cluster {state.name}: {e}" for e in stopped.errors]
