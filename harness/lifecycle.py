"""One owner for a cluster's life, whatever provides the cluster: create → Ready → prepare → use → keep or delete.

A provider says how to make, reach and remove one kind of cluster: `KindProvider` (a kind cluster from a
node image, harness/kind.py), `LocalProvider` (Kubernetes built from its Go modules and run as processes
on this host, harness/local/) and `ExistingProvider` (a cluster the suite did not make in this process: it
only reaches it, and never removes it). `cluster_life` drives any of them the same way, through
`ClusterProvider` alone, for the pytest fixtures and for `make probe PARALLEL=N`, writes what happened into
the run's provenance as it goes, and removes a cluster it created at the end, also after a failure, Ctrl-C
or SIGTERM (which the suite turns into KeyboardInterrupt), unless it is kept.
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from harness.errors import ClusterFailed, LocalClusterError
from harness.kind import KindCluster, list_node_containers, parse_kind_version
from harness.kubeapi import KubeApi
from harness.local.build import Build
from harness.local.cluster import LocalCluster
from harness.local.containerd import local_node_lister
from harness.local.disruption import restart_apiserver
from harness.manifest_check import images_in_manifests
from harness.process import InterruptedUndo
from harness.transport import JsonDict, LiveTransport, raw_call, watch_until
from harness.versions import NodeImage

Note = Callable[..., None]
NodeLister = Callable[[str], list[JsonDict]]
NodeShutdown = Callable[[str, bool], JsonDict]
ApiserverRestart = Callable[[], JsonDict]


class ClusterProvider(Protocol):
    """How one kind of cluster is made, reached and removed."""

    @property
    def kind(self) -> str:
        """What the provider is, for messages: "kind", "local" or "existing"."""
        ...

    @property
    def name(self) -> str: ...

    @property
    def created(self) -> bool:
        """Made by this provider and not removed yet: only such a cluster is ever removed."""
        ...

    @property
    def node_shutdown(self) -> NodeShutdown | None:
        """A node's graceful shutdown (the shutdown cluster only)."""
        ...

    @property
    def goes_with_the_run(self) -> bool:
        """The suite made this cluster for the run, which removes it (unless kept): what the probes leave in it
        need only be asked to go, not waited for."""
        ...

    @property
    def node_lister(self) -> NodeLister | None:
        """Every container on a node, as crictl reports it; None where the suite cannot see the nodes."""
        ...

    @property
    def apiserver_restart(self) -> ApiserverRestart | None:
        """Compact etcd and restart the API server (a real watch gap, harness/local/disruption.py); None where
        the suite does not run the control plane's processes."""
        ...

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

    def wait_ready(self, core: KubeApi, logs_dir: Path) -> list[str]:
        """Wait until every node is Ready (its names); raise ClusterFailed with what was last seen and where the
        logs are."""
        ...

    def prepare(self, nodes: list[str]) -> dict[str, Any]:
        """Anything to do once the nodes are Ready; provenance to record."""
        ...

    def delete(self) -> Removal:
        """Remove the cluster (nothing when it was never made): what could not be removed, what was done."""
        ...

    def kept(self) -> str:
        """What to tell the user about a cluster kept on purpose."""
        ...

    def keep_logs(self, directory: Path) -> str:
        """The cluster's component logs (the kubelet's above all) kept before it goes, after a probe failed:
        where they are, or why there are none."""
        ...

    def origin(self) -> dict[str, Any]:
        """What the recordings made on this cluster say about what ran."""
        ...


@dataclass
class Removal:
    """What removing a cluster left (`error`, None when nothing) and did (`facts`, for the provenance)."""

    error: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    interrupted: bool = False  # Ctrl-C came while it ran (it ran to its end): raised again once noted


class NodesNotReady(RuntimeError):
    """The nodes did not all become Ready in time; says what was last seen."""


def wait_nodes_ready(core: KubeApi, timeout_s: float = 180) -> list[str]:
    """Wait until every node reports Ready=True (kind's --wait exits 0 even when it times out); their names."""

    def states() -> dict[str, str]:
        return {n["metadata"]["name"]: _ready(n) for n in raw_call(core.list_node).get("items") or []}

    def all_ready() -> bool:
        seen = states()
        return bool(seen) and all(s == "True" for s in seen.values())

    if not all_ready() and not watch_until(core.list_node, lambda _t, _o: all_ready(), timeout_s):
        seen = ", ".join(f"{k}: Ready={v}" for k, v in states().items())
        raise NodesNotReady(f"nodes not Ready after {timeout_s:.0f}s; last seen: {seen or 'no nodes'}")
    return list(states())


