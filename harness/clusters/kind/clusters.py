"""kind as a kind of cluster (harness/clusters/kinds.py): a kind cluster from a node image pinned by digest, run by
the kind release that built it (installed or built when the one on PATH is another), one for each run.

VERSION resolves to its pinned node image (harness/node_images.yaml), or IMAGE names one; the graceful-node-shutdown
probes get a second cluster from the image's shutdown-capable sibling (node_shutdown.py). On the version axis a
release without a pinned image runs on a node image built for it (node_images.py).
"""

from __future__ import annotations

import argparse
import shutil
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from packaging.version import Version

from harness.axis.gates import release_status
from harness.axis.pinned import pinned_minors, pinned_patch
from harness.axis.release_axis import PlannedVersion, Readied, ReleaseAxis, plan_versions
from harness.axis.releases import bisect_patches, check_published
from harness.base import inputs, paths
from harness.base.errors import ClusterFailed, NotRunnable, PrerequisiteMissing, one_line
from harness.base.inputs import BadInput
from harness.base.process import StoppedChild, run_command, run_until_stopped
from harness.base.run import Run
from harness.base.versions import Release, VersionError
from harness.clusters.kind.cluster import INSTALL_KIND, check_docker, check_prerequisites, list_node_containers
from harness.clusters.kind.config import cluster_config, engine_cgroup_version
from harness.clusters.kind.engine import check_engine
from harness.clusters.kind.images import NodeImage, kind_image, known_images
from harness.clusters.kind.install import KindInstallError, ensure_kind
from harness.clusters.kind.leftovers import clean_kind_clusters, installed_kind
from harness.clusters.kind.node_images import (
    ImageRuntime,
    equal_build_minutes,
    image_runtime,
    make_node_image,
    modules_tag,
    plan_parts,
    runnable_tag,
)
from harness.clusters.kind.node_shutdown import announce_shutdown
from harness.clusters.kind.node_shutdown import cluster_config as shutdown_cluster_config
from harness.clusters.kind.provider import KindProvider, kind_facts
from harness.clusters.kinds import NODE_SHUTDOWN_ROLE, AddOption, ClusterKind, Leftovers, Option, Request, Runnable, Say
from harness.clusters.kubelet_host import host_kubelet_settings
from harness.clusters.lifecycle import ClusterProvider, Note, Reached
from harness.nodeimage import tags
from harness.nodeimage.node import discard_unfinished
from harness.nodeimage.shutdown import ensure_derived_image


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
        return KindAxis(args)


PULL_TIMEOUT_S = 600


def pinned_image_or_equal(runnable: Runnable, say: Say) -> str:
    """'' when the pinned kindest/node image is here or pulls (checked once, before any cluster); else the tag of
    its equal built here with kind's components from Go modules (said in one line, with about how long), or
    PrerequisiteMissing in one line saying why neither can be had."""
    reference, release, kubernetes = runnable.facts["image"], runnable.facts["kind_release"], runnable.version
    if not reference.startswith("kindest/node:") or not release or kubernetes is None:
        return ""
    if run_command(["docker", "image", "inspect", reference], 60).returncode == 0:
        return ""
    pulled = run_command(["docker", "pull", reference], PULL_TIMEOUT_S)
    if pulled.returncode == 0:
        return ""
    why = one_line(pulled.output.strip().splitlines()[-1] if pulled.output.strip() else "no answer")
    refusal = release_status(kubernetes.kube)
    if refusal.startswith("refused: "):
        raise PrerequisiteMissing(
            f"{reference.split('@', 1)[0]} cannot be pulled ({why}), and its equal cannot be built here: the Go "
            f"module proxy refuses k8s.io/kubernetes@{kubernetes.tag} ({refusal.removeprefix('refused: ')})"
            + buildable_neighbour_hint(kubernetes)
        )
    try:
        parts_plan = plan_parts(kubernetes, release)
        equal = modules_tag(kubernetes)
        if (
            tags.node_image_record(equal).is_file()
            and run_command(["docker", "image", "inspect", equal], 60).returncode == 0
        ):
            say(
                f"{reference.split('@', 1)[0]} cannot be pulled ({why}): running its equal with kind {release}'s "
                f"components, {equal}, built here earlier"
            )
        else:
            minutes, basis = equal_build_minutes(kubernetes, parts_plan)
            say(
                f"{reference.split('@', 1)[0]} cannot be pulled ({why}): building its equal with kind {release}'s "
                f"components from Go modules (about {minutes} min, from {basis}), then running it"
            )
        return make_node_image(kubernetes, "modules", say, parts="kind", kind=release)
    except (BadInput, PrerequisiteMissing, NotRunnable) as err:
        raise PrerequisiteMissing(
            f"{reference.split('@', 1)[0]} cannot be pulled ({why}), and its equal cannot be built here: "
            f"{one_line(str(err))}"
        ) from err


