"""kind's pinned node images (harness/node_images.yaml): each kindest/node image by digest with the kind release
that built it, the image a VERSION or IMAGE names, and which kind release built an image `make node-image` made."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from packaging.version import Version

from harness.axis.pinned import NODE_IMAGES_FILE, known_versions
from harness.base.families import load_yaml, parse_yaml
from harness.base.inputs import BadInput
from harness.base.versions import KubeVersion, Release, VersionError, check_supported
from harness.nodeimage import tags

_NODE_IMAGE = re.compile(
    r"^(?P<repo>(?:[\w.-]+/)*[\w.-]+):(?P<tag>v\d+\.\d+\.\d+[\w.+-]*)(?:@(?P<digest>sha256:[0-9a-f]{64}))?$"
)

# Where `make node-image` records which kind release built each image it made (harness/nodeimage/release.py).
BUILDS_DIR = tags.NODE_IMAGES


@dataclass(frozen=True)
class NodeImage:
    """A kindest/node image pinned by digest, with the kind release that built it."""

    reference: str
    kubernetes: KubeVersion
    kind_release: str | None
    digest: str | None
    extra: bool = False

    @classmethod
    def parse(cls, reference: str, kind_release: str | None = None, extra: bool = False) -> NodeImage:
        match = _NODE_IMAGE.match(reference)
        if not match:
            raise VersionError(
                f"not a node image reference: {reference!r} (expected e.g. kindest/node:v1.27.3@sha256:<64 hex digits>)"
            )
        # (a tag's suffix after the release, as an image built here names its runtime: v1.27.16-kind.v0.25.0, is
        # kept in the text and ignored, as a vendor's is: the Release it makes spells itself 1.27.16)
        return cls(reference, KubeVersion.parse(match["tag"]), kind_release, match["digest"], extra)

    @classmethod
    def running(cls, reference: str, release: Release, kind_release: str | None) -> NodeImage:
        """The image a resolved runnable names, with the release it was resolved to: its tag is not read again."""
        digest = reference.partition("@")[2] or None
        return cls(reference, release.kube, kind_release, digest)


@cache
def known_images() -> tuple[NodeImage, ...]:
    """Every pinned image in node_images.yaml, newest kind release first."""
    data = load_yaml(NODE_IMAGES_FILE)  # (parsed once a process, as the pinned releases read it too)
    images = [
        NodeImage.parse(entry["image"], release["kind"], bool(entry.get("extra", False)))
        for release in data["releases"]
        for entry in release["images"]
    ]
    return tuple(sorted(images, key=lambda i: Version(i.kind_release or "0"), reverse=True))


def resolve_image(release: Release | None, image: str | None = None) -> NodeImage:
    """The node image for VERSION (a minor maps to its newest patch) or the explicit IMAGE override.

    Among images of the same patch, the one built by the newest kind release wins, and an image built
    for a release is preferred over one only listed as compatible with it.
    """
    if image:
        node_image = NodeImage.parse(image, kind_release=_kind_release_of(image))
        check_supported(node_image.kubernetes)
        return node_image
    if release is None:
        raise VersionError("no VERSION given; known versions: " + "; ".join(known_versions()))
    candidates = [
        i
        for i in known_images()
        if (i.kubernetes.version == release.version if release.names_a_patch else i.kubernetes.minor == release.minor)
    ]
    if not candidates:
        raise VersionError(
            f"no pinned node image for Kubernetes {release}; known versions: " + "; ".join(known_versions())
        )
    # known_images() is ordered newest kind release first; max() keeps the first of equal keys.
    return max(candidates, key=lambda i: (i.kubernetes.version, not i.extra))


def _kind_release_of(reference: str) -> str | None:
    """The kind release that built an image: from the table, or for `make node-image`'s builds its record."""
    for known in known_images():
        if known.reference == reference:
            return known.kind_release
    record = tags.node_image_record(reference, BUILDS_DIR)
    return str(parse_yaml(record.read_text())["kind_release"]) if record.is_file() else None


def kind_image(release: Release | None, image: str | None) -> NodeImage:
    """The kind node image for a release (its pinned image) or an image reference; BadInput for one it cannot be."""
    try:
        return resolve_image(release, image)
    except VersionError as err:
        raise BadInput(str(err)) from err
