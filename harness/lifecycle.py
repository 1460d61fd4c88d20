"""One owner for a cluster's life, whatever provides the cluster: create → Ready → prepare → use → keep or delete.

A provider says how to make, reach and remove one kind of cluster: `KindProvider` (a kind cluster from a
node image, harness/kind.py) and `LocalProvider` (Kubernetes built from its Go modules and run as processes
on this host, harness/local/). `cluster_life` drives either the same way for the pytest fixtures and for
`make probe PARALLEL=N`, writes what happened into the run's provenance as it goes, and removes the cluster
at the end, also after a failure, Ctrl-C or SIGTERM (which the suite turns into KeyboardInterrupt),
unless it is kept.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kubernetes import client, config

from harness.cluster import wait_nodes_ready
from harness.kind import ClusterFailed, KindCluster
from harness.local.build import Build
from harness.local.cluster import LocalCluster, LocalClusterError, StopReport
from harness.transport import JsonDict, LiveTransport

Note = Callable[..., None]


class ClusterProvider(Protocol):
    """How one kind of cluster is made, reached and removed."""

    kind: str  # what run.json's `cluster` says: "kind" or "local"
    name: str
    created: bool
    node_shutdown: Callable[[str, bool], JsonDict] | None

    @property
    def kubeconfig(self) -> Path: ...

    @property
    def context(self) -> str | None: ...

    def facts(self) -> dict[str, Any]:
        """Provenance known before the cluster exists."""
        ...

    def create(self, logs_dir: Path) -> None:
        """Make the cluster; raise ClusterFailed with what went wrong (the provider cleans up its half)."""
        ...

    def wait_ready(self, core: client.CoreV1Api, logs_dir: Path) -> list[str]:
        """Wait until every node is Ready; raise ClusterFailed with what was last seen and where the logs are."""
        ...

    def prepare(self, nodes: list[str]) -> dict[str, Any]:
        """Anything to do once the nodes are Ready; provenance to record."""
        ...

    def node_containers(self, node: str) -> list[JsonDict]: ...

    def delete(self) -> str | None:
        """Remove the cluster: None when it is gone (or was never made), else what could not be removed."""
        ...

    def kept(self) -> str:
        """What to tell the user about a cluster kept on purpose."""
        ...


@dataclass
class LiveTarget:
    """A cluster probes run on: its transport, a core client for the fixtures, and the recordings' origin."""

    transport: LiveTransport
    core: client.CoreV1Api
    origin: dict[str, Any]


@dataclass
class KindProvider:
    """A kind cluster from a node image (harness/kind.py); the node-shutdown cluster passes a config."""

    cluster: KindCluster
    node_image_kind_release: str | None
    kind_version: str | None
    kind_version_line: str
    preload_images: list[str] = field(default_factory=list)
    node_shutdown: Callable[[str, bool], JsonDict] | None = None
    kind: str = "kind"

    @property
    def name(self) -> str:
        return self.cluster.name

    @property
    def created(self) -> bool:
        return self.cluster.created

    @property
    def kubeconfig(self) -> Path:
        return self.cluster.kubeconfig

    @property
    def context(self) -> str | None:
        return None  # kind writes one context into the private kubeconfig, and makes it current

    def facts(self) -> dict[str, Any]:
        return {
            "cluster": "kind",
            "cluster_name": self.cluster.name,
            "node_image": self.cluster.image,
            "node_image_kind_release": self.node_image_kind_release,
            "kind_version": self.kind_version,
            "kind_version_line": self.kind_version_line,
            "kubeconfig": str(self.cluster.kubeconfig),
        }

    def create(self, logs_dir: Path) -> None:
        self.cluster.create(logs_dir=logs_dir)

    def wait_ready(self, core: client.CoreV1Api, logs_dir: Path) -> list[str]:
        return self.cluster.wait_ready(lambda: wait_nodes_ready(core), logs_dir)

    def prepare(self, nodes: list[str]) -> dict[str, Any]:
        return {"preloaded": self.cluster.preload(self.preload_images, nodes)}

    def node_containers(self, node: str) -> list[JsonDict]:
        return self.cluster.node_containers(node)

    def delete(self) -> str | None:
        deleted = self.cluster.delete()
        return deleted.output if deleted is not None and deleted.returncode != 0 else None

    def kept(self) -> str:
        return (
            f"kept kind cluster {self.name}; kubeconfig: {self.kubeconfig} "
            f"(remove it: kind delete cluster --name {self.name}, or make clean)"
        )

    def origin(self) -> dict[str, Any]:
        return {
            "cluster": "kind",
            "cluster_name": self.name,
            "node_image": self.cluster.image,
            "kind_version": self.kind_version,
        }


