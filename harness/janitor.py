"""`make clean`: find and remove what the suite left behind (after a second Ctrl-C, an OOM kill, kill -9).

Only the suite's own leftovers, recognised by name prefix and label:
- kind clusters named `plp-…` (the names the suite gives: `plp-<minor>-<run>`), deleted with kind;
- on a cluster given by kubeconfig/context: namespaces labelled `pod-lifecycle-probes.test/suite=true`, whose
  pods first lose the suite's own finalizer (and only that one), then are deleted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubernetes import client

from harness.cluster import CleanupReport, cleanup_probe_namespace
from harness.kind import Runner, run_command
from harness.run import SUITE_LABEL
from harness.transport import raw_call

CLUSTER_PREFIX = "plp-"


@dataclass
class JanitorReport:
    clusters_deleted: list[str] = field(default_factory=list)
    clusters_left: list[str] = field(default_factory=list)  # not the suite's: never touched
    namespaces: list[CleanupReport] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def render(self) -> str:
        lines = [f"kind clusters deleted: {', '.join(self.clusters_deleted) or 'none'}"]
        if self.clusters_left:
            lines.append(f"kind clusters left alone (not the suite's): {', '.join(self.clusters_left)}")
        for ns in self.namespaces:
            lines.append(
                f"namespace {ns.namespace}: finalizers removed from {len(ns.finalizers_removed)} pod(s), "
                f"{'deleted' if ns.namespace_deleted else 'NOT deleted'}"
            )
        lines += [f"error: {e}" for e in self.errors]
        return "\n".join(lines)


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


def clean_namespaces(report: JanitorReport, core: client.CoreV1Api) -> None:
    for namespace in raw_call(core.list_namespace, label_selector=f"{SUITE_LABEL}=true").get("items") or []:
        report.namespaces.append(cleanup_probe_namespace(core, namespace["metadata"]["name"]))
