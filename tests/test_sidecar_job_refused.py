"""The Job with sidecars and a pod failure policy where Strict validation refuses podFailurePolicy as unknown.

1.24.0-beta.0 (ServerSideFieldValidation on, k/k#108889, off again in rc.0) and 1.25.0-alpha.3 to 1.25.0-beta.0
(on from k/k#110178) refuse unknown fields, and spec.podFailurePolicy came only in 1.25.0-rc.0 (k/k#111113): no
cluster there creates the Job. No cluster of those releases ran; the case is the live kind v1.27.16 run (whose
first create was refused for the sidecars' restartPolicy) altered in memory: reported as such a release, both
creates refused as Strict validation words it, and the watches seeing nothing.

Stood in: the cluster. Real: the probe function, Probe, the replayed transport and the evaluator.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from harness.base.run import Run
from harness.core.expectations import NOT_OBSERVABLE, PASS
from harness.core.probe import ClaimsFailed, Probe
from harness.core.transport import Rejected
from harness.core.transport_recording import Recording
from probes.sidecar_termination import test_sidecar_termination as sidecar_probes
from tests.live import as_version, live

RECORDING = (
    "sidecar_termination/a_job_fails_through_its_pod_failure_policy_when_its_main_container_exits_1"
    "--v1.27.16-live-kind.json"
)
STRICT = 'Job in version "v1" cannot be handled as a Job: strict decoding error: '
POLICY = 'unknown field "spec.podFailurePolicy"'
SIDECARS = (
    'unknown field "spec.template.spec.initContainers[0].restartPolicy", '
    'unknown field "spec.template.spec.initContainers[1].restartPolicy"'
)
NOT_OBSERVABLE_THERE = {
    "job-fail.outcome",
    "job-fail.pod-phase",
    "job-fail.sidecar-sigterm-order",
    "job-fail.sidecar-b-sigterm-after-main-exit",
    "job-fail.exits",
}


def refused_everywhere(version: str, second_refusal: str = POLICY) -> Recording:
    """The live run as `version`: the first create refused for both unknown fields, the second (the sidecars'
    restartPolicy taken out) for `second_refusal`, and no Job or pod ever seen."""
    recording = as_version(live(RECORDING), version)
    creates = [step for step in recording.interactions if step["call"] == "create"]
    assert len(creates) == 2 and "rejected" in creates[0] and "response" in creates[1]  # the run as recorded
    creates[0]["rejected"] = {"status": 400, "message": f"{STRICT}{POLICY}, {SIDECARS}"}
    del creates[1]["response"]
    creates[1]["rejected"] = {"status": 400, "message": f"{STRICT}{second_refusal}"}
    for step in recording.interactions:
        if step["call"] == "watch":
            step["events"] = []
    return recording


def run(recording: Recording, tmp_path: Path) -> Probe:
    probe = Probe.replaying(recording, "sidecar_termination", Run.start(tmp_path))
    sidecar_probes.test_a_job_fails_through_its_pod_failure_policy_when_its_main_container_exits_1(probe)
    return probe


@pytest.mark.parametrize("version", ["v1.24.0-beta.0", "v1.25.0-alpha.3", "v1.25.0-beta.0"])
def test_a_refused_job_says_its_claims_are_not_observable_and_why(version: str, tmp_path: Path) -> None:
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        probe = run(refused_everywhere(version), tmp_path)
    verdicts = {verdict.claim.id: verdict for verdict in probe.verdicts}
    assert verdicts.keys() == {"job-fail.failure-policy-kept", *NOT_OBSERVABLE_THERE}
    kept = verdicts["job-fail.failure-policy-kept"]
    assert (kept.status, kept.observed) == (PASS, "rejected")
    for claim in NOT_OBSERVABLE_THERE:
        verdict = verdicts[claim]
        assert verdict.status == NOT_OBSERVABLE, claim
        assert verdict.expected is not None and verdict.expected.value is None  # a row saying so covers it
        assert f"the API server refused the Job: 400 {POLICY}" in verdict.message, verdict.message
    assert len(said) == len(NOT_OBSERVABLE_THERE)  # each one said, none passed off as a pass


def test_the_same_refusal_where_the_field_exists_fails_and_names_the_releases_it_fits(tmp_path: Path) -> None:
    """1.25.0-rc.0 knows podFailurePolicy (dropped while its gate is off): a refusal there contradicts the rows."""
    refused = refused_everywhere("v1.25.0-rc.0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the claims not observable are said there too; the failure is the point
        with pytest.raises(ClaimsFailed) as failed:
            run(refused, tmp_path)
    message = str(failed.value)
    assert "job-fail.failure-policy-kept" in message and "was 'rejected', expected 'None'" in message
    assert "behaved like >=1.24.0-beta.0,<1.24.0-rc.0 / >=1.25.0-alpha.3,<1.25.0-rc.0" in message


def test_a_refusal_of_something_else_still_stops_the_probe(tmp_path: Path) -> None:
    """Only a refusal that names podFailurePolicy is the release's answer to the policy; any other is not hidden."""
    with pytest.raises(Rejected, match=r"spec\.somethingElse"):
        run(refused_everywhere("v1.25.0-beta.0", 'unknown field "spec.somethingElse"'), tmp_path)