def buildable_neighbour_hint(kubernetes: Release) -> str:
    """What to run instead of a pinned image whose Kubernetes module the proxy refuses: the newest other pinned
    patch of the same minor whose module it serves (the release ledger), or '' when there is none."""
    neighbours = [
        image
        for image in known_images()
        if image.kubernetes.minor == kubernetes.minor
        and image.kubernetes.version != kubernetes.version
        and release_status(image.kubernetes) == "read"
    ]
    if not neighbours:
        return ""
    image = max(neighbours, key=lambda i: (i.kubernetes.version, Version(i.kind_release or "0")))
    return (
        f"; make probe VERSION={image.kubernetes.version} runs {image.reference.split('@', 1)[0]} (kind "
        f"{image.kind_release}), whose equal builds here"
    )


def kind_status(release: str | None) -> str:
    if shutil.which("kind"):
        return "kind is on PATH"
    if release:
        return f"kind is not on PATH: once Docker works, make probe installs kind {release} (checksum-verified) itself"
    return f"kind is not on PATH: {INSTALL_KIND}"


class KindAxis(ReleaseAxis):
    """Releases on kind: each runs its pinned node image; one without (make bisect BUILD=1, the radar) runs a node
    image built for it first (SOURCE: release, modules, or auto)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.source = str(getattr(args, "source", "auto") or "auto")
        self.pinned = {str(i.kubernetes.version) for i in known_images()}

    def default_versions(self) -> list[str]:
        return pinned_minors()

    def matrix_refusal(self) -> str | None:
        for given, variable in ((self.args.parallel, "PARALLEL"), (self.args.probe, "PROBE")):
            if given not in (None, ""):
                return (
                    f"{variable} applies to make matrix CLUSTER=local; a kind matrix runs every probe of each version "
                    "as make probe VERSION=... does"
                )
        return None

    def releases(self, requested: list[Release]) -> list[Release]:
        return [Release(kind_image(version, None).kubernetes) for version in requested]

    def plan(self, requested: list[Release]) -> list[PlannedVersion]:
        return plan_versions(requested, served=lambda release: True)

    def check_host(self, one_at_a_time: bool) -> None:
        """Every release's cluster needs Docker: said once, before any release starts."""
        try:
            check_docker()
            check_engine()
        except PrerequisiteMissing as err:
            raise PrerequisiteMissing(f"{one_line(str(err))} (every version of the matrix needs it)") from err

    def candidates(self, good: Release, bad: Release) -> list[Release]:
        return bisect_patches(good, bad, bool(getattr(self.args, "build", False)))

    def bisect_refusal(self) -> str | None:
        if self.args.claim or self.args.pre_releases or self.args.runs > 1:
            return "CLAIM, PRE=1 and REPEAT bisect releases built here: give CLUSTER=local with them"
        return None

    def ready(self, release: Release, stop: threading.Event | None = None, quiet: bool = False) -> Readied:
        if self.is_ready(release):
            return Readied(release)  # kind runs its pinned image as it is
        try:
            make_node_image(release, self.source, print)
        except (BadInput, PrerequisiteMissing, NotRunnable, VersionError) as err:
            said = f"could not be built as a node image (SOURCE={self.source}): {err}"
            return Readied(release, why_not=said, error=str(err))
        return Readied(release)

    def is_ready(self, release: Release) -> bool:
        return release.bare in self.pinned

    def probe_args(self, release: Release) -> list[str]:
        return ["--version", release.bare] if release.bare in self.pinned else ["--image", runnable_tag(release)]

    def ran_on(self, run_record: Mapping[str, Any]) -> dict[str, Any]:
        return {key: run_record.get(key) for key in ("node_image", "kind_version")}

    def newest_baseline(self, newest_release: Release) -> Release:
        return Release(max((i.kubernetes for i in known_images()), key=lambda v: v.version))

    def on_runtime(self, runtime: str) -> ReleaseAxis | None:
        return KindRuntimeAxis(self.args, image_runtime(runtime)) if runtime else self