def _ready(node: JsonDict) -> str:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return str(condition.get("status"))
    return "Unknown"


@dataclass
class LiveTarget:
    """A cluster probes run on: its transport, a core client for the fixtures, and the recordings' origin."""

    transport: LiveTransport
    core: KubeApi
    origin: dict[str, Any]
    apiserver_restart: ApiserverRestart | None = None
    goes_with_the_run: bool = False  # see ClusterProvider.goes_with_the_run


class MadeCluster(Protocol):
    """What a cluster this run makes offers its provider (harness/kind.py KindCluster, harness/local LocalCluster)."""

    @property
    def name(self) -> str: ...

    @property
    def kubeconfig(self) -> Path: ...

    def node_containers(self, node: str) -> list[JsonDict]: ...


class MadeHere:
    """A provider whose cluster this run makes, and removes when the run ends (unless kept): kind and local."""

    cluster: MadeCluster

    @property
    def name(self) -> str:
        return self.cluster.name

    @property
    def kubeconfig(self) -> Path:
        return self.cluster.kubeconfig

    @property
    def node_lister(self) -> NodeLister:
        return self.cluster.node_containers

    @property
    def goes_with_the_run(self) -> bool:
        return True


@dataclass
class KindProvider(MadeHere):
    """A kind cluster from a node image (harness/kind.py); the node-shutdown cluster passes a config."""

    cluster: KindCluster
    node_image_kind_release: str | None
    kind_version: str | None
    kind_version_line: str
    preload_images: list[str] = field(default_factory=list)
    node_shutdown: NodeShutdown | None = None
    kind: str = "kind"

    @classmethod
    def for_image(cls, image: NodeImage, name: str, kubeconfig: Path, kind_bin: str, kind_line: str) -> KindProvider:
        """A new kind cluster from a node image, preloaded with the images the manifests use."""
        cluster = KindCluster(name=name, image=image.reference, kubeconfig=kubeconfig, kind_bin=kind_bin)
        version = parse_kind_version(kind_line)
        return cls(cluster, image.kind_release, version, kind_line, preload_images=images_in_manifests())

    @property
    def created(self) -> bool:
        return self.cluster.created

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

    def wait_ready(self, core: KubeApi, logs_dir: Path) -> list[str]:
        return self.cluster.wait_ready(lambda: wait_nodes_ready(core), logs_dir)

    def prepare(self, nodes: list[str]) -> dict[str, Any]:
        return {"preloaded": self.cluster.preload(self.preload_images, nodes)}

    @property
    def apiserver_restart(self) -> None:
        return None  # the kind node's control plane is kubeadm's static pods, not the suite's processes

    def delete(self) -> Removal:
        try:
            deleted = self.cluster.delete()
        except InterruptedUndo as stop:
            failed = stop.completed.returncode != 0
            return Removal(stop.completed.output if failed else None, interrupted=True)
        return Removal(deleted.output if deleted is not None and deleted.returncode != 0 else None)

    def keep_logs(self, directory: Path) -> str:
        return self.cluster.export_logs(directory)  # kind export logs: each node's kubelet and containerd logs

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
class LocalProvider(MadeHere):
    """Kubernetes built from its Go modules, run as processes on this host (harness/local/)."""

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


