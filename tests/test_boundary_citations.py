"""The PR each version boundary of the sidecar, preStop sleep, probe-grace, Job replacement and Job failure policy
families rests on, as read at the tags: the CHANGELOG pre-release section that lists it and, where a feature gate
decides, the gate's state on both sides (harness/gate_ledger.json, from each tag's pkg/features). make upgrade and the
report name the PRs a row cites as what changed where the row starts, so the row in force from a boundary cites that
boundary's PR first, and a stage that changes nothing the probes see (GA, a gate's removal) is cited by no row."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from packaging.version import Version

from harness.axis.gates import gate_state, release_status
from harness.axis.releases import first_catalogued, published_releases, sort_key
from harness.base.versions import KubeVersion, release_name, version_range
from harness.core.expectations import Claim, Expectation, load_claims, pull_requests


@dataclass(frozen=True)
class Boundary:
    """A release where rows start, the PR there (its CHANGELOG section), and the gate states around it."""

    pr: str
    changelog: str
    gate: str | None = None
    before: str = ""  # the gate's state at the last release read before the boundary ("absent", "alpha:off", ...)
    after: str = ""  # and at the first read from it on


SERVER_SIDE_FIELD_VALIDATION = {
    "1.24.0-beta.0": Boundary(
        "108889", "CHANGELOG-1.24 v1.24.0-beta.0", "ServerSideFieldValidation", "alpha:off", "beta:on"
    ),
    "1.24.0-rc.0": Boundary(
        "109271", "CHANGELOG-1.24 v1.24.0-rc.0", "ServerSideFieldValidation", "beta:on", "alpha:off"
    ),
    "1.25.0-alpha.3": Boundary(
        "110178", "CHANGELOG-1.25 v1.25.0-alpha.3", "ServerSideFieldValidation", "alpha:off", "beta:on"
    ),
}

# Where spec.podFailurePolicy became known (its gate off) and where its gate turned on.
JOB_POD_FAILURE_POLICY = {
    "1.25.0-rc.0": Boundary("111113", "CHANGELOG-1.25 v1.25.0-rc.0", "JobPodFailurePolicy", "absent", "alpha:off"),
    "1.26.0-beta.0": Boundary("113360", "CHANGELOG-1.26 v1.26.0-beta.0", "JobPodFailurePolicy", "alpha:off", "beta:on"),
}

BOUNDARIES: dict[str, dict[str, Boundary]] = {
    "sidecar_termination": {
        **SERVER_SIDE_FIELD_VALIDATION,
        **JOB_POD_FAILURE_POLICY,
        "1.22.0-beta.2": Boundary("102344", "CHANGELOG-1.22 v1.22.0-beta.2"),
        "1.27.0-rc.0": Boundary("115331", "CHANGELOG-1.27 v1.27.0-rc.0"),
        "1.28.0-beta.0": Boundary(
            "116429", "CHANGELOG-1.28 v1.28.0-beta.0", "SidecarContainers", "absent", "alpha:off"
        ),
        "1.29.0-alpha.3": Boundary(
            "121579", "CHANGELOG-1.29 v1.29.0-alpha.3", "SidecarContainers", "alpha:off", "beta:on"
        ),
    },
    "prestop_sleep": {
        **SERVER_SIDE_FIELD_VALIDATION,
        "1.29.0-alpha.3": Boundary(
            "119026", "CHANGELOG-1.29 v1.29.0-alpha.3", "PodLifecycleSleepAction", "absent", "alpha:off"
        ),
        "1.30.0-alpha.3": Boundary(
            "122456", "CHANGELOG-1.30 v1.30.0-alpha.3", "PodLifecycleSleepAction", "alpha:off", "beta:on"
        ),
        "1.32.0-beta.0": Boundary(
            "127094", "CHANGELOG-1.32 v1.32.0-beta.0", "PodLifecycleSleepActionAllowZero", "absent", "alpha:off"
        ),
        "1.33.0-rc.0": Boundary(
            "130621", "CHANGELOG-1.33 v1.33.0-rc.0", "PodLifecycleSleepActionAllowZero", "alpha:off", "beta:on"
        ),
    },
    "probe_grace": {
        "1.25.0-beta.0": Boundary(
            "108541", "CHANGELOG-1.25 v1.25.0-beta.0", "ProbeTerminationGracePeriod", "beta:off", "beta:on"
        ),
    },
    "job_replacement": {
        **SERVER_SIDE_FIELD_VALIDATION,
        **JOB_POD_FAILURE_POLICY,
        "1.27.0-beta.0": Boundary("114768", "CHANGELOG-1.27 v1.27.0-beta.0"),
        "1.28.0-beta.0": Boundary(
            "119301", "CHANGELOG-1.28 v1.28.0-beta.0", "JobPodReplacementPolicy", "absent", "alpha:off"
        ),
        "1.28.0-rc.0": Boundary("117015", "CHANGELOG-1.28 v1.28.0-rc.0"),
        "1.29.0-alpha.3": Boundary(
            "121491", "CHANGELOG-1.29 v1.29.0-alpha.3", "JobPodReplacementPolicy", "alpha:off", "beta:on"
        ),
    },
}

# Where Jobs are tracked with finalizers by default (JobTrackingWithFinalizers), which decides how an eviction counts
# against a Job without a pod failure policy: on from 1.23.0-alpha.4, off again in 1.23.7 (the 1.23 line) and
# 1.24.0-rc.0, on from 1.25.0-alpha.3. The 1.24 line starts on (1.24.0-alpha.0: master after k/k#105687, before its
# own k/k#109487), which the ledger reads at v1.24.0-alpha.2, the first 1.24 tag the module proxy serves.
JOB_TRACKING_WITH_FINALIZERS = {
    "1.23.0-alpha.4": Boundary(
        "105687", "CHANGELOG-1.23 v1.23.0-alpha.4", "JobTrackingWithFinalizers", "alpha:off", "beta:on"
    ),
    "1.23.7": Boundary("109491", "CHANGELOG-1.23 v1.23.7", "JobTrackingWithFinalizers", "beta:on", "beta:off"),
    "1.24.0-alpha.0": Boundary(
        "105687", "CHANGELOG-1.23 v1.23.0-alpha.4", "JobTrackingWithFinalizers", "beta:off", "beta:on"
    ),
    "1.24.0-rc.0": Boundary(
        "109487", "CHANGELOG-1.24 v1.24.0-rc.0", "JobTrackingWithFinalizers", "beta:on", "beta:off"
    ),
    "1.25.0-alpha.3": Boundary(
        "110948", "CHANGELOG-1.25 v1.25.0-alpha.3", "JobTrackingWithFinalizers", "beta:off", "beta:on"
    ),
}
BOUNDARIES["job_failure_policy"] = {**SERVER_SIDE_FIELD_VALIDATION, **JOB_POD_FAILURE_POLICY}

JOB_DEADLINE_TIMER = {
    "1.22.12": Boundary("110294", "cherry-pick k/k#110543, CHANGELOG-1.22 v1.22.12"),
    "1.23.0-alpha.0": Boundary("110294", "master before k/k#110294"),
    "1.23.9": Boundary("110294", "cherry-pick k/k#110545, CHANGELOG-1.23 v1.23.9"),
    "1.23.0-alpha.3": Boundary("105214", "CHANGELOG-1.23 v1.23.0-alpha.3: a stale status write is a conflict"),
    "1.24.0-alpha.0": Boundary("105214", "master with k/k#105214, before k/k#110294"),
    "1.24.0-beta.0": Boundary("107476", "CHANGELOG-1.24 v1.24.0-beta.0", "JobReadyPods", "alpha:off", "beta:on"),
    "1.24.3": Boundary("110294", "cherry-pick k/k#110544, CHANGELOG-1.24 v1.24.3"),
    "1.25.0-alpha.0": Boundary(
        "107476", "CHANGELOG-1.24 v1.24.0-beta.0: master with JobReadyPods on, before k/k#110294"
    ),
    "1.25.0-alpha.1": Boundary("110294", "CHANGELOG-1.25 v1.25.0-alpha.1"),
}

# Claims whose boundaries are another gate's than their family's at some releases (both gates change at 1.24.0-rc.0
# and 1.25.0-alpha.3): the eviction's outcome without a pod failure policy follows how the Job is tracked.
# The outcome also changes where the kubelet removes an evicted pod as soon as it is Failed (the pod workers' rework),
# which decides whether a legacy-tracked Job still counts it when its replacement completes.
CLAIM_BOUNDARIES: dict[str, dict[str, Boundary]] = {
    "eviction.job-outcome": {
        **JOB_TRACKING_WITH_FINALIZERS,
        "1.22.0-beta.2": Boundary("102344", "CHANGELOG-1.22 v1.22.0-beta.2"),
    },
    "eviction.pods-run": JOB_TRACKING_WITH_FINALIZERS,
    # TerminatePod and a deleted pod's never-started containers: k/k#105462 wrote them ContainerStatusUnknown, the
    # hasPodInitialized guard of k/k#108366 keeps them waiting; each reached the 1.22 and 1.23 lines in a patch, and
    # each new minor's first pre-release starts from master's state.
    "pod.exits": {
        "1.22.3": Boundary("105462", "in status_manager.go from v1.22.3 (CHANGELOG-1.23 v1.23.0-alpha.4)"),
        "1.22.9": Boundary("108366", "cherry-pick k/k#108749, in status_manager.go from v1.22.9"),
        "1.23.0-alpha.0": Boundary("102344", "CHANGELOG-1.22 v1.22.0-beta.2: master before k/k#105462"),
        "1.23.0-alpha.4": Boundary("105462", "CHANGELOG-1.23 v1.23.0-alpha.4"),
        "1.23.6": Boundary("108366", "cherry-pick k/k#108723, CHANGELOG-1.23 v1.23.6"),
        "1.24.0-alpha.0": Boundary("105462", "master before k/k#108366"),
        "1.24.0-alpha.4": Boundary("108366", "CHANGELOG-1.24 v1.24.0-alpha.4"),
    },
    # The Job's deadline timer: armed once before k/k#110294 (lost to a second sync's startTime until k/k#105214 made
    # that write a conflict), lost at once with JobReadyPods on (k/k#107476), re-armed in every sync from k/k#110294
    # and its cherry-picks.
    "job.outcome": JOB_DEADLINE_TIMER,
    "job-fail.outcome": {
        **JOB_DEADLINE_TIMER,
        "1.24.0-beta.0": SERVER_SIDE_FIELD_VALIDATION["1.24.0-beta.0"],  # the Job refused there
    },
}

# Stages that change nothing these probes see: SidecarContainers GA (1.33), ProbeTerminationGracePeriod GA (1.28)
# and its removal (1.29), PodLifecycleSleepAction GA (announced in 1.32, again in 1.34).
NOT_A_BOUNDARY = {"129731", "114307", "121257", "128046", "132595"}


def claims_of(family: str) -> list[Claim]:
    return list(load_claims(family).values())


def boundaries_of(claim: Claim) -> set[str]:
    """Every release a range of the claim starts or ends at."""
    return {
        release_name(Version(specifier.version))
        for expectation in claim.expectations
        for specifiers in version_range(expectation.versions)
        for specifier in specifiers
    }


def row_on(claim: Claim, release: str) -> Expectation:
    rows = [e for e in claim.expectations if KubeVersion.parse(release).satisfies(e.versions)]
    assert len(rows) == 1, f"{claim.id}: {len(rows)} rows cover {release}, not one"
    return rows[0]


CASES = [
    (family, claim, release)
    for family in BOUNDARIES
    for claim in claims_of(family)
    for release in sorted(boundaries_of(claim), key=sort_key)
    if sort_key(release) >= first_catalogued()  # ">=1.19": the oldest the suite runs, not a change
]


@pytest.mark.parametrize(("family", "claim", "release"), CASES, ids=[f"{c[1].id} {c[2]}" for c in CASES])
def test_the_row_from_a_boundary_cites_its_pr_first(family: str, claim: Claim, release: str) -> None:
    known = {**BOUNDARIES[family], **CLAIM_BOUNDARIES.get(claim.id, {})}
    assert release in known, f"{family} {claim.id}: a range starts or ends at {release}, which no PR here is read for"
    cited = pull_requests(row_on(claim, release).sources)
    assert cited and cited[0] == known[release].pr, (
        f"{family} {claim.id} from {release}: cites {cited}, the change there is k/k#{known[release].pr} "
        f"({known[release].changelog})"
    )


def test_every_claim_read_for_its_own_boundaries_is_a_claim_of_a_family_read_here() -> None:
    claims = {claim.id for family in BOUNDARIES for claim in claims_of(family)}
    assert set(CLAIM_BOUNDARIES) <= claims


def test_no_row_cites_a_stage_that_changes_nothing_here() -> None:
    for family in BOUNDARIES:
        for claim in claims_of(family):
            for row in claim.expectations:
                wrong = NOT_A_BOUNDARY & set(pull_requests(row.sources))
                assert not wrong, f"{family} {claim.id} {row.versions} cites {sorted(wrong)}"


def read_releases() -> list[str]:
    return [release for release in published_releases() if release_status(release) == "read"]


def state_text(gate: str, release: str) -> str:
    state = gate_state(gate, release)
    return "absent" if state is None else state.text()


GATED = sorted(
    {
        (release, b)
        for found in (*BOUNDARIES.values(), *CLAIM_BOUNDARIES.values())
        for release, b in found.items()
        if b.gate
    },
    key=lambda x: (sort_key(x[0]), x[1].gate or ""),  # two gates change at 1.29.0-alpha.3: one order for every worker
)


@pytest.mark.parametrize(("release", "boundary"), GATED, ids=[f"{b.gate} {r}" for r, b in GATED])
def test_the_gate_changes_at_the_boundary(release: str, boundary: Boundary) -> None:
    assert boundary.gate is not None
    read = read_releases()
    last_before = [r for r in read if sort_key(r) < sort_key(release)][-1]
    first_from = next(r for r in read if sort_key(r) >= sort_key(release))
    assert state_text(boundary.gate, last_before) == boundary.before, (boundary.gate, last_before)
    assert state_text(boundary.gate, first_from) == boundary.after, (boundary.gate, first_from)