# How long a stopped node image build is given to remove its unfinished work (unmount and delete a root file system,
# remove a staging image) before its process group is killed.
BUILD_CLEANUP_S = 60.0


class KindRuntimeAxis(KindAxis):
    """Releases on kind on another runtime than the pinned image's, as a make matrix entry names it after its version
    (VERSIONS="1.27.16:debian 1.27.16:containerd=2.3.4"): each runs the node image make node-image builds with those
    PARTS, CONTAINERD and KIND (node_images.py ImageRuntime), built from Go modules when missing."""

    builds_here = True  # node images from Go modules: Go, and the matrix builds the next one ahead

    def __init__(self, args: argparse.Namespace, chosen: ImageRuntime) -> None:
        super().__init__(args)
        self.chosen = chosen
        self.runtime = chosen.spelled

    def releases(self, requested: list[Release]) -> list[Release]:
        """A minor's pinned patch or a published release, and what make node-image refuses of it in seconds."""
        found = []
        for version in requested:
            try:
                release = pinned_patch(version)
                check_published(release.kube)
            except VersionError as err:
                raise BadInput(str(err)) from err
            self.chosen.check(release)
            found.append(release)
        return found

    def plan(self, requested: list[Release]) -> list[PlannedVersion]:
        """Each release as it is; kind's components planned now, so that a CONTAINERD the Go module proxy refuses is
        said before any build (BadInput; PrerequisiteMissing without Go)."""
        planned = []
        for version, release in zip(requested, self.releases(requested), strict=True):
            if self.chosen.parts == "kind" and not self.is_ready(release):
                plan_parts(release, self.chosen.kind, self.chosen.containerd)
            planned.append(PlannedVersion(version, release, runtime=self.runtime))
        return planned

    def ready(self, release: Release, stop: threading.Event | None = None, quiet: bool = False) -> Readied:
        if self.is_ready(release):
            return Readied(release, {"reused": True})
        if stop is not None:  # ahead, on a thread of make matrix
            return self.build_in_a_child(release, stop)
        chosen = self.chosen
        try:
            make_node_image(
                release,
                "modules",
                (lambda line: None) if quiet else print,
                parts=chosen.parts,
                containerd=chosen.containerd,
                kind=chosen.kind,
            )
        except (BadInput, PrerequisiteMissing, NotRunnable, VersionError) as err:
            said = f"could not be built as a node image ({self.runtime}): {err}"
            return Readied(release, why_not=said, error=str(err))
        return Readied(release)

    def build_in_a_child(self, release: Release, stop: threading.Event) -> Readied:
        """The node image built by `make node-image` in a child process, stopped once `stop` is set: on a thread no
        Ctrl-C reaches, a build in this process (Go, debootstrap, docker) would run to its end before the matrix could
        exit. Stopped, it removes its unfinished work, as make node-image does on Ctrl-C; what a build killed for
        not ending in time left is removed here. Its output goes to a log beside the image's record."""
        tag = self.chosen.tag(release)
        if stop.is_set():
            return Readied(release, why_not=f"{tag} was not built: the matrix was stopped", error="stopped")
        log = tags.node_image_record(tag).with_suffix(".build.log")
        log.parent.mkdir(parents=True, exist_ok=True)
        try:
            with log.open("w") as out:
                code = run_until_stopped(self.chosen.command(release), out, stop, BUILD_CLEANUP_S)
        except StoppedChild as stopped:
            if not stopped.cleaned:
                discard_unfinished(tag)
            said = f"building {tag} was stopped with the matrix; its unfinished work was removed"
            return Readied(release, why_not=said, error=said)
        if code == 0 and self.is_ready(release):
            return Readied(release)
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
        said = f"could not be built as a node image ({self.runtime}): {lines[-1] if lines else f'exit {code}'}"
        return Readied(release, why_not=f"{said} (log: {log})", error=f"{said} (log: {log})")

    def is_ready(self, release: Release) -> bool:
        return tags.node_image_record(self.chosen.tag(release)).is_file()

    def probe_args(self, release: Release) -> list[str]:
        return ["--image", self.chosen.tag(release)]

    def runs_as(self, release: Release) -> str:
        """The node image it runs: two spellings of one runtime ('kind' and 'kind=v0.25.0' where v0.25.0 built the
        pinned image) name one image, which would run twice."""
        return f"the node image {self.chosen.tag(release)}"