@dataclass
class LocalProvider:
    """Kubernetes built from its Go modules, run as processes on this host (harness/local/cluster.py)."""

    cluster: LocalCluster
    node_shutdown: Callable[[str, bool], JsonDict] | None = None
    kind: str = "local"
    last_stop: StopReport | None = None

    @classmethod
    def for_build(cls, name: str, build: Build, logs: Path) -> LocalProvider:
        return cls(LocalCluster(name=name, build=build, logs=logs))

    @property
    def name(self) -> str:
        return self.cluster.name

    @property
    def created(self) -> bool:
        return self.cluster.started

    @property
    def kubeconfig(self) -> Path:
        return self.cluster.kubeconfig

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

    def wait_ready(self, core: client.CoreV1Api, logs_dir: Path) -> list[str]:
        try:
            return wait_nodes_ready(core, timeout_s=120)
        except (TimeoutError, RuntimeError) as err:
            raise ClusterFailed(
                f"the local cluster's node never became Ready: {err}\n"
                f"the kubelet's log: {self.cluster.logs / 'kubelet.log'}"
            ) from err

    def prepare(self, nodes: list[str]) -> dict[str, Any]:
        return {"local": self.cluster.provenance()}

    def node_containers(self, node: str) -> list[JsonDict]:
        return self.cluster.node_containers(node)

    def delete(self) -> str | None:
        if not self.cluster.started:
            return None
        self.last_stop = self.cluster.stop()
        return "; ".join(self.last_stop.errors) or None

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
            # Staging modules the proxy refused at the tag and the served versions built instead (empty: exact)
            "staging_substitutions": build.get("staging_substitutions") or {},
            # Files the tag lacks that the build generated as upstream's make did (1.21-1.23: openapi)
            "generated": build.get("generated") or {},
        },
        "containerd": record.get("containerd_version"),
        "runc": record.get("runc_version"),
        "etcd": record.get("etcd_version"),
        "kernel": platform.release(),
        "images": record.get("images") or {},
    }


@contextmanager
def cluster_life(
    provider: KindProvider | LocalProvider, note: Note, keep: bool, logs_dir: Path
) -> Iterator[LiveTarget]:
    """Create the provider's cluster, wait for it, yield it, and remove it unless `keep` (see module docstring)."""
    note(**provider.facts())
    started = time.monotonic()
    try:
        provider.create(logs_dir)
        api = config.new_client_from_config(config_file=str(provider.kubeconfig), context=provider.context)
        core = client.CoreV1Api(api)
        nodes = provider.wait_ready(core, logs_dir)
        note(cluster_ready_after_s=round(time.monotonic() - started, 1))
        note(**provider.prepare(nodes))
        transport = LiveTransport(api, node_lister=provider.node_containers, node_shutdown=provider.node_shutdown)
        note(nodes=nodes, server_version=transport.server_version())
        yield LiveTarget(transport, core, provider.origin())
    except ClusterFailed as err:
        note(cluster_error=str(err))
        raise
    finally:
        if keep and provider.created:
            note(cluster_kept=True, cluster_kept_message=provider.kept())
        else:
            was_created = provider.created
            error = provider.delete()
            if error is not None:
                note(cluster_delete_error=error)
            elif was_created:
                note(cluster_deleted=True)
            if isinstance(provider, LocalProvider) and provider.last_stop is not None:
                note(local_stop=provider.last_stop.to_json())
