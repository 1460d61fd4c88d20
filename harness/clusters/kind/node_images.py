"""A node image for a release kind does not publish, built once (`make node-image`, and a bisection or the radar
on a release without a pinned image): with kind's own release builder, or from Go modules where that cannot work
(harness/nodeimage/)."""

from __future__ import annotations

from harness.base.errors import NotRunnable, PrerequisiteMissing, host_refusal, stopping
from harness.base.inputs import BadInput
from harness.base.versions import VersionError
from harness.clusters.kind.cluster import check_docker
from harness.clusters.kind.engine import check_engine
from harness.clusters.kind.install import KindInstallError, ensure_kind
from harness.clusters.kinds import Say
from harness.gobuild.go import BuildError, check_go
from harness.gobuild.kubernetes import resolve_module
from harness.nodeimage import release as node_image_release
from harness.nodeimage.images import NodeImageError
from harness.nodeimage.node import build_node_images
from harness.nodeimage.node import host_problems as node_image_host_problems

SOURCES = ("auto", "release", "modules")


def make_node_image(version: str, source: str, say: Say) -> str:
    """Build (or reuse) plp-node:vX.Y.Z from `source` (auto: release when dl.k8s.io answers, else modules); its tag.

    Checks in seconds first (raises BadInput or PrerequisiteMissing), then builds (raises NotRunnable, and
    Interrupted on Ctrl-C, saying that its unfinished work was removed)."""
    try:
        tag = node_image_release.local_tag(version)
        release = node_image_release.build_kind_release()
    except VersionError as err:
        raise BadInput(str(err)) from err
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
            resolve_module(version)
        else:
            kind_bin = ensure_kind(release)
    except KindInstallError as err:
        raise PrerequisiteMissing(str(err)) from err
    except BuildError as err:
        raise (BadInput if "does not serve" in str(err) else PrerequisiteMissing)(str(err)) from err
    try:
        with stopping(f"building node image {tag}: its unfinished work was removed, nothing of it is reused"):
            if source == "modules":
                return build_node_images(version)[0]
            tag, said = node_image_release.build_node_image(version, kind_bin, release)
            say(said)
            return tag
    except (node_image_release.NodeImageBuildFailed, NodeImageError, BuildError) as err:
        raise NotRunnable(str(err)) from err
