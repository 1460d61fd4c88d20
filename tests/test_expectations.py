"""Expectations as data (probes/<family>/expectations.yaml) and the evaluator's verdicts and messages."""

from __future__ import annotations

import pytest

from harness.expectations import (
    FAIL,
    NOT_OBSERVABLE,
    PASS,
    UNDECIDED,
    Claim,
    Expectation,
    ExpectationError,
    evaluate,
    load_claims,
    not_observable,
)
from harness.families import families
from harness.versions import KubeVersion, known_images

FAMILIES = [f.name for f in families()]
# Every version the image table knows, plus the pre-releases around the 1.27 boundary.
VERSIONS = [
    *sorted({str(i.kubernetes.version) for i in known_images()}),
    "1.27.0-alpha.3",
    "1.27.0-beta.0",
    "1.27.0-rc.0",
]

PHASES = Claim(
    id="phases",
    claim="deleted pod's phase",
    observable="phases after delete",
    document="doc",
    expectations=(
        Expectation("<1.27.0-rc.0", value=["Running"], sources=("k/k#115331",)),
        Expectation(">=1.27.0-rc.0", value=["Running", "Failed"], sources=("k/k#115331",)),
    ),
)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_claim_has_exactly_one_expectation_for_every_known_version(family: str) -> None:
    claims = load_claims(family)
    assert claims
    for claim in claims.values():
        for version in VERSIONS:
            claim.expectation_for(KubeVersion.parse(version))  # raises on a gap or an overlap


@pytest.mark.parametrize("family", FAMILIES)
def test_every_expectation_cites_a_source_and_the_claim_a_document(family: str) -> None:
    for claim in load_claims(family).values():
        assert claim.document.startswith("shared/seeds/"), claim.id
        for expectation in claim.expectations:
            assert expectation.sources, claim.id


def test_a_matching_observation_passes() -> None:
    verdict = evaluate(PHASES, KubeVersion.parse("v1.27.3"), ["Running", "Failed"])
    assert verdict.status == PASS
    assert verdict.expected is not None and verdict.expected.versions == ">=1.27.0-rc.0"


def test_a_mismatch_names_the_version_range_the_cluster_behaved_like() -> None:
    verdict = evaluate(PHASES, KubeVersion.parse("v1.27.3"), ["Running"])
    assert verdict.status == FAIL
    assert (
        "phases after delete was ['Running'], expected ['Running', 'Failed'] on Kubernetes v1.27.3" in verdict.message
    )
    assert "the v1.27.3 cluster behaved like <1.27.0-rc.0" in verdict.message


def test_a_mismatch_like_no_known_version_says_only_what_was_expected() -> None:
    verdict = evaluate(PHASES, KubeVersion.parse("v1.26.6"), ["Running", "Succeeded"])
    assert verdict.status == FAIL
    assert "behaved like" not in verdict.message


def test_ranges_of_numbers_are_inclusive_and_refuse_non_numbers() -> None:
    delay = Expectation(">=1.0", between=(-1.0, 3.0), sources=("s",))
    assert delay.matches(-1.0) and delay.matches(3) and not delay.matches(3.01)
    assert not delay.matches(True) and not delay.matches("2")


def test_not_observable_is_never_a_pass() -> None:
    verdict = not_observable(PHASES, KubeVersion.parse("v1.27.3"), "no node access")
    assert verdict.status == NOT_OBSERVABLE
    assert verdict.observed is None


def test_a_gap_in_the_ranges_is_an_error_naming_the_claim_and_version() -> None:
    gappy = Claim("gappy", "c", "o", "d", (Expectation("<1.26", value=1, sources=("s",)),))
    with pytest.raises(ExpectationError, match=r"claim gappy: no expectation for Kubernetes v1\.27\.3"):
        gappy.expectation_for(KubeVersion.parse("v1.27.3"))


def test_overlapping_ranges_are_refused_naming_the_claim_and_version_never_one_picked() -> None:
    both = (Expectation(">=1.26", value=1, sources=("s",)), Expectation("<1.28", value=2, sources=("s",)))
    overlapping = Claim("overlapping", "c", "o", "d", both)
    with pytest.raises(
        ExpectationError, match=r"claim overlapping: more than one expectation for Kubernetes v1\.27\.3"
    ):
        overlapping.expectation_for(KubeVersion.parse("v1.27.3"))
    with pytest.raises(ExpectationError, match="more than one expectation"):
        evaluate(overlapping, KubeVersion.parse("v1.27.3"), 1)  # not a pass on either reading
    assert overlapping.expectation_for(KubeVersion.parse("v1.28.0")).value == 1  # outside the overlap: fine


def test_the_expectation_files_are_found() -> None:
    assert "phase_after_deletion" in FAMILIES


def test_a_mismatch_after_a_watch_gap_is_undecided_and_a_match_keeps_the_gap_on_record() -> None:
    undecided = evaluate(PHASES, KubeVersion.parse("v1.27.3"), ["Running"], gaps=["watch expired (410 Gone)"])
    assert undecided.status == UNDECIDED
    assert "undecided: a watch gap covered the transition (watch expired (410 Gone))" in undecided.message
    passed = evaluate(PHASES, KubeVersion.parse("v1.27.3"), ["Running", "Failed"], gaps=["connection lost"])
    assert passed.status == PASS and passed.detail == {"watch_gaps": ["connection lost"]}


def test_a_gap_hides_states_but_cannot_add_or_reorder_them() -> None:
    """Only a mismatch the hidden states could explain is undecided; the rest fail as without the gap."""
    v1_27, gap = KubeVersion.parse("v1.27.3"), ["watch expired (410 Gone)"]
    assert evaluate(PHASES, v1_27, ["Running"], gaps=gap).status == UNDECIDED  # Failed may have been hidden
    assert evaluate(PHASES, v1_27, [], gaps=gap).status == UNDECIDED
    contradicted = evaluate(PHASES, v1_27, ["Running", "Succeeded"], gaps=gap)  # Succeeded is never expected
    assert contradicted.status == FAIL
    assert "cannot explain this: a gap hides states, it does not add or reorder them" in contradicted.message
    assert contradicted.detail == {"watch_gaps": gap}  # kept, so the report re-evaluates it the same way
    assert evaluate(PHASES, v1_27, ["Failed", "Running"], gaps=gap).status == FAIL  # out of order
    one_value = Claim("phase", "c", "the phase", "d", (Expectation(">=1.0", value="Failed", sources=("s",)),))
    assert evaluate(one_value, v1_27, "Running", gaps=gap).status == UNDECIDED  # seen before the hidden change
