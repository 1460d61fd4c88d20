"""The release catalog: every published Kubernetes release from 1.21 on (harness/releases.json).

Read from the CHANGELOGs by tools/release_catalog.py. What the suite names as a release (a bisection's candidates,
the radar's pre-releases, the coverage plan, the docs) is one of these: a version the proxy refuses with 403 is
refused only when it is here; a version not here was never published.
"""

from __future__ import annotations

import json
from functools import cache, lru_cache
from pathlib import Path

from packaging.version import InvalidVersion, Version

from harness.axis.pinned import pinned_releases
from harness.base.versions import KubeVersion, Release, VersionError

CATALOG_FILE = Path(__file__).resolve().parents[1] / "releases.json"
FIRST_MINOR = 21


@lru_cache(maxsize=4096)
def sort_key(release: str) -> Version:
    """Release order: 1.31.0-alpha.1 < 1.31.0-rc.1 < 1.31.0 < 1.31.1 ("v" or not); read once per spelling."""
    return Version(release.strip())


@cache
def _catalog() -> dict[str, object]:
    data: dict[str, object] = json.loads(CATALOG_FILE.read_text())
    return data


@cache
def published_releases() -> tuple[str, ...]:
    """Every published release from 1.21.0-alpha.0 on, oldest first, spelled without the v ("1.31.0-rc.1")."""
    releases = _catalog()["releases"]
    assert isinstance(releases, list)
    return tuple(str(release) for release in releases)


@cache
def _published_set() -> frozenset[Version]:
    return frozenset(sort_key(release) for release in published_releases())


def is_published(version: str | Version) -> bool:
    """Whether the release was published ("v1.31.0-alpha.4" -> False: CHANGELOG-1.31 has alpha.1 to alpha.3)."""
    try:
        parsed = version if isinstance(version, Version) else sort_key(str(version))
    except InvalidVersion:
        return False
    return parsed in _published_set()


def releases_without_notes() -> tuple[str, ...]:
    """Published tags no CHANGELOG heading names: each minor's alpha.0 and the tag the catalog was read at."""
    names = _catalog()["without_notes"]
    assert isinstance(names, list)
    return tuple(str(name) for name in names)


def catalog_minors() -> tuple[str, ...]:
    """The minors the catalog holds, oldest first ("1.21", ...)."""
    return tuple(dict.fromkeys(".".join(release.split(".")[:2]) for release in published_releases()))


def releases_between(low: Version, high: Version) -> tuple[str, ...]:
    """The published releases from low to high, both included, oldest first."""
    return tuple(release for release in published_releases() if low <= sort_key(release) <= high)


def first_catalogued() -> Version:
    """The oldest release the catalog holds (1.21.0-alpha.0): older ones are outside it, not unpublished."""
    return sort_key(published_releases()[0])


# ----- The releases a bisection tries (make bisect), from GOOD to BAD.


def catalogued(release: str) -> Release:
    """A release the suite's own data names (the catalog, the Go module proxy's list), as the typed release the
    version axis hands on: read as Kubernetes tags it, not as a request (no user's text is read)."""
    return Release(KubeVersion.parse(release))


def bisect_patches(good: Release, bad: Release, build: bool) -> list[Release]:
    """Patch releases from GOOD to BAD (both included), one minor: pinned ones, or every patch with `build`."""
    low, high = good.kube, bad.kube
    if low.minor != high.minor:
        raise VersionError(f"bisect runs over the patch releases of one minor; {good} and {bad} are not one minor")
    if not low.version < high.version:
        raise VersionError(f"GOOD ({good}) must be an earlier release than BAD ({bad})")
    if build:
        check_published(low, high)
        return [
            catalogued(release)
            for release in published_releases()
            if not (v := sort_key(release)).is_prerelease and low.version <= v <= high.version
        ]
    pinned = sorted({v.version: v for v in pinned_releases() if low.version <= v.version <= high.version}.items())
    found = [Release(v) for _, v in pinned]
    for end in (low.version, high.version):
        if end not in {v for v, _ in pinned}:
            raise VersionError(f"no pinned node image for {end}: give pinned patch releases, or --build")
    return found


def check_published(*versions: KubeVersion) -> None:
    """Refuse a release from 1.21 on that the release catalog (harness/releases.json) does not hold: it was never
    published (CHANGELOG-1.31 has no 1.31.0-alpha.4), or is newer than the catalog (tools/release_catalog.py)."""
    for version in versions:
        if version.version >= first_catalogued() and not is_published(version.version):
            raise VersionError(
                f"{version.text} is not a published release (the release catalog, read from the CHANGELOGs, does not "
                "hold it; regenerate it with tools/release_catalog.py if it is newer)"
            )


def bisect_releases(good: Release, bad: Release, pre_releases: bool = False) -> list[Release]:
    """The published releases from GOOD to BAD on the line BAD was cut from, oldest first, both ends included.

    Within one minor: its patch releases (and the x.y.0 pre-releases between, when an end is one or when
    asked). Across two minors (GOOD the last known-good of x.y, BAD on x.(y+1)): GOOD, then the pre-releases
    of x.(y+1).0 when asked, then x.(y+1).0 up to BAD; GOOD's later patches are on another branch and are not
    between them. Every release named is in the release catalog: none that was never published. GOOD and BAD
    are the releases the front door read, handed back as they are.
    """
    low, high = good.kube, bad.kube
    if not low.version < high.version:
        raise VersionError(f"GOOD ({good}) must be an earlier release than BAD ({bad})")
    high_minor = high.version.minor
    if low.version.major != high.version.major or high_minor - low.version.minor not in (0, 1):
        raise VersionError(f"bisect runs within one minor or across one minor boundary; not {good} to {bad}")
    check_published(low, high)
    with_pre = pre_releases or bool(low.version.pre or high.version.pre)
    inside = [
        catalogued(release)
        for release in published_releases()
        if (v := sort_key(release)).minor == high_minor
        and v.major == high.version.major
        and low.version < v < high.version
        and (with_pre or not v.is_prerelease)
    ]
    return [good, *inside, bad]
