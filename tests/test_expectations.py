"""Expectations as data (probes/<family>/expectations.yaml) and the evaluator's verdicts and messages."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness.base.families import documents, families
from harness.base.versions import KubeVersion
from harness.clusters.kind.images import known_images
from harness.core.basis import Basis, Doubt, Gap, Step
from harness.core.expectations import (
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
        assert claim.document in documents(), claim.id
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


@dataclass
class Watch:
    """Stands in for an Observer as a Basis reads it: its kind and its gaps."""

    kind: str = "Pod"
    gaps: list[Gap] = field(default_factory=list)


def gap(since: float, until: float, changed: tuple[str, ...] = ("u",), why: str = "watch expired (410 Gone)") -> Gap:
    return Gap(since, None, until, why, frozenset(changed))


def phases_seen(states: list[tuple[float, str]], *gaps: Gap, since: float = 2.0, until: float = 30.0) -> Doubt:
    """The doubt of the phases of pod u from `since` on, seen at these instants, with these gaps on its watch."""
    return Basis.sequence(Watch(gaps=list(gaps)), "u", since, until, [Step(t, v) for t, v in states]).doubt()


V1_27 = KubeVersion.parse("v1.27.3")


def test_a_gap_explains_a_sequence_only_where_it_lies() -> None:
    """The 1.28 finalizer pod that never reaches Failed, watched whole from well before its container stopped until
    long after: a re-list in the first half second after the delete, still Running, cannot hide a Failed that every
    state seen after it contradicts. A gap after the last state seen (the pod gone in a re-list) can."""
    early = phases_seen([(1.0, "Running"), (2.1, "Running"), (2.5, "Running"), (20.0, "Running")], gap(2.1, 2.5))
    failed = evaluate(PHASES, V1_27, ["Running"], early)
    assert failed.status == FAIL, failed.message
    assert "cannot explain this: a gap hides states where it lies" in failed.message
    assert failed.detail["watch_gaps"] == ["watch expired (410 Gone)"]  # kept on record, only not blamed
    at_the_end = phases_seen([(1.0, "Running"), (2.1, "Running")], gap(2.1, 9.0))  # gone: learned from a re-list
    undecided = evaluate(PHASES, V1_27, ["Running"], at_the_end)
    assert undecided.status == UNDECIDED
    assert "undecided: a watch gap covered the transition (watch expired (410 Gone))" in undecided.message


def test_a_gap_where_a_sequence_could_differ_leaves_even_a_match_undecided() -> None:
    """Running, then (watch down) Failed in the re-list: it matches, but the gap could have hidden any state
    between; a match no hidden state could spoil (the gap re-listed the pod unchanged, or another pod) passes."""
    across = phases_seen([(1.0, "Running"), (2.1, "Running"), (9.0, "Failed")], gap(2.1, 9.0))
    assert evaluate(PHASES, V1_27, ["Running", "Failed"], across).status == UNDECIDED
    unchanged = phases_seen([(1.0, "Running"), (2.1, "Running"), (9.0, "Failed")], gap(3.0, 5.0, changed=()))
    passed = evaluate(PHASES, V1_27, ["Running", "Failed"], unchanged)
    assert passed.status == PASS and passed.detail == {}
    other_pod = phases_seen([(1.0, "Running"), (9.0, "Failed")], gap(3.0, 5.0, changed=("v",)))
    assert evaluate(PHASES, V1_27, ["Running", "Failed"], other_pod).status == PASS


def test_a_gap_hides_states_but_cannot_add_or_reorder_them() -> None:
    """Only a mismatch the hidden states could explain is undecided; the rest fail as without the gap."""
    between = gap(2.1, 9.0)
    assert evaluate(PHASES, V1_27, [], phases_seen([], between)).status == UNDECIDED
    contradicted = evaluate(
        PHASES, V1_27, ["Running", "Succeeded"], phases_seen([(1.0, "Running"), (9.0, "Succeeded")], between)
    )
    assert contradicted.status == FAIL  # Succeeded is never expected
    assert contradicted.detail["gap_slots"]["open_after"] == [0]  # kept, so the report judges it again alike
    out_of_order = phases_seen([(1.0, "Failed"), (9.0, "Running")], between)
    assert evaluate(PHASES, V1_27, ["Failed", "Running"], out_of_order).status == FAIL
    spanning_the_start = phases_seen([(1.0, "Succeeded"), (9.0, "Failed")], gap(1.0, 9.0))
    assert evaluate(PHASES, V1_27, ["Succeeded", "Failed"], spanning_the_start).status == UNDECIDED  # Running hidden


def test_a_single_value_is_undecided_only_with_a_gap_over_what_decides_it() -> None:
    one_value = Claim("phase", "c", "the phase", "d", (Expectation(">=1.0", value="Failed", sources=("s",)),))
    watch = Watch(gaps=[gap(5.0, 9.0)])
    over = Basis.during(watch, 4.0, 10.0, {"u"}).doubt()
    assert evaluate(one_value, V1_27, "Running", over).status == UNDECIDED  # seen before the hidden change
    assert evaluate(one_value, V1_27, "Failed", over).status == UNDECIDED  # a hidden state may decide otherwise
    elsewhere = Basis.during(watch, 10.0, 12.0, {"u"}).doubt()  # the value was seen whole after the gap
    assert evaluate(one_value, V1_27, "Running", elsewhere).status == FAIL
    assert evaluate(one_value, V1_27, "Failed", elsewhere).status == PASS
    read_directly = Basis.direct("the node's container list").doubt()
    assert evaluate(one_value, V1_27, "Running", read_directly).status == FAIL


RACY = Expectation(
    "<1.22.12",
    one_of=(Expectation("", value=[True]), Expectation("", value=[False])),
    sources=("k/k#110294",),
    note="a race of these releases decides",
)


def test_a_one_of_expectation_passes_any_of_its_outcomes_and_nothing_else() -> None:
    claim = Claim("retries", "retry deleted", "for each retry, deleted", "doc", (RACY,))
    version = KubeVersion.parse("v1.21.14")
    assert evaluate(claim, version, [True]).status == PASS
    assert evaluate(claim, version, [False]).status == PASS
    failed = evaluate(claim, version, [])
    assert failed.status == FAIL
    assert "expected one of [True] / [False]" in failed.message
    assert failed.to_json()["expected"]["one_of"] == [
        {"value": [True], "between": None},
        {"value": [False], "between": None},
    ]


def test_a_one_of_mixes_values_and_ranges_and_a_gap_explains_what_any_outcome_could() -> None:
    late = Expectation("<1.22.12", one_of=(Expectation("", between=(-1, 3)), Expectation("", between=(10, 20))))
    assert late.matches(2) and late.matches(13) and not late.matches(6)
    assert late.describe() == "one of between -1 and 3 / between 10 and 20"
    sequence = Expectation("<1.27", one_of=(Expectation("", value=["Running"]), Expectation("", value=["A", "B"])))
    claim = Claim("c", "c", "c", "doc", (sequence,))
    seen_b = phases_seen([(1.0, "B")], gap(0.5, 1.0, why="watch down 2 s"), since=0.0)  # A may be hidden before B
    assert evaluate(claim, KubeVersion.parse("v1.26.7"), ["B"], seen_b).status == UNDECIDED
    seen_c = phases_seen([(1.0, "C")], gap(0.5, 1.0, why="watch down 2 s"), since=0.0)
    assert evaluate(claim, KubeVersion.parse("v1.26.7"), ["C"], seen_c).status == FAIL


def write_family(root: Path, expect: str) -> None:
    folder = root / "fam"
    folder.mkdir(parents=True)
    (folder / "family.yaml").write_text("title: t\norder: 1\ndocument: doc\n")
    (folder / "expectations.yaml").write_text(
        "document: doc\nclaims:\n  c:\n    claim: c\n    observable: o\n    expect:\n" + expect
    )


def test_a_one_of_is_read_from_the_family_data(tmp_path: Path) -> None:
    write_family(
        tmp_path,
        '      - versions: "<1.22.12 || >=1.23.0-alpha.0,<1.23.9"\n'
        "        one_of: [{value: [true]}, {between: [10, 20]}]\n"
        "        note: a race\n"
        "        sources: [k/k#110294]\n"
        '      - versions: ">=1.22.12,<1.23.0-alpha.0 || >=1.23.9"\n'
        "        value: [true]\n"
        "        sources: [k/k#110543]\n",
    )
    claim = load_claims("fam", tmp_path)["c"]
    racy = claim.expectation_for(KubeVersion.parse("v1.23.8"))
    assert racy.one_of == (Expectation("", value=[True]), Expectation("", between=(10.0, 20.0)))
    assert claim.expectation_for(KubeVersion.parse("v1.22.12")).value == [True]


def test_a_row_valued_not_observable_is_read_and_no_observation_matches_it(tmp_path: Path) -> None:
    """`not_observable: true` says the claim cannot be observed on the row's range; a null value alone may be an
    observation (a status field not set), which still matches None."""
    write_family(
        tmp_path,
        '      - versions: "<1.29"\n'
        "        value: null\n"
        "        not_observable: true\n"
        "        sources: [s]\n"
        '      - versions: ">=1.29"\n'
        "        value: null\n"
        "        sources: [s]\n",
    )
    claim = load_claims("fam", tmp_path)["c"]
    absent, unset = (claim.expectation_for(KubeVersion.parse(v)) for v in ("v1.28.0", "v1.29.0"))
    assert absent.not_observable and not unset.not_observable
    assert unset.matches(None) and not absent.matches(None) and not absent.matches(0)
    assert absent.describe() == "not observable"
    seen_anyway = evaluate(claim, KubeVersion.parse("v1.28.0"), None)
    assert seen_anyway.status == FAIL and "expected not observable" in seen_anyway.message
    assert not_observable(claim, KubeVersion.parse("v1.28.0"), "refused").status == NOT_OBSERVABLE


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("one_of: [{value: 1}, {value: 2}]\n        sources: [s]", "one_of needs two outcomes or more and a note"),
        ("one_of: [{value: 1}]\n        note: n\n        sources: [s]", "one_of needs two outcomes or more"),
        ("one_of: [{value: 1}, {}]\n        note: n\n        sources: [s]", "needs exactly one of value / between"),
        ("value: 1\n        between: [1, 2]\n        sources: [s]", "needs exactly one of value / between / one_of"),
        ("between: [1]\n        sources: [s]", "between needs [low, high]"),
        ("one_of: [true, false]\n        note: n\n        sources: [s]", "each outcome is a mapping with value"),
        ("value: null\n        not_observable: yes please\n        sources: [s]", "not_observable is true or false"),
        ("value: 0\n        not_observable: true\n        sources: [s]", "not_observable has value: null and nothing"),
        ("between: [1, 2]\n        not_observable: true\n        sources: [s]", "not_observable has value: null"),
    ],
)
def test_a_malformed_one_of_or_range_is_refused_at_load(tmp_path: Path, entry: str, problem: str) -> None:
    write_family(tmp_path, f'      - versions: ">=1.19"\n        {entry}\n')
    with pytest.raises(ExpectationError, match=re.escape(problem)):
        load_claims("fam", tmp_path)


@pytest.mark.parametrize("claim_id", ["job-retry.retries-deleted", "job-retry.containers-left-on-node"])
def test_the_job_deadline_claims_allow_either_outcome_exactly_on_releases_without_k_k_110294(claim_id: str) -> None:
    claim = load_claims("active_deadline")[claim_id]
    unfixed = ["1.21.14", "1.22.11", "1.23.0-alpha.1", "1.23.8", "1.24.0", "1.24.1", "1.25.0-alpha.0"]
    fixed = ["1.22.12", "1.22.17", "1.23.9", "1.24.3", "1.25.0-alpha.1", "1.26.7", "1.37.0"]
    assert all(claim.expectation_for(KubeVersion.parse(v)).one_of for v in unfixed)
    assert not any(claim.expectation_for(KubeVersion.parse(v)).one_of for v in fixed)
    # 1.24.2 has no k/k#110294 either, but its kubelet's Ready False at the retry's own deadline decides (k/k#110479)
    assert not claim.expectation_for(KubeVersion.parse("1.24.2")).one_of


def test_on_1_24_2_the_retry_is_deleted_at_its_own_deadline_and_one_container_stays() -> None:
    """v1.24.2's own recording: the retry Ready False at its deadline, the Job failed and the retry deleted 1 s
    later; the either-outcome rows of 1.24.0-beta.0 to 1.24.1 no longer accept the kept retry there."""
    assert judged("job-retry.retries-deleted", "1.24.2", [True]) == PASS
    assert judged("job-retry.retries-deleted", "1.24.2", [False]) == FAIL
    assert judged("job-retry.containers-left-on-node", "1.24.2", ["exited"]) == PASS
    assert judged("job-retry.containers-left-on-node", "1.24.2", ["exited", "exited"]) == FAIL
    assert judged("job-retry.failed-after-deadline", "1.24.2", 1.0) == PASS
    assert judged("job-retry.failed-after-deadline", "1.24.2", 6.0) == FAIL
    assert judged("job-retry.retries-deleted", "1.24.1", [False]) == PASS


NOT_FAILED = "not failed within 115 s of its creation"
DEADLINE_EXCEEDED = {"reason": "DeadlineExceeded", "message": "Job was active longer than specified deadline"}
BACKOFF_LIMIT = {"reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}


def judged(claim_id: str, version: str, observed: object) -> str:
    return evaluate(load_claims("active_deadline")[claim_id], KubeVersion.parse(version), observed).status


@pytest.mark.parametrize("version", ["1.24.0-beta.0", "1.24.1", "1.24.2", "1.25.0-alpha.0"])
def test_a_job_whose_pod_runs_on_is_expected_not_failed_where_jobreadypods_lost_the_deadline_timer(
    version: str,
) -> None:
    """v1.24.0-beta.0 (JobReadyPods on, k/k#107476) to v1.24.2, and v1.25.0-alpha.0: job-01 is not failed within
    the wait (as seen live on v1.24.1), or, when its pod started after the deadline, failed late at that change."""
    assert judged("job-deadline.failed", version, NOT_FAILED) == PASS
    assert judged("job-deadline.failed-after-deadline", version, NOT_FAILED) == PASS
    assert judged("job-deadline.active-pod-deleted", version, False) == PASS
    assert judged("job-deadline.events", version, ["SuccessfulCreate"]) == PASS
    assert judged("job-deadline.container-removed", version, "running") == PASS
    assert judged("job-deadline.failed-after-deadline", version, 12.0) == PASS  # the pod's late start-up
    assert judged("job-deadline.failed-after-deadline", version, 45.0) == FAIL
    # job-04: the retry's own failure syncs the Job (seen live on v1.24.1: 6 s); on 1.24.2 its Ready False, 1 s
    assert judged("job-retry.failed", version, DEADLINE_EXCEEDED) == PASS
    assert judged("job-retry.failed-after-deadline", version, 1.0 if version == "1.24.2" else 6.0) == PASS


@pytest.mark.parametrize("version", ["1.24.0-beta.0", "1.24.1", "1.25.0-alpha.0"])
def test_a_job_whose_pod_fails_on_its_own_deadline_first_is_backoff_limited_before_k_k_110479(version: str) -> None:
    """job-03 where the kubelet's status reaches the API only with the container's end: the pod's own failure is the
    first sync after the Job's deadline (seen live on v1.24.1: 56 s, the pod kept), unless it started late."""
    assert judged("job-shorter.failed", version, BACKOFF_LIMIT) == PASS
    assert judged("job-shorter.failed", version, DEADLINE_EXCEEDED) == PASS  # the pod's late start-up
    assert judged("job-shorter.failed-after-deadline", version, 56.0) == PASS
    assert judged("job-shorter.failed-after-deadline", version, 40.0) == FAIL
    assert judged("job-shorter.active-pod-deleted", version, False) == PASS
    assert judged("job-shorter.container-removed", version, "exited") == PASS


def test_a_job_whose_pod_turns_unready_at_its_own_deadline_is_failed_by_its_deadline_on_1_24_2() -> None:
    """v1.24.2 (k/k#110479): the kubelet writes Ready False at the pod's deadline, before the kill, and the sync
    1 s later finds the pod active: DeadlineExceeded, the pod deleted (seen live on v1.24.2: 51 s)."""
    assert judged("job-shorter.failed", "1.24.2", DEADLINE_EXCEEDED) == PASS
    assert judged("job-shorter.failed", "1.24.2", BACKOFF_LIMIT) == FAIL
    assert judged("job-shorter.failed-after-deadline", "1.24.2", 51.0) == PASS
    assert judged("job-shorter.failed-after-deadline", "1.24.2", 12.0) == PASS  # the pod's late start-up
    assert judged("job-shorter.failed-after-deadline", "1.24.2", 40.0) == FAIL
    assert judged("job-shorter.active-pod-deleted", "1.24.2", True) == PASS
    assert judged("job-shorter.active-pod-deleted", "1.24.2", False) == FAIL
    assert judged("job-shorter.container-removed", "1.24.2", "removed") == PASS
    assert judged("job-shorter.container-removed", "1.24.2", "exited") == FAIL


@pytest.mark.parametrize("version", ["1.24.3", "1.23.9", "1.22.12", "1.25.0-alpha.1", "1.30.12"])
def test_a_job_with_k_k_110294_is_expected_failed_at_its_deadline_whatever_its_pods_do(version: str) -> None:
    assert judged("job-deadline.failed", version, NOT_FAILED) == FAIL
    assert judged("job-deadline.failed", version, DEADLINE_EXCEEDED) == PASS
    assert judged("job-deadline.failed-after-deadline", version, 1.0) == PASS
    assert judged("job-deadline.failed-after-deadline", version, 12.0) == FAIL
    assert judged("job-deadline.events", version, ["SuccessfulCreate"]) == FAIL
    assert judged("job-shorter.failed", version, BACKOFF_LIMIT) == FAIL
    assert judged("job-shorter.failed-after-deadline", version, 56.0) == FAIL
    assert judged("job-shorter.active-pod-deleted", version, True) == PASS
    assert judged("job-retry.failed-after-deadline", version, 6.0) == FAIL


@pytest.mark.parametrize("version", ["1.23.0-alpha.3", "1.23.8", "1.24.0-alpha.4"])
def test_where_a_second_status_write_is_a_conflict_only_a_pod_failure_makes_the_job_late(version: str) -> None:
    """No k/k#110294 nor JobReadyPods, but k/k#105214 (v1.23.0-alpha.3): a second write of startTime is refused, so
    the timer is lost only to a failure's back-off: job-01 and job-03, whose pods do not fail before the Job's
    deadline, fail on time; job-04 may be up to 30 s late."""
    assert judged("job-deadline.failed", version, NOT_FAILED) == FAIL
    assert judged("job-deadline.failed-after-deadline", version, 1.0) == PASS
    assert judged("job-deadline.failed-after-deadline", version, 12.0) == FAIL
    assert judged("job-deadline.failed-after-deadline", version, NOT_FAILED) == FAIL
    assert judged("job-shorter.failed", version, BACKOFF_LIMIT) == FAIL
    assert judged("job-shorter.failed-after-deadline", version, 1.0) == PASS
    assert judged("job-shorter.failed-after-deadline", version, 56.0) == FAIL
    assert judged("job-retry.failed-after-deadline", version, 24.0) == PASS
    assert judged("job-retry.failed-after-deadline", version, 31.0) == FAIL


@pytest.mark.parametrize("version", ["1.21.14", "1.22.8", "1.22.10", "1.23.0-alpha.1"])
def test_where_the_controller_overwrites_the_status_a_rewritten_start_time_can_lose_the_timer(version: str) -> None:
    """Before k/k#110294 and k/k#105214 the sync the pod's creation queues can write startTime again, a second
    later (seen live on v1.22.8, the sidecar probe's Job): the timer fires before the new deadline and nothing
    arms another. job-01 is then not failed within the wait; job-03 fails at its pod's own deadline,
    BackoffLimitExceeded, the pod kept. On time stays expected; a late failure in between is not."""
    assert judged("job-deadline.failed", version, DEADLINE_EXCEEDED) == PASS
    assert judged("job-deadline.failed", version, NOT_FAILED) == PASS
    assert judged("job-deadline.failed-after-deadline", version, 1.0) == PASS
    assert judged("job-deadline.failed-after-deadline", version, NOT_FAILED) == PASS
    assert judged("job-deadline.failed-after-deadline", version, 12.0) == FAIL
    assert judged("job-deadline.active-pod-deleted", version, False) == PASS
    assert judged("job-deadline.events", version, ["SuccessfulCreate"]) == PASS
    assert judged("job-deadline.container-removed", version, "running") == PASS
    assert judged("job-shorter.failed", version, BACKOFF_LIMIT) == PASS
    assert judged("job-shorter.failed-after-deadline", version, 56.0) == PASS
    assert judged("job-shorter.failed-after-deadline", version, 30.0) == FAIL
    assert judged("job-shorter.active-pod-deleted", version, False) == PASS
    assert judged("job-shorter.container-removed", version, "exited") == PASS
    assert judged("job-retry.failed-after-deadline", version, 31.0) == FAIL


def test_on_1_22_11_a_lost_timer_still_fails_job_03_with_deadline_exceeded_at_its_pods_ready_false() -> None:
    """v1.22.11 has k/k#110481: the kubelet writes Ready False at the pod's own deadline while it runs, and that
    sync fails the Job with DeadlineExceeded and deletes the pod, about 50 s late."""
    assert judged("job-shorter.failed", "1.22.11", BACKOFF_LIMIT) == FAIL
    assert judged("job-shorter.failed-after-deadline", "1.22.11", 51.0) == PASS
    assert judged("job-shorter.active-pod-deleted", "1.22.11", False) == FAIL
    assert judged("job-deadline.failed", "1.22.11", NOT_FAILED) == PASS


@pytest.mark.parametrize(
    ("version", "expected"),
    [("1.31.0-alpha.3", []), ("1.31.0-beta.0", ["FailureTarget"]), ("1.31.0-rc.1", ["FailureTarget"])],
)
def test_the_failure_target_rows_start_at_the_first_pre_release_with_k_k_125510(
    version: str, expected: list[str]
) -> None:
    """k/k#125510 is in CHANGELOG-1.31 under v1.31.0-beta.0, so 1.31.0's betas and rcs have it."""
    assert judged("job-deadline.conditions-before-failed", version, expected) == PASS


# Pre-releases on both sides of every boundary set at the first pre-release whose CHANGELOG section lists the PR
# (and whose tree, where the module proxy serves it, shows the change).
BOUNDARY_PRE_RELEASES = [
    "1.22.0-alpha.3",
    "1.22.0-rc.0",
    "1.23.0-alpha.2",
    "1.23.0-alpha.3",
    "1.24.0-alpha.4",
    "1.24.0-beta.0",
    "1.25.0-alpha.0",
    "1.25.0-rc.0",
    "1.26.0-alpha.1",
    "1.26.0-rc.1",
    "1.28.0-alpha.3",
    "1.28.0-alpha.4",
    "1.28.0-beta.0",
    "1.28.0-rc.0",
    "1.29.0-alpha.1",
    "1.29.0-alpha.3",
    "1.31.0-alpha.3",
    "1.31.0-beta.0",
]
# node_shutdown leaves the 1.22 pre-releases without an expectation on purpose (its header says why).
UNTOLD_PRE_RELEASES = {"node_shutdown": ("1.22.0-",)}


@pytest.mark.parametrize("family", FAMILIES)
def test_every_claim_has_exactly_one_expectation_for_the_pre_releases_at_its_boundaries(family: str) -> None:
    untold = UNTOLD_PRE_RELEASES.get(family, ())
    for claim in load_claims(family).values():
        for version in BOUNDARY_PRE_RELEASES:
            if not version.startswith(untold):
                claim.expectation_for(KubeVersion.parse(version))  # raises on a gap or an overlap


@pytest.mark.parametrize(
    ("version", "replicas_cover_pods", "current_revision_holds"),
    [
        ("1.28.0-alpha.3", True, True),  # before k/k#117865 (CHANGELOG-1.28 v1.28.0-alpha.4)
        ("1.28.0-alpha.4", False, False),
        ("1.28.3", False, False),
        ("1.28.4", False, True),  # k/k#120731 (CHANGELOG-1.28 v1.28.4)
        ("1.29.0-alpha.1", False, False),  # the 1.29 line got k/k#120731 only in v1.29.0-alpha.3
        ("1.29.0-alpha.3", False, True),
    ],
)
def test_the_statefulset_rows_follow_the_pre_release_each_pr_first_reached(
    version: str, replicas_cover_pods: bool, current_revision_holds: bool
) -> None:
    claims = load_claims("statefulset_status")
    at = KubeVersion.parse(version)
    assert claims["statefulset.scale-up.replicas-cover-pods"].expectation_for(at).value is replicas_cover_pods
    assert claims["statefulset.partition.current-revision-holds"].expectation_for(at).value is current_revision_holds
    revision = claims["statefulset.partition.recreated-pod-revision"].expectation_for(at).value
    assert revision == ("current" if current_revision_holds else "update")


@pytest.mark.parametrize(
    ("version", "phases", "current_revision_holds"),
    [
        ("1.26.6", ["Running"], True),  # the pod stays Running: the controller never sees it Failed
        ("1.26.7", ["Running"], False),  # k/k#117865's cherry-pick alone, never fixed on 1.26
        ("1.27.0-beta.0", ["Running"], True),  # before k/k#115331 (CHANGELOG-1.27 v1.27.0-rc.0)
        ("1.27.0-rc.0", ["Running", "Failed"], False),
        ("1.27.3", ["Running", "Failed"], False),  # the Failed pod's recreation alone (the base probe holds here)
        ("1.27.7", ["Running", "Failed"], False),
        ("1.27.8", ["Running", "Failed"], True),  # k/k#120731
        ("1.28.0-alpha.3", ["Running", "Failed"], False),  # k/k#115331 without k/k#117865 yet
        ("1.28.3", ["Running", "Failed"], False),
        ("1.28.4", ["Running", "Failed"], True),
        ("1.29.0-alpha.1", ["Running", "Failed"], False),
        ("1.29.0-alpha.3", ["Running", "Failed"], True),
    ],
)
def test_a_failed_pod_below_the_partition_moves_current_revision_until_k_k_120731(
    version: str, phases: list[str], current_revision_holds: bool
) -> None:
    """The pods of test_statefulset_partition_with_pods_failing_on_sigterm exit 1: from 1.27.0-rc.0 the deleted one
    ends Failed, and its recreation moves currentRevision on releases without k/k#120731."""
    claims = load_claims("statefulset_status")
    at = KubeVersion.parse(version)
    assert claims["statefulset.failing-pod.deleted-pod-phases"].expectation_for(at).value == phases
    assert claims["statefulset.failing-pod.current-revision-holds"].expectation_for(at).value is current_revision_holds
    revision = claims["statefulset.failing-pod.recreated-pod-revision"].expectation_for(at).value
    assert revision == ("current" if current_revision_holds else "update")


@pytest.mark.parametrize(("version", "moves"), [("1.26.6", False), ("1.27.3", True), ("1.27.8", False)])
def test_the_failing_pod_claims_judge_the_versions_to_be_recorded_live(version: str, moves: bool) -> None:
    """v1.26.6, v1.27.3 and v1.27.8, the releases its live runs are planned on: a held currentRevision passes where
    no path moves it and fails on v1.27.3, where the base probe's own claim passes with it."""
    claims = load_claims("statefulset_status")
    at = KubeVersion.parse(version)
    holds = claims["statefulset.failing-pod.current-revision-holds"]
    assert evaluate(holds, at, True).status == (FAIL if moves else PASS)
    assert evaluate(holds, at, False).status == (PASS if moves else FAIL)
    base = claims["statefulset.partition.current-revision-holds"]
    assert evaluate(base, at, True).status == PASS  # exit 0, Succeeded: no path moves it on these three
    phases = claims["statefulset.failing-pod.deleted-pod-phases"]
    assert evaluate(phases, at, ["Running", "Failed"]).status == (PASS if version != "1.26.6" else FAIL)
    assert evaluate(phases, at, ["Running"]).status == (PASS if version == "1.26.6" else FAIL)
