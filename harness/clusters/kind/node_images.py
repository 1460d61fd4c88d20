"""A node image for a release kind does not publish, built once (`make node-image`, and a bisection or the radar
on a release without a pinned image): with kind's own release builder, or from Go modules where that cannot work
(harness/nodeimage/)."""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from harness.axis.gates import release_status
from harness.base import paths
from harness.base.errors import NotRunnable, PrerequisiteMissing, host_refusal, one_line, stopping
from harness.base.inputs import BadInput
from harness.base.process import run_command
from harness.base.versions import Release, VersionError
from harness.clusters.kind.cluster import check_docker
from harness.clusters.kind.engine import check_engine
from harness.clusters.kind.images import known_images
from harness.clusters.kind.install import KindInstallError, ensure_kind
from harness.clusters.kinds import Runnable, Say
from harness.gobuild.go import BuildError, check_go
from harness.gobuild.kubernetes import NODE_IMAGE_COMPONENTS, existing_build, resolve_module
from harness.nodeimage import release as node_image_release
from harness.nodeimage import tags
from harness.nodeimage.images import NodeImageError
from harness.nodeimage.kind_parts import PartsError, existing_part, kind_release, normal
from harness.nodeimage.kind_plan import Plan, check_containerd, plan, tag_suffix
from harness.nodeimage.node import build_node_images, built_tag, kind_release_for
from harness.nodeimage.node import host_problems as node_image_host_problems

SOURCES = ("auto", "release", "modules")
PARTS = ("kind", "debian")  # kind's components from Go modules, or the named fallback (Debian's runtime)


def parts_kind_release(release: Release, kind: str = "") -> str:
    """Whose components a node image of `release` gets: KIND when given, else the kind release that built the
    pinned image of that patch (the one make probe would pull), else the kind that runs the suite's images of it."""
    if kind:
        return kind if kind.startswith("v") else f"v{kind}"
    pinned = [i for i in known_images() if i.kubernetes.version == release.version and i.kind_release]
    if pinned:
        return str(max(pinned, key=lambda i: not i.extra).kind_release)
    return kind_release_for(release.kube)


def modules_tag(release: Release, kind: str = "", containerd: str = "") -> str:
    """The tag `make node-image VERSION=<release> [KIND=…] [CONTAINERD=…]` gives an image built from modules with
    kind's components."""
    return built_tag(release.bare, tag_suffix(parts_kind_release(release, kind), containerd))


def runnable_tag(release: Release) -> str:
    """The image of an unpinned release that was built here: with kind's components when such a build is recorded,
    else the tag of kind's release builder or of the fallback (plp-node:vX.Y.Z)."""
    tag = modules_tag(release)
    return tag if tags.node_image_record(tag).is_file() else node_image_release.local_tag(release)


def check_parts(parts: str, containerd: str = "", kind: str = "", source: str = "modules") -> None:
    """Refuse (BadInput) a choice of PARTS, CONTAINERD and KIND that make node-image does not build, in no time."""
    if parts not in PARTS:
        raise BadInput(f"PARTS={parts}: give kind (kind's components from Go modules) or debian (the fallback)")
    if (containerd or kind) and parts != "kind":
        raise BadInput("CONTAINERD and KIND choose kind's components: they do not apply with PARTS=debian")
    if (containerd or kind) and source == "release":
        raise BadInput("CONTAINERD and KIND apply to images built here from Go modules (SOURCE=modules)")


