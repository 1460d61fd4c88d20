"""The version axis on kind (make matrix, bisect and radar, harness/axis/release_axis.py): each release runs its
pinned node image; one without, or on another runtime, runs a node image built for it first (node_images.py). Apart
from clusters.py, which has it through KindClusters.release_axis: a probe run, a collection or a refusal does not
import the node-image builds."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Mapping
from typing import Any

from harness.axis.pinned import pinned_minors, pinned_patch
from harness.axis.release_axis import PlannedVersion, Readied, ReleaseAxis, plan_versions
from harness.axis.releases import bisect_patches, check_published
from harness.base.errors import NotRunnable, PrerequisiteMissing, one_line
from harness.base.inputs import BadInput
from harness.base.process import StoppedChild, run_until_stopped
from harness.base.versions import Release, VersionError
from harness.clusters.kind.cluster import check_docker
from harness.clusters.kind.engine import check_engine
from harness.clusters.kind.images import kind_image, known_images
from harness.clusters.kind.node_images import ImageRuntime, image_runtime, make_node_image, plan_parts, runnable_tag
from harness.nodeimage import tags
from harness.nodeimage.node import discard_unfinished


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
