"""The provider of a kind cluster from a node image (cluster.py), for one run; the graceful-node-shutdown cluster is
one with a config of its own (node_shutdown.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.base.kubeapi import KubeApi
from harness.base.manifest_check import images_in_manifests
from harness.base.process import InterruptedUndo
from harness.clusters.kind.cluster import KindCluster, parse_kind_version
from harness.clusters.kind.images import NodeImage
from harness.clusters.lifecycle import MadeHere, NodeShutdown, Removal, wait_nodes_ready
from harness.nodeimage import tags
from harness.nodeimage.kind_parts import PartsError
from harness.nodeimage.kind_parts import kind_release as kind_release_components


@dataclass
class KindProvider(MadeHere):
    """A kind cluster from a node image (cluster.py); the node-shutdown cluster passes a config."""

    cluster: KindCluster
    node_image_kind_release: str | None
    kind_version: str | None
    kind_version_line: str
    preload_images: list[str] = field(default_factory=list)
    node_shutdown: NodeShutdown | None = None
    kind: str = "kind"
    # What the host asked of every kubelet beyond kind's own config (harness/clusters/kubelet_host.py), and why
    host_kubelet: dict[str, Any] = field(default_factory=dict)
    host_kubelet_why: str = ""
    # The image the cluster's image derives from (the shutdown sibling's base) and the engine's cgroup version
    base_image: str = ""
    engine_cgroup: int | None = None

    @classmethod
    def for_image(cls, image: NodeImage, name: str, kubeconfig: Path, kind_bin: str, kind_line: str) -> KindProvider:
        """A new kind cluster from a node image, preloaded with the images the manifests use."""
        cluster = KindCluster(name=name, image=image.reference, kubeconfig=kubeconfig, kind_bin=kind_bin)
        version = parse_kind_version(kind_line)
        images = images_in_manifests()
        return cls(cluster, image.kind_release, version, kind_line, preload_images=images, base_image=image.reference)

    @property
    def created(self) -> bool:
        return self.cluster.created

    @property
    def context(self) -> str:
        return f"kind-{self.name}"  # the one context kind writes into the private kubeconfig (and makes current)

    def facts(self) -> dict[str, Any]:
        return {
            "cluster": "kind",
            "cluster_name": self.cluster.name,
            "node_image": self.cluster.image,
            "node_image_kind_release": self.node_image_kind_release,
            "kind_version": self.kind_version,
            "kind_version_line": self.kind_version_line,
            "kubeconfig": str(self.cluster.kubeconfig),
            "origin": self.origin(),  # what the probes' workers record when they attach to this cluster (PARALLEL > 1)
        }

    def create(self, logs_dir: Path) -> None:
        self.cluster.create(logs_dir=logs_dir)

    def wait_ready(self, core: KubeApi, logs_dir: Path) -> list[str]:
        return self.cluster.wait_ready(lambda: wait_nodes_ready(core), logs_dir)

    def prepare(self, nodes: list[str]) -> dict[str, Any]:
        return {"preloaded": self.cluster.preload(self.preload_images, nodes)}

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
        said: dict[str, Any] = {
            "cluster": "kind",
            "cluster_name": self.name,
            "node_image": self.cluster.image,
            "kind_version": self.kind_version,
        }
        if self.host_kubelet:
            said["kubelet_config_added"] = {"settings": self.host_kubelet, "why": self.host_kubelet_why}
        said.update(node_runtime(self.cluster.image, self.base_image, self.node_image_kind_release))
        if self.engine_cgroup is not None:
            said["cgroup"] = f"v{self.engine_cgroup} (the Docker engine's)"
        built = node_image_built_here(self.cluster.image)
        return {**said, "node_image_build": built} if built else said


# What a recording's origin says of a node image built here (harness/nodeimage): the Kubernetes build inside it,
# whose toolchain may be the newest patch of the tag's Go minor rather than upstream's (GO_TOOLCHAIN).
_BUILD_KEYS = (
    "version",
    "commit",
    "toolchain",
    "toolchain_policy",
    "upstream_go",
    "staging_substitutions",
    "module_stand_ins",
)


def node_image_built_here(reference: str, records: Path = tags.NODE_IMAGES) -> dict[str, Any] | None:
    """How a node image made here was built, from its record under .tools/node-images/ (None for a pinned one)."""
    try:
        record = json.loads(tags.node_image_record(reference, records).read_text())
    except (OSError, ValueError):
        return None
    build = record.get("kubernetes_build") or {}
    return {
        "how": record.get("how"),
        "kind_release": record.get("kind_release"),
        "kubernetes_build": {key: build[key] for key in _BUILD_KEYS if key in build},
    }


RUNTIME_KEYS = ("containerd", "runc", "cni", "crictl", "node_components")


def node_runtime(
    reference: str, base_reference: str, kind_release: str | None, records: Path = tags.NODE_IMAGES
) -> dict[str, str]:
    """What ran under the kubelet (containerd, runc, cni, crictl, node_components): an image built here says so in its
    record (or its base's, for a shutdown sibling); a published kindest/node image carries its kind release's
    components, as kind's base image definition names them (harness/kind_components.yaml)."""
    for candidate in (reference, base_reference):
        try:
            record = json.loads(tags.node_image_record(candidate, records).read_text())
        except (OSError, ValueError):
            continue
        return {key: str(record[key]) for key in RUNTIME_KEYS if key in record}
    if not kind_release or not base_reference.startswith("kindest/node:"):
        return {}
    try:
        kind = kind_release_components(kind_release)
    except PartsError:
        return {"node_components": f"kind {kind_release}'s published image (its components were not read)"}
    published = f"as kind {kind_release}'s base image definition names it"
    return {
        "containerd": f"{kind.containerd} ({published})",
        "runc": f"{kind.runc or 'the one bundled with its containerd'} ({published})",
        "cni": f"kindnetd {kind.kindnetd}, CNI plugins {kind.cni_plugins} ({published})",
        "crictl": f"{kind.crictl} ({published})",
        "node_components": f"kind {kind_release}'s published node image ({kind.base_image})",
    }


def kind_facts(run_record: Path) -> dict[str, Any]:
    """What the CLI recorded of the kind cluster it made: its whole origin (node image, kind, runtime, how the image
    was built), or, in a run record written before the origin was kept there, its name, node image and kind version."""
    recorded = json.loads(run_record.read_text()) if run_record.is_file() else {}
    said = {key: recorded[key] for key in ("cluster_name", "node_image", "kind_version") if key in recorded}
    origin = recorded.get("origin")
    return {**said, **origin} if isinstance(origin, dict) else said