@dataclass(frozen=True)
class ImageRuntime:
    """Whose runtime a node image built here from Go modules carries: make node-image's PARTS, CONTAINERD and KIND,
    as a make matrix entry names them after its version (VERSIONS="1.27.16:debian 1.27.16:containerd=2.3.4")."""

    parts: str = "kind"
    containerd: str = ""
    kind: str = ""

    @property
    def spelled(self) -> str:
        """As an entry names it, one way for each image: 'debian', 'kind', 'kind=v0.25.0,containerd=v2.3.4'."""
        settings = [f"kind={self.kind}"] if self.kind else []
        settings += [f"containerd={normal(self.containerd)}"] if self.containerd else []
        return ",".join(settings) or self.parts

    def check(self, release: Release) -> None:
        """Refuse (BadInput) what make node-image would refuse for this release before asking the Go module proxy:
        a kind release whose components were not read, a CONTAINERD that is not a version or is too old."""
        try:
            if self.parts == "kind":
                kind_release(parts_kind_release(release, self.kind))
                check_containerd(release.kube, self.containerd)
        except PartsError as err:
            raise BadInput(str(err)) from err

    def tag(self, release: Release) -> str:
        """The image make node-image builds for this release with these PARTS, CONTAINERD and KIND."""
        if self.parts == "kind":
            return modules_tag(release, self.kind, self.containerd)
        return node_image_release.local_tag(release)

    def command(self, release: Release) -> list[str]:
        """`make node-image` of this release with these PARTS, CONTAINERD and KIND, as a child harness command: make
        matrix builds ahead in one, which it can stop by its process group (harness/base/process.py
        run_until_stopped) where a build on one of its threads would run to its end."""
        argv = [sys.executable, "-m", "harness", "node-image", "--version", release.bare, "--source", "modules"]
        argv += ["--parts", self.parts]
        argv += ["--containerd", self.containerd] if self.containerd else []
        return argv + (["--kind", self.kind] if self.kind else [])


RUNTIME_WORDS = "debian, kind, containerd=<version>, kind=<release>, or both settings joined by a comma"


def image_runtime(text: str) -> ImageRuntime:
    """A runtime as a make matrix entry names it after its version ('debian', 'kind', 'containerd=2.3.4',
    'kind=v0.25.0,containerd=2.3.4': make node-image's PARTS, KIND and CONTAINERD); BadInput in one line for a word
    it does not know, a setting given twice or a choice make node-image refuses."""
    settings: dict[str, str] = {}
    for word in text.split(","):
        key, equals, value = (part.strip() for part in word.partition("="))
        if not equals and key in PARTS:
            key, value = "parts", key
        if key not in ("parts", "containerd", "kind") or not value:
            raise BadInput(f"{word.strip()!r} is not a runtime: give {RUNTIME_WORDS}")
        if key in settings:
            raise BadInput(f"{key} is named twice")
        settings[key] = value
    containerd, kind = (settings.get(key, "") for key in ("containerd", "kind"))
    chosen = ImageRuntime(settings.get("parts", "kind"), containerd, kind and normal(kind))
    check_parts(chosen.parts, chosen.containerd, chosen.kind)
    return chosen


def plan_parts(release: Release, kind: str = "", containerd: str = "") -> Plan:
    """The components of a node image with kind's components, every refusal said before any build (BadInput)."""
    try:
        return plan(parts_kind_release(release, kind), release.kube, containerd)
    except (PartsError, VersionError) as err:
        raise BadInput(str(err)) from err
    except BuildError as err:
        raise PrerequisiteMissing(str(err)) from err


# What each piece took on a 2-core VM with a warm Go module cache (build.json durations, load 2-25), used until this
# machine has built that piece itself: a Kubernetes release's node-image binaries 312-689 s, containerd 1,399 s,
# runc 1,066 s, crictl 77 s, the CNI plugins 261 s, etcd and CoreDNS 229-828 s, assembling both images ~85 s.
FIRST_GUESS_S = {"kubernetes": 600.0, "containerd": 1400.0, "runc": 1070.0, "crictl": 80.0, "cni_plugins": 260.0}
FIRST_GUESS_S |= {"addons": 700.0, "assembly": 85.0}


