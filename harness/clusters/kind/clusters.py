"""kind as a kind of cluster (harness/clusters/kinds.py): a kind cluster from a node image pinned by digest, run by
the kind release that built it (installed or built when the one on PATH is another), one for each run.

VERSION resolves to its pinned node image (harness/node_images.yaml), or IMAGE names one; the graceful-node-shutdown
probes get a second cluster from the image's shutdown-capable sibling (node_shutdown.py). On the version axis
(axis.py) a release without a pinned image runs on a node image built for it (node_images.py).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from harness.base import inputs, paths
from harness.base.errors import ClusterFailed, PrerequisiteMissing
from harness.base.inputs import BadInput
from harness.base.run import Run
from harness.base.versions import Release
from harness.clusters.kind.cluster import INSTALL_KIND, check_docker, check_prerequisites, list_node_containers
from harness.clusters.kind.config import cluster_config, engine_cgroup_version
from harness.clusters.kind.engine import check_engine
from harness.clusters.kind.images import NodeImage, kind_image
from harness.clusters.kind.install import KindInstallError, ensure_kind
from harness.clusters.kind.leftovers import clean_kind_clusters, installed_kind
from harness.clusters.kind.node_shutdown import announce_shutdown
from harness.clusters.kind.node_shutdown import cluster_config as shutdown_cluster_config
from harness.clusters.kinds import NODE_SHUTDOWN_ROLE, AddOption, ClusterKind, Leftovers, Option, Request, Runnable, Say
from harness.clusters.kubelet_host import host_kubelet_settings
from harness.clusters.lifecycle import ClusterProvider, Note, Reached
from harness.nodeimage import tags
from harness.nodeimage.shutdown import ensure_derived_image

if TYPE_CHECKING:
    from harness.axis.release_axis import ReleaseAxis
    from harness.clusters.kind.provider import KindProvider


class KindClusters(ClusterKind):
    """A new kind cluster for each run, from a pinned node image (or IMAGE)."""

    name = "kind"
    default_parallel = "auto"  # probes share one cluster; those whose timing claims load moves run alone, after
    pytest_option = "--kind-version"
    described = "a new kind cluster"

    def declare_options(self, add: AddOption) -> None:
        add("--kind-version", metavar="VERSION", help="Kubernetes version for a new kind cluster: 1.27 or 1.27.3")
        add("--kind-image", metavar="IMAGE", help="node image to use instead of the pinned one for VERSION")
        add(
            "--kind-nodes",
            action="store_true",
            help="the --kubeconfig cluster is a kind cluster on this machine: read its nodes with docker exec",
        )

    def asked(self, option: Option) -> bool:
        return bool(option("--kind-version") or option("--kind-image"))

    def request(self, option: Option) -> Request:
        version, image = inputs.requested_release(option("--kind-version")), option("--kind-image") or ""
        return Request(version=version, image=image, kind_bin=option("--kind-bin"))

    def resolve(self, request: Request, warn: Say) -> Runnable:
        if request.version and request.image:
            raise BadInput(
                f"VERSION ({request.version}) and IMAGE ({request.image}) both name the node image: give one (IMAGE "
                "runs an image of your own, VERSION the pinned one)"
            )
        image = kind_image(request.version, request.image or None)
        if image.digest is None and not image.reference.startswith(f"{tags.NODE_IMAGE_REPOSITORY}:"):
            warn(
                f"warning: {image.reference} is not pinned by digest; kind asks for @sha256 digests because tags "
                "are rebuilt (kind#3853), so what runs may not be what this name meant before"
            )
        facts = {"image": image.reference, "kind_release": image.kind_release or "", "kind_bin": request.kind_bin}
        return Runnable(self.name, Release(image.kubernetes), facts)

    def check_host(self, runnable: Runnable) -> None:
        check_prerequisites(kind_bin=runnable.facts["kind_bin"])

    def prepare(self, runnable: Runnable, say: Say, warn: Say) -> Runnable:
        """Docker and the kind that built the image, checked (and that kind installed) in seconds."""
        release = runnable.facts["kind_release"]
        kind_bin = runnable.facts["kind_bin"]
        try:
            check_docker()
            check_engine()
        except PrerequisiteMissing as err:
            raise PrerequisiteMissing(f"{err}\n  {kind_status(release)}") from err
        from harness.clusters.kind.node_images import pinned_image_or_equal  # (with the node-image builds)

        if image_equal := pinned_image_or_equal(runnable, say):
            runnable = runnable.with_facts(image=image_equal, kind_release=release)
        if kind_bin == "kind" and release:
            try:
                kind_bin = ensure_kind(release)
            except KindInstallError as err:
                raise PrerequisiteMissing(str(err)) from err
        kind_line = check_prerequisites(kind_bin=kind_bin)
        say(f"node image {runnable.facts['image']} (built by kind {release or 'unknown'}); {kind_line}")
        if release and release not in kind_line:
            warn(
                f"warning: this image was built for kind {release}; kind supports an image only with "
                "the release that built it (best effort otherwise)"
            )
        return runnable.with_facts(kind_bin=kind_bin, kind_line=kind_line, engine_cgroup=str(engine_cgroup_version()))

    def provider(self, runnable: Runnable, run: Run, note: Note) -> ClusterProvider:
        return self._provider(runnable, run, note, role="")

    def shutdown_provider(self, runnable: Runnable, run: Run, note: Note) -> ClusterProvider:
        """A second cluster from the image's shutdown-capable sibling, with a worker whose kubelet has a shutdown
        grace (node_shutdown.py)."""
        return self._provider(runnable, run, note, role=NODE_SHUTDOWN_ROLE)

    def _provider(self, runnable: Runnable, run: Run, note: Note, role: str) -> KindProvider:
        from harness.clusters.kind.provider import KindProvider  # (the run's cluster: only where one is made)

        if runnable.version is None:
            raise ClusterFailed(f"no Kubernetes release for the node image {runnable.facts['image']}")
        image = NodeImage.running(runnable.facts["image"], runnable.version, runnable.facts["kind_release"] or None)
        kind_bin = runnable.facts["kind_bin"]
        kind_line = runnable.facts.get("kind_line") or check_prerequisites(kind_bin=kind_bin)
        suffix = f"-{role}" if role else ""
        name = paths.cluster_name(image.kubernetes.minor, run.run_id, role)
        provider = KindProvider.for_image(image, name, run.path(f"kubeconfig{suffix}"), kind_bin, kind_line)
        cluster = provider.cluster
        engine_cgroup = int(runnable.facts.get("engine_cgroup") or engine_cgroup_version())
        provider.engine_cgroup = engine_cgroup
        host_kubelet = host_kubelet_settings(image.kubernetes, engine_cgroup)
        if host_kubelet:
            provider.host_kubelet = host_kubelet
            provider.host_kubelet_why = f"the Docker engine runs cgroup v{engine_cgroup}"
            note(kubelet_config_added=host_kubelet, kubelet_config_added_why=provider.host_kubelet_why)
        if role == NODE_SHUTDOWN_ROLE:
            try:
                cluster.image, built = ensure_derived_image(image.reference, tags.NODE_IMAGES)
            except ClusterFailed as err:
                note(**provider.facts(), cluster_error=str(err))
                raise
            cluster.config = run.path(f"kind-config{suffix}.yaml")
            cluster.config.write_text(shutdown_cluster_config(image.kubernetes, host_kubelet))
            provider.node_shutdown = announce_shutdown
            note(derived_node_image=cluster.image, derived_image_note=built)
        elif host_kubelet:
            cluster.config = run.path(f"kind-config{suffix}.yaml")
            cluster.config.write_text(cluster_config([{"role": "control-plane"}], host_kubelet))
        return provider

    def attach_options(self, provider: ClusterProvider) -> list[str]:
        return ["--kind-nodes"]

    def attached(self, option: Option) -> bool:
        return bool(option("--kind-nodes"))

    def attach(self, kubeconfig: Path, context: str, option: Option, run_record: Path) -> ClusterProvider:
        """The kind cluster make probe made, whose nodes this host reads, named as its run record says."""
        from harness.clusters.kind.provider import kind_facts

        recorded = {"cluster": self.name, **kind_facts(run_record), "context": context}
        label = "kind (created by make probe)"
        return Reached(
            kubeconfig, context, label, recorded, list_node_containers, goes_with_the_run=True, kind=self.name
        )

    def leftovers(self, request: Request) -> Leftovers:
        kind_bin = shutil.which(request.kind_bin) or installed_kind()
        if kind_bin:
            return clean_kind_clusters(kind_bin)
        return Leftovers(
            ["kind clusters deleted: none"], [f"{request.kind_bin} is not on PATH: no kind clusters to look for"]
        )

    def release_axis(self, args: argparse.Namespace, tools: Path) -> ReleaseAxis:
        from harness.clusters.kind.axis import KindAxis  # (with the node-image builds: the version axis's alone)

        return KindAxis(args)


def kind_status(release: str | None) -> str:
    if shutil.which("kind"):
        return "kind is on PATH"
    if release:
        return f"kind is not on PATH: once Docker works, make probe installs kind {release} (checksum-verified) itself"
    return f"kind is not on PATH: {INSTALL_KIND}"