@dataclass
class ExistingProvider:
    """A cluster this process did not make: one from --kubeconfig, or the one `make probe PARALLEL=N` made for
    its workers. It is reached, never created, waited for or removed."""

    kubeconfig_file: Path
    context_name: str
    label: str  # run.json's `cluster`
    recorded: dict[str, Any]  # the recordings' origin
    node_lister: NodeLister | None = None
    node_shutdown: NodeShutdown | None = None
    apiserver_restart: ApiserverRestart | None = None  # a local cluster of the suite's (its state folder)
    kind: str = "existing"
    created: bool = False

    @classmethod
    def from_kubeconfig(
        cls, kubeconfig: Path, context: str, kind_nodes: bool, local_state: Path | None, run_record: Path
    ) -> ExistingProvider:
        """The cluster of `context`; `kind_nodes` / `local_state`: the kind or local cluster `make probe` made, whose
        nodes this host reads (from its run record / the cluster's own record)."""
        if kind_nodes:
            return cls(
                kubeconfig,
                context,
                "kind (created by make probe)",
                {"cluster": "kind", **kind_facts(run_record), "context": context},
                list_node_containers,
            )
        if local_state is not None:
            record = json.loads((local_state / "cluster.json").read_text())
            return cls(
                kubeconfig,
                context,
                "local (created by make probe)",
                {**local_origin(record), "context": context},
                local_node_lister(local_state),
                apiserver_restart=partial(restart_apiserver, local_state),
            )
        return cls(kubeconfig, context, "existing", {"cluster": "existing", "context": context})

    @property
    def name(self) -> str:
        return self.context_name

    @property
    def kubeconfig(self) -> Path:
        return self.kubeconfig_file

    @property
    def context(self) -> str:
        return self.context_name

    def facts(self) -> dict[str, Any]:
        return {"cluster": self.label, "kubeconfig": str(self.kubeconfig_file), "context": self.context_name}

    def create(self, logs_dir: Path) -> None:
        """Nothing to make: the cluster exists."""

    def wait_ready(self, core: KubeApi, logs_dir: Path) -> list[str]:
        return []  # not the suite's to wait for (its nodes may not even be readable)

    def prepare(self, nodes: list[str]) -> dict[str, Any]:
        return {}

    def delete(self) -> Removal:
        return Removal()  # never the suite's to remove

    def kept(self) -> str:
        return f"the cluster of context {self.context_name} is not the suite's: left as it was"

    def keep_logs(self, directory: Path) -> str:
        return "(not the suite's to collect: its owner keeps them)"

    @property
    def goes_with_the_run(self) -> bool:
        return self.label != "existing"  # the one `make probe PARALLEL=N` made for its workers

    def origin(self) -> dict[str, Any]:
        return self.recorded


def kind_facts(run_record: Path) -> dict[str, Any]:
    """The cluster name, node image and kind version the CLI recorded when it made the kind cluster."""
    recorded = json.loads(run_record.read_text()) if run_record.is_file() else {}
    return {key: recorded[key] for key in ("cluster_name", "node_image", "kind_version") if key in recorded}


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
    provider: ClusterProvider, note: Note, keep: bool, logs_dir: Path, failed: Callable[[], bool] = lambda: False
) -> Iterator[LiveTarget]:
    """Create the provider's cluster, wait for it, yield it, and remove it unless `keep` (see module docstring);
    when `failed()` says a probe failed, its component logs are kept first (a kind cluster's go with it: seen,
    a kubelet's ContainerStatusUnknown on kind v1.26.6 whose kubelet log was gone with the cluster)."""
    from kubernetes import config

    note(**provider.facts())
    started = time.monotonic()
    try:
        provider.create(logs_dir)
        api = config.new_client_from_config(config_file=str(provider.kubeconfig), context=provider.context)
        core = KubeApi(api)
        nodes = provider.wait_ready(core, logs_dir)
        if provider.created:  # from create to every node Ready: said of the clusters made here only
            note(cluster_ready_after_s=round(time.monotonic() - started, 1))
        note(**provider.prepare(nodes))
        transport = LiveTransport(api, node_lister=provider.node_lister, node_shutdown=provider.node_shutdown)
        note(**({"nodes": nodes} if nodes else {}), server_version=transport.server_version())
        yield LiveTarget(transport, core, provider.origin(), provider.apiserver_restart, provider.goes_with_the_run)
    except ClusterFailed as err:
        note(cluster_error=str(err))
        raise
    finally:
        if provider.created and failed():
            note(component_logs=provider.keep_logs(logs_dir))
        if keep and provider.created:
            note(cluster_kept=True, cluster_kept_message=provider.kept())
        else:
            was_created = provider.created
            removal = provider.delete()
            if removal.error is not None:
                note(cluster_delete_error=removal.error)
            elif was_created:
                note(cluster_deleted=True)
            if removal.facts:
                note(**removal.facts)
            if removal.interrupted:
                raise KeyboardInterrupt