def recorded_seconds(pattern: str, tools: Path = paths.TOOLS, key: str = "duration_s") -> float | None:
    """The median `key` of this machine's finished builds whose record matches `pattern` under .tools/."""
    found = []
    for record in tools.glob(pattern):
        try:
            found.append(float(json.loads(record.read_text())[key]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return statistics.median(found) if found else None


def _measured(piece: str, tools: Path) -> float | None:
    """This machine's median time for one piece of a node image build; assembly is two images (node, shutdown)."""
    if piece == "assembly":
        each = recorded_seconds("node-images/plp-node-*.json", tools, key="built_s")
        return None if each is None else 2 * each
    pattern = {"kubernetes": "kubernetes/v*/build.json", "addons": "addons/*/build.json"}.get(piece)
    return recorded_seconds(pattern or f"kind-parts/{piece}-*/build.json", tools)


def equal_build_minutes(release: Release, parts_plan: Plan, tools: Path = paths.TOOLS) -> tuple[int, str]:
    """About how many minutes a node image with kind's components takes here, given what is cached already, and
    what the figure rests on: this machine's own earlier builds of each missing piece, or the first guess."""
    pieces = (
        ["assembly"] if existing_build(release, tools, NODE_IMAGE_COMPONENTS) else ["kubernetes", "addons", "assembly"]
    )
    pieces += [name for name, r in parts_plan.resolved.items() if existing_part(name, r.version, tools) is None]
    seconds, guessed = 0.0, []
    for piece in pieces:
        measured = _measured(piece, tools)
        if measured is None:
            guessed.append(piece)
        seconds += FIRST_GUESS_S[piece] if measured is None else measured
    basis = "this machine's earlier builds" if not guessed else f"a first guess for {', '.join(guessed)}"
    return max(1, round(seconds / 60)), basis


def make_node_image(
    release: Release, source: str, say: Say, parts: str = "kind", containerd: str = "", kind: str = ""
) -> str:
    """Build (or reuse) plp-node:vX.Y.Z from `source` (auto: release when dl.k8s.io answers, else modules); its tag.

    From modules, the image carries kind's components (PARTS=kind: of the kind release `kind`, by default the one
    that built the pinned image; CONTAINERD: another containerd) or the named fallback (PARTS=debian).
    Checks in seconds first (raises BadInput or PrerequisiteMissing), then builds (raises NotRunnable, and
    Interrupted on Ctrl-C, saying that its unfinished work was removed)."""
    check_parts(parts, containerd, kind, source)
    try:
        tag = node_image_release.local_tag(release)
        builder = node_image_release.build_kind_release(i.kind_release for i in known_images() if i.kind_release)
    except VersionError as err:
        raise BadInput(str(err)) from err
    parts_plan: Plan | None = None
    if source == "auto" and (containerd or kind):
        source = "modules"
    if source == "auto":
        source = "release" if node_image_release.release_downloads_reachable() else "modules"
        say(f"building from {source}: dl.k8s.io {'answers' if source == 'release' else 'does not answer'}")
    try:
        check_docker()
        check_engine()
        if source == "modules":
            if problems := node_image_host_problems():
                raise PrerequisiteMissing(host_refusal("building a node image from Go modules needs", problems))
            check_go()
            resolve_module(release)
            parts_plan = plan_parts(release, kind, containerd) if parts == "kind" else None
            if parts_plan is not None:
                tag = built_tag(tag.split(":", 1)[1].lstrip("v"), parts_plan.suffix)
                say(
                    f"components of kind {parts_plan.release.kind} ({parts_plan.release.definition}): "
                    + ", ".join(f"{name} {r.version}" for name, r in parts_plan.resolved.items())
                )
        else:
            kind_bin = ensure_kind(builder)
    except KindInstallError as err:
        raise PrerequisiteMissing(str(err)) from err
    except BuildError as err:
        raise (BadInput if "does not serve" in str(err) else PrerequisiteMissing)(str(err)) from err
    try:
        with stopping(f"building node image {tag}: its unfinished work was removed, nothing of it is reused"):
            if source == "modules":
                return build_node_images(release, say, parts_plan=parts_plan)[0]
            tag, said = node_image_release.build_node_image(release, kind_bin, builder)
            say(said)
            return tag
    except (node_image_release.NodeImageBuildFailed, NodeImageError, BuildError, PartsError) as err:
        raise NotRunnable(str(err)) from err


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
