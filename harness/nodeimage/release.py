"""Node images for Kubernetes releases kind does not publish (e.g. v1.27.0-rc.0, where k/k#117018 lived).

`kind build node-image --type release vX.Y.Z --image TAG` (kind >= v0.24; v0.26 fixed release builds of
Kubernetes < 1.31, as its release notes say) downloads the release's server tarball from
dl.k8s.io and builds a node image locally. The suite wraps it: the newest kind release in the image table
builds `plp-node:vX.Y.Z`, once (an existing image of that tag is reused), and remembers in
`.tools/node-images/<tag>.json` which kind release built it, so `make probe IMAGE=plp-node:vX.Y.Z` uses
the same kind to run it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from harness.base.process import Runner, run_command
from harness.base.versions import Release, VersionError
from harness.nodeimage import tags

BUILDS_DIR = tags.NODE_IMAGES  # which kind release built each image made here
# --type release exists from kind v0.24.0; v0.26.0 fixed release builds of Kubernetes < 1.31.
MINIMUM_KIND_FOR_RELEASE_BUILDS = (0, 26, 0)


class NodeImageBuildFailed(RuntimeError):
    """kind could not build the node image; the message carries its output."""


def build_kind_release(kind_releases: Iterable[str]) -> str:
    """The kind release that builds images: the newest of those that built the pinned images (at least v0.26.0)."""
    releases = sorted(set(kind_releases), key=_release_key)
    newest = releases[-1]
    if _release_key(newest) < MINIMUM_KIND_FOR_RELEASE_BUILDS:
        raise NodeImageBuildFailed(f"kind {newest} cannot build release node images (needs v0.26.0 or newer)")
    return newest


def local_tag(release: Release) -> str:
    """plp-node:v1.27.0-rc.0 for 1.27.0-rc.0 (a whole release, patch and pre-release included; VersionError for a
    minor alone)."""
    if not release.names_a_patch:
        raise VersionError(f"give a full release version to build (e.g. 1.27.0-rc.0), not {release.kube.text!r}")
    return tags.node_image_tag(release.tag)


def built_by(tag: str, builds_dir: Path = BUILDS_DIR) -> str | None:
    """The kind release that built a local image of the suite, if the suite built it."""
    record = tags.node_image_record(tag, builds_dir)
    return str(json.loads(record.read_text())["kind_release"]) if record.is_file() else None


def build_node_image(
    release: Release, kind_bin: str, kind_release: str, runner: Runner = run_command, builds_dir: Path = BUILDS_DIR
) -> tuple[str, str]:
    """Build (or reuse) the node image for a Kubernetes release: (tag, what was done)."""
    tag = local_tag(release)
    if runner(["docker", "image", "inspect", tag], 60).returncode == 0:
        return tag, f"{tag} exists already (built by kind {built_by(tag, builds_dir) or 'unknown'}); reused"
    built = runner([kind_bin, "build", "node-image", "--type", "release", release.tag, "--image", tag], 3600)
    if built.returncode != 0:
        raise NodeImageBuildFailed(
            f"kind could not build {tag}:\n{built.output}\n"
            "hint: it downloads the release's kubernetes-server tarball from dl.k8s.io (network needed), "
            "and the version must be a published release tag"
        )
    builds_dir.mkdir(parents=True, exist_ok=True)
    tags.node_image_record(tag, builds_dir).write_text(
        json.dumps({"image": tag, "kubernetes": release.tag, "kind_release": kind_release}, indent=1) + "\n"
    )
    return tag, f"built {tag} with kind {kind_release}"


def release_downloads_reachable(url: str = "https://dl.k8s.io/", timeout: float = 5.0) -> bool:
    """Whether kind's release builder could download a server tarball here (any HTTP answer counts)."""
    import urllib.error  # here: with ssl, a few hundredths of a second in every pytest of the suite
    import urllib.request

    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout).close()
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.lstrip("v").split(".")[:3])
