"""The pinned releases: the Kubernetes releases the pinned node images run (harness/node_images.yaml), the same on
every kind of cluster. A minor (VERSION=1.27) names its newest pinned patch. Which image runs a release, and the kind
release that built it, is kind's own (harness/clusters/kind/images.py); this reads only the releases."""

from __future__ import annotations

from collections import defaultdict
from functools import cache
from pathlib import Path

from packaging.version import Version

from harness.base.families import load_yaml
from harness.base.versions import KubeVersion, Release, VersionError

NODE_IMAGES_FILE = Path(__file__).resolve().parents[1] / "node_images.yaml"


@cache
def pinned_releases() -> tuple[KubeVersion, ...]:
    """Every release a pinned node image runs, oldest first, each once ("v1.27.16": as the image's tag spells it)."""
    data = load_yaml(NODE_IMAGES_FILE)  # (parsed once a process, as kind's images read it too)
    found: dict[Version, KubeVersion] = {}
    for release in data["releases"]:
        for entry in release["images"]:
            tag = str(entry["image"]).split("@", 1)[0].rsplit(":", 1)[-1]
            version = KubeVersion.parse(tag)
            found.setdefault(version.version, version)
    return tuple(found[v] for v in sorted(found))


def pinned_minors() -> list[str]:
    """Every Kubernetes minor with a pinned image, oldest first."""
    return list(_pinned_minors())


@cache
def _pinned_minors() -> tuple[str, ...]:
    """pinned_minors, read once (make upgrade checks each end against them, the tests every pair of releases)."""
    return tuple(dict.fromkeys(v.minor for v in pinned_releases()))


def pinned_release(wanted: Release) -> KubeVersion:
    """The release a minor names (its newest pinned patch), or a pinned patch itself; raises VersionError for a
    release with no pinned image."""
    candidates = [
        v
        for v in pinned_releases()
        if (v.version == wanted.version if wanted.names_a_patch else v.minor == wanted.minor)
    ]
    if not candidates:
        raise VersionError(
            f"no pinned node image for Kubernetes {wanted}; known versions: " + "; ".join(known_versions())
        )
    return max(candidates, key=lambda v: v.version)


def pinned_patch(wanted: Release) -> Release:
    """A minor's pinned node image patch (the newest in the table: 1.27 -> 1.27.16), or the patch itself as it was
    read; raises VersionError for a minor without a pinned image."""
    return wanted if wanted.names_a_patch else Release(pinned_release(wanted))


def known_versions() -> list[str]:
    """Known minors and patches, for error messages: '1.19 (1.19.16), 1.26 (1.26.0 ... 1.26.15), ...'."""
    by_minor: dict[str, list[Version]] = defaultdict(list)
    for version in pinned_releases():
        by_minor[version.minor].append(version.version)
    return [f"{minor} ({', '.join(str(v) for v in patches)})" for minor, patches in by_minor.items()]
