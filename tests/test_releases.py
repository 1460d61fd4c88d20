"""The release catalog (harness/releases.json, read from the CHANGELOGs) and what names releases from it."""

from __future__ import annotations

import json

import pytest

from harness.axis.releases import (
    CATALOG_FILE,
    bisect_patches,
    bisect_releases,
    is_published,
    published_releases,
    releases_without_notes,
    sort_key,
)
from harness.base.versions import VersionError


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
    across = bisect_releases("1.30.0", "1.31.0", pre_releases=True)
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
    assert bisect_releases("1.21.14", "1.22.0", pre_releases=True)[-3:] == ["1.22.0-beta.2", "1.22.0-rc.0", "1.22.0"]
    assert bisect_patches("1.28.1", "1.28.6", build=True) == [f"1.28.{n}" for n in range(1, 7)]
    with pytest.raises(VersionError, match=r"1\.31\.0-alpha\.5 is not a published release"):
        bisect_releases("1.31.0-alpha.3", "1.31.0-alpha.5")
    with pytest.raises(VersionError, match="not a published release"):
        bisect_patches("1.37.2", "1.37.9", build=True)
