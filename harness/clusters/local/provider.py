"""The provider of a local cluster (cluster.py: Kubernetes built from its Go modules, run as processes on this
host) for one run, and what the recordings made on one say ran."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from harness.base.errors import ClusterFailed, LocalClusterError
from harness.base.kubeapi import KubeApi
from harness.clusters.lifecycle import ApiserverRestart, MadeHere, NodeShutdown, Removal, wait_nodes_ready
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.local.disruption import restart_apiserver
from harness.gobuild.kubernetes import Build


@dataclass
class LocalProvider(MadeHere):
    """Kubernetes built from its Go modules, run as processes on this host (harness/clusters/local/)."""

    cluster: LocalCluster
    node_shutdown: NodeShutdown | None = None
    kind: str = "local"

    @classmethod
    def for_build(cls, name: str, build: Build, logs: Path) -> LocalProvider:
        return cls(LocalCluster(name=name, build=build, logs=logs))

    @property
    def created(self) -> bool:
        return self.cluster.started

    @property
    def context(self) -> str | None:
        return self.cluster.context

    def facts(self) -> dict[str, Any]:
        return {
            "cluster": "local",
            "cluster_name": self.name,
            "kubernetes_build": self.cluster.build.record,
            "kubeconfig": str(self.kubeconfig),
            "state": str(self.cluster.state),
            "component_logs": str(self.cluster.logs),
        }

    def create(self, logs_dir: Path) -> None:
        try:
            self.cluster.start()
        except (LocalClusterError, OSError) as err:
            raise ClusterFailed(f"the local cluster {self.name} did not come up: {err}") from err

    def wait_ready(self, core: KubeApi, logs_dir: Path) -> list[str]:
        try:
            return wait_nodes_ready(core, timeout_s=120)
        except (TimeoutError, RuntimeError) as err:
            raise ClusterFailed(
                f"the local cluster's node never became Ready: {err}\n"
                f"the kubelet's log: {self.cluster.logs / 'kubelet.log'}"
            ) from err

    def prepare(self, nodes: list[str]) -> dict[str, Any]:
        return {"local": self.cluster.provenance()}

    @property
    def apiserver_restart(self) -> ApiserverRestart:
        return partial(restart_apiserver, self.cluster.state)

    def delete(self) -> Removal:
        if not self.cluster.started:
            return Removal()
        stopped = self.cluster.stop()
        return Removal("; ".join(stopped.errors) or None, {"local_stop": stopped.to_json()})

    def keep_logs(self, directory: Path) -> str:
        return str(self.cluster.logs)  # every component writes its log there, and it stays with the run

    def kept(self) -> str:
        return (
            f"kept local cluster {self.name}; kubeconfig: {self.kubeconfig} "
            f"(component logs: {self.cluster.logs}; stop it: make clean)"
        )

    def origin(self) -> dict[str, Any]:
        return local_origin(self.cluster.record)


def local_origin(record: dict[str, Any]) -> dict[str, Any]:
    """What a recording made on a local cluster says about what ran, from the cluster's own record."""
    build = record.get("build") or {}
    return {
        "cluster": "local",
        "cluster_name": record.get("name"),
        "kubernetes": {
            **{k: build.get(k) for k in ("version", "commit", "toolchain", "upstream_go", "how")},
            # Why this toolchain (GO_TOOLCHAIN: the newest patch of the tag's Go minor by default, or exact)
            **{k: build[k] for k in ("toolchain_policy", "toolchain_note") if k in build},
            # Staging modules the proxy refused at the tag and the served versions built instead (empty: exact)
            "staging_substitutions": build.get("staging_substitutions") or {},
            # Modules the proxy refuses at every version, built from the stand-ins written here (empty: none)
            "module_stand_ins": build.get("module_stand_ins") or {},
            # Files the tag lacks that the build generated as upstream's make did (1.21-1.23: openapi)
            "generated": build.get("generated") or {},
        },
        "containerd": record.get("containerd_version"),
        "runc": record.get("runc_version"),
        "etcd": record.get("etcd_version"),
        "kernel": platform.release(),
        "images": record.get("images") or {},
    }
