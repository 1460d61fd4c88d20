"""Every claim has exactly one expectation on every published release the suite supports.

The release catalog (harness/releases.json) holds every published release from 1.21 on, pre-releases included. A
release no row covers is one make upgrade answers 'no expectation covers it' for and a probe on it cannot be
judged; two rows would make the answer depend on their order. A claim that does not apply on a release says so
with a row of its own (value null, a note saying why it is not observable there), so it is covered too.
"""

from __future__ import annotations

import pytest
from packaging.version import Version

from harness.axis.releases import published_releases
from harness.base import families
from harness.base.versions import OLDEST_SUPPORTED_MINOR, KubeVersion
from harness.core.expectations import Claim, load_claims

SUPPORTED = [
    KubeVersion.parse(release)
    for release in published_releases()
    if KubeVersion.parse(release).version >= Version(f"{OLDEST_SUPPORTED_MINOR}.0a0")
]
CLAIMS = [(family.name, claim) for family in families.families() for claim in load_claims(family.name).values()]


def test_the_catalog_reaches_back_to_the_first_minor_and_holds_pre_releases() -> None:
    """What the test below walks: hundreds of releases from 1.21, pre-releases among them (not a vacuous walk)."""
    assert len(SUPPORTED) > 300
    assert SUPPORTED[0].minor == "1.21"
    assert any(version.version.is_prerelease for version in SUPPORTED)
    assert len(CLAIMS) > 100


def test_claim_ids_are_the_suites_own() -> None:
    """The report, make upgrade and CLAIM= know a claim by its id alone: two families' claims never share one."""
    families_of: dict[str, list[str]] = {}
    for family, claim in CLAIMS:
        families_of.setdefault(claim.id, []).append(family)
    assert {claim: found for claim, found in families_of.items() if len(found) > 1} == {}


@pytest.mark.parametrize(("family", "claim"), CLAIMS, ids=[f"{family}:{claim.id}" for family, claim in CLAIMS])
def test_one_row_covers_every_published_release(family: str, claim: Claim) -> None:
    uncovered, doubly = [], []
    for version in SUPPORTED:
        rows = [row.versions for row in claim.expectations if version.satisfies(row.versions)]
        if not rows:
            uncovered.append(str(version))
        elif len(rows) > 1:
            doubly.append(f"{version} ({' and '.join(rows)})")
    assert not uncovered, f"{family} {claim.id}: no expectation covers {', '.join(uncovered)}"
    assert not doubly, f"{family} {claim.id}: more than one expectation covers {', '.join(doubly)}"
