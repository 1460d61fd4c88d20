"""The release catalog: every published Kubernetes release from 1.21 on (harness/releases.json).

Read from the CHANGELOGs by tools/release_catalog.py. What the suite names as a release (a bisection's candidates,
the radar's pre-releases, the coverage plan, the docs) is one of these: a version the proxy refuses with 403 is
refused only when it is here; a version not here was never published.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from packaging.version import InvalidVersion, Version

CATALOG_FILE = Path(__file__).resolve().parents[1] / "releases.json"
FIRST_MINOR = 21


def sort_key(release: str) -> Version:
    """Release order: 1.31.0-alpha.1 < 1.31.0-rc.1 < 1.31.0 < 1.31.1 ("v" or not)."""
    return Version(release.strip())


def release_name(version: Version) -> str:
    """A release as the catalog spells it: Version("1.31.0a1") -> "1.31.0-alpha.1"."""
    core = ".".join(str(part) for part in version.release)
    if version.pre is None:
        return core
    word = {"a": "alpha", "b": "beta", "rc": "rc"}[version.pre[0]]
    return f"{core}-{word}.{version.pre[1]}"


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
