"""Kubernetes versions: parsing what servers report, and resolving VERSION to a pinned node image."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from harness.base import paths

NODE_IMAGES_FILE = Path(__file__).resolve().parents[1] / "node_images.yaml"

# "v1.27.3", "1.27.3", "v1.27.0-rc.0", "v1.27.3-eks-a5565ad", "v1.28.2+k3s1", "v1.29.1-gke.1589018"
_KUBE_VERSION = re.compile(
    r"^v?(?P<major>\d+)\.(?P<minor>\d+)(?:\.(?P<patch>\d+))?"
    r"(?:-(?P<pre>(?:alpha|beta|rc)\.\d+))?"
    r"(?P<vendor>[-+.].*)?$",
    re.ASCII,
)
# What a user may ask for (VERSION, VERSIONS, GOOD, BAD, --kind-version, --local-version): a release as Kubernetes
# tags spell it, nothing after it (a server's own version may carry a vendor's suffix; a request may not).
_REQUESTED_VERSION = re.compile(r"v?[0-9]+\.[0-9]+(?:\.[0-9]+(?:-(?:alpha|beta|rc)\.[0-9]+)?)?", re.ASCII)
REQUESTED_FORMS = "1.27, 1.27.3, v1.27.3, 1.27.0-rc.0, 1.27.0-alpha.3 or 1.27.0-beta.0"
_NODE_IMAGE = re.compile(
    r"^(?P<repo>(?:[\w.-]+/)*[\w.-]+):(?P<tag>v\d+\.\d+\.\d+[\w.+-]*)(?:@(?P<digest>sha256:[0-9a-f]{64}))?$"
)


# Where `make node-image` records which kind release built each local image (harness/nodeimage/release.py).
LOCAL_BUILDS_DIR = paths.NODE_IMAGES


class VersionError(ValueError):
    """A version or image the suite cannot use; the message says what would work."""


@dataclass(frozen=True, order=True)
class KubeVersion:
    """A Kubernetes release as the suite compares it: vendor suffixes are kept but ignored."""

    version: Version
    text: str

    @classmethod
    def parse(cls, text: str) -> KubeVersion:
        match = _KUBE_VERSION.match(text.strip())
        if not match:
            raise VersionError(f"not a Kubernetes version: {text!r} (expected e.g. 1.27, 1.27.3 or v1.27.3-eks-1)")
        core = f"{match['major']}.{match['minor']}.{match['patch'] or 0}"
        pre = match["pre"]
        return cls(Version(f"{core}-{pre}" if pre else core), text.strip())

    @classmethod
    def requested(cls, text: str) -> KubeVersion:
        """A version a user asked for: a minor or a release exactly as Kubernetes spells it (REQUESTED_FORMS);
        anything else (1.27.x, 1.27.3-rc, full-width digits, a vendor's suffix) is refused, never read loosely."""
        if not _REQUESTED_VERSION.fullmatch(text.strip()):
            raise VersionError(f"not a Kubernetes version: {text!r} (give {REQUESTED_FORMS})")
        return cls.parse(text)

    @property
    def minor(self) -> str:
        return f"{self.version.major}.{self.version.minor}"

    def satisfies(self, specifier: str) -> bool:
        """True when this version is in a range such as "<1.27.0-alpha.3", ">=1.27.0-alpha.3,<1.30", or in
        either of two ranges joined by "||" (">=1.19,<1.22.12 || >=1.23.0-alpha.0,<1.23.9": the patches of
        several minors before a cherry-picked fix)."""
        return any(part.contains(self.version, prereleases=True) for part in version_range(specifier))

    def __str__(self) -> str:
        return self.text


def range_parts(specifier: str) -> tuple[str, ...]:
    """The ranges a specifier joins with "||", as written (">=1.19,<1.22.12 || >=1.23.0-alpha.0,<1.23.9" -> two)."""
    return tuple(part.strip() for part in specifier.split("||"))


@cache
def version_range(specifier: str) -> tuple[SpecifierSet, ...]:
    """Parse a version range written with Kubernetes pre-release spellings (1.27.0-alpha.3): one range, or
    several joined by "||" (a version is in it when it is in any of them)."""
    parts = range_parts(specifier)
    try:
        if not all(parts):
            raise InvalidSpecifier(specifier)
        return tuple(SpecifierSet(part) for part in parts)
    except InvalidSpecifier as err:
        raise VersionError(f"not a version range: {specifier!r}") from err


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
        return cls(reference, KubeVersion.parse(match["tag"]), kind_release, match["digest"], extra)


@cache
def known_images() -> tuple[NodeImage, ...]:
    """Every pinned image in node_images.yaml, newest kind release first."""
    data = yaml.safe_load(NODE_IMAGES_FILE.read_text())
    images = [
        NodeImage.parse(entry["image"], release["kind"], bool(entry.get("extra", False)))
        for release in data["releases"]
        for entry in release["images"]
    ]
    return tuple(sorted(images, key=lambda i: Version(i.kind_release or "0"), reverse=True))


def pinned_minors() -> list[str]:
    """Every Kubernetes minor with a pinned image, oldest first."""
    minors = {i.kubernetes.minor for i in known_images()}
    return sorted(minors, key=lambda m: tuple(int(p) for p in m.split(".")))


def pinned_patch(requested: str) -> str:
    """A minor's pinned node image patch (the newest in the table), or the patch itself."""
    return str(resolve_image(requested).kubernetes.version) if requested.count(".") == 1 else requested


def known_versions() -> list[str]:
    """Known minors and patches, for error messages: '1.19 (1.19.16), 1.26 (1.26.0 ... 1.26.15), ...'."""
    by_minor: dict[str, set[Version]] = {}
    for image in known_images():
        by_minor.setdefault(image.kubernetes.minor, set()).add(image.kubernetes.version)
    return [
        f"{minor} ({', '.join(str(v) for v in sorted(patches))})"
        for minor, patches in sorted(by_minor.items(), key=lambda kv: Version(kv[0]))
    ]


@cache
def oldest_supported_minor() -> str:
    """The oldest Kubernetes minor the suite runs: its oldest pinned node image's (1.19), where the
    expectations start too (every range begins at >=1.19)."""
    oldest = min((i.kubernetes for i in known_images()), key=lambda v: v.version)
    return oldest.minor


def check_supported(version: KubeVersion) -> None:
    """Refuse a release older than the suite supports, before anything is downloaded or built."""
    minor = oldest_supported_minor()
    if version.version < Version(f"{minor}.0a0"):
        raise VersionError(
            f"Kubernetes {version} is older than the suite supports: the oldest is {minor} (its oldest pinned "
            f"node image; no expectation covers earlier releases), so give VERSION={minor} or later"
        )


def resolve_image(version: str | None, image: str | None = None) -> NodeImage:
    """The node image for VERSION (a minor maps to its newest patch) or the explicit IMAGE override.

    Among images of the same patch, the one built by the newest kind release wins, and an image built
    for a release is preferred over one only listed as compatible with it.
    """
    if image:
        node_image = NodeImage.parse(image, kind_release=_kind_release_of(image))
        check_supported(node_image.kubernetes)
        return node_image
    if not version:
        raise VersionError("no VERSION given; known versions: " + "; ".join(known_versions()))
    wanted = KubeVersion.requested(version)
    check_supported(wanted)
    exact_patch = wanted.text.lstrip("v").count(".") >= 2
    candidates = [
        i
        for i in known_images()
        if (i.kubernetes.version == wanted.version if exact_patch else i.kubernetes.minor == wanted.minor)
    ]
    if not candidates:
        raise VersionError(
            f"no pinned node image for Kubernetes {version}; known versions: " + "; ".join(known_versions())
        )
    # known_images() is ordered newest kind release first; max() keeps the first of equal keys.
    return max(candidates, key=lambda i: (i.kubernetes.version, not i.extra))


def _kind_release_of(reference: str) -> str | None:
    """The kind release that built an image: from the table, or for `make node-image`'s builds its record."""
    for known in known_images():
        if known.reference == reference:
            return known.kind_release
    record = paths.node_image_record(reference, LOCAL_BUILDS_DIR)
    return str(yaml.safe_load(record.read_text())["kind_release"]) if record.is_file() else None
