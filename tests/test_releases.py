"""The release catalog (harness/releases.json, read from the CHANGELOGs) and what names releases from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

from harness.axis.releases import (
    CATALOG_FILE,
    bisect_patches,
    bisect_releases,
    is_published,
    published_releases,
    releases_without_notes,
    sort_key,
)
from harness.base.versions import Release, VersionError, release_name


def between(good: str, bad: str, pre_releases: bool = False) -> list[str]:
    """bisect_releases on GOOD and BAD as make bisect's door reads them, by the names records give them."""
    return [str(r) for r in bisect_releases(Release.parse(good), Release.parse(bad), pre_releases)]


def patches(good: str, bad: str, build: bool) -> list[str]:
    """bisect_patches on GOOD and BAD as make bisect's door reads them, by the names records give them."""
    return [str(r) for r in bisect_patches(Release.parse(good), Release.parse(bad), build)]


def test_the_catalog_holds_each_changelog_heading_and_the_tags_without_notes_in_release_order() -> None:
    releases = published_releases()
    data = json.loads(CATALOG_FILE.read_text())
    assert list(releases) == sorted(releases, key=sort_key) and len(set(releases)) == len(releases)
    assert releases[0] == "1.21.0-alpha.0"
    headings = sum(data["changelogs"].values())
    assert len(releases) == headings + len(releases_without_notes())
    assert {f"1.{minor}.0-alpha.0" for minor in range(21, 39)} <= set(releases_without_notes())


@pytest.mark.parametrize(
    ("version", "published"),
    [
        ("1.31.0-alpha.3", True),
        ("v1.31.0-rc.1", True),
        ("1.31.0-alpha.4", False),  # CHANGELOG-1.31: alpha.1-3, beta.0, rc.0, rc.1
        ("1.31.0-alpha.5", False),
        ("1.31.0-beta.1", False),
        ("1.31.0-rc.2", False),
        ("1.22.0-beta.2", True),
        ("v1.22.0-beta.3", False),  # CHANGELOG-1.22: beta.0-2
        ("1.24.2", True),
        ("1.36.0-alpha.3", False),  # CHANGELOG-1.36: alpha.1 and .2 only
        ("not a version", False),
    ],
)
def test_is_published_answers_from_the_changelogs(version: str, published: bool) -> None:
    assert is_published(version) is published


def test_a_bisection_names_only_published_releases() -> None:
    across = between("1.30.0", "1.31.0", pre_releases=True)
    assert across == [
        "1.30.0",
        "1.31.0-alpha.0",
        "1.31.0-alpha.1",
        "1.31.0-alpha.2",
        "1.31.0-alpha.3",
        "1.31.0-beta.0",
        "1.31.0-rc.0",
        "1.31.0-rc.1",
        "1.31.0",
    ]
    assert between("1.21.14", "1.22.0", pre_releases=True)[-3:] == ["1.22.0-beta.2", "1.22.0-rc.0", "1.22.0"]
    assert patches("1.28.1", "1.28.6", build=True) == [f"1.28.{n}" for n in range(1, 7)]
    with pytest.raises(VersionError, match=r"1\.31\.0-alpha\.5 is not a published release"):
        between("1.31.0-alpha.3", "1.31.0-alpha.5")
    with pytest.raises(VersionError, match="not a published release"):
        patches("1.37.2", "1.37.9", build=True)


def test_every_catalogued_release_is_spelled_back_as_the_catalog_spells_it() -> None:
    assert all(release_name(sort_key(release)) == release for release in published_releases())
    assert release_name(Version("1.31")) == "1.31.0" and release_name(Version("1.31.0rc1")) == "1.31.0-rc.1"


def test_the_pre_release_words_are_written_once_in_the_harness() -> None:
    """Release, coverage, upgrade and the gate ledger spell a packaging Version as a release with release_name alone."""
    harness = Path(__file__).resolve().parents[1] / "harness"
    writing = sorted(p.name for p in harness.rglob("*.py") if '"a": "alpha"' in p.read_text())
    assert writing == ["versions.py"]
