"""The Jobs with a pod failure policy where Strict validation refuses podFailurePolicy as unknown: the probe says
so and creates the same Job without it, as a client with the default field validation would have it.

1.24.0-beta.0 (ServerSideFieldValidation on, k/k#108889) and 1.25.0-alpha.3 to 1.25.0-beta.0 (on from k/k#110178)
refuse unknown fields, and spec.podFailurePolicy came only in 1.25.0-rc.0 (k/k#111113). No cluster of those
releases ran; the case is a live local v1.25.16 run (policy known, its gate off: dropped, so the Job ran without
it) altered in memory: reported as such a release, its create refused as Strict validation words it and followed
by the create of the same Job without the field, to which the cluster answered as it did.

Stood in: the cluster. Real: the probe functions, Probe, the replayed transport and the evaluator.
"""

from __future__ import annotations

import copy
import warnings
from pathlib import Path
from types import ModuleType

import pytest

from harness.base.run import Run
from harness.core.expectations import NOT_OBSERVABLE, PASS
from harness.core.probe import ClaimsFailed, Probe
from harness.core.transport_recording import Recording
from probes.job_failure_policy import test_job_failure_policy as policy_probes
from probes.job_replacement import test_job_replacement as replacement_probes
from tests.live import as_version, live

REFUSED = 'Job in version "v1" cannot be handled as a Job: strict decoding error: unknown field "spec.podFailurePolicy"'
EXIT_42 = "exit_code_42_fails_the_job_through_its_pod_failure_policy"
EVICTED = "evicted_pod_is_ignored_through_the_disruption_target_rule"
REPLACED = "job_with_pod_failure_policy_replaces_a_deleted_pod"
CASES = [
    ("job_failure_policy", policy_probes, EXIT_42, "failure-policy.policy-kept"),
    ("job_failure_policy", policy_probes, EVICTED, "eviction.policy-kept"),
    ("job_replacement", replacement_probes, REPLACED, "failure-policy.policy-field"),
]


def refused_then_created_without_it(family: str, probe_name: str, version: str) -> Recording:
    """The v1.25.16 run as `version`: the Job's create refused, then the same Job without the field created."""
    recording = as_version(live(f"{family}/{probe_name}--v1.25.16-live-local.json"), version)
    steps = recording.interactions
    at = next(i for i, s in enumerate(steps) if s["call"] == "create" and s["request"]["manifest"]["kind"] == "Job")
    created = steps[at]
    assert "podFailurePolicy" in created["request"]["manifest"]["spec"]
    assert created["response"]["spec"].get("podFailurePolicy") is None  # dropped there: the Job ran without it
    refused = {k: v for k, v in created.items() if k != "response"} | {"rejected": {"status": 400, "message": REFUSED}}
    without = copy.deepcopy(created)
    del without["request"]["manifest"]["spec"]["podFailurePolicy"]
    recording.interactions = [*steps[:at], refused, without, *steps[at + 1 :]]
    return recording


def run(family: str, module: ModuleType, recording: Recording, tmp_path: Path) -> Probe:
    probe = Probe.replaying(recording, family, Run.start(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a claim the run could not observe is said as it was on v1.25.16
        getattr(module, f"test_{recording.probe.split('::test_')[1]}")(probe)
    return probe


@pytest.mark.parametrize("version", ["v1.24.0-beta.0", "v1.25.0-alpha.3", "v1.25.0-beta.0"])
@pytest.mark.parametrize(("family", "module", "probe_name", "claim"), CASES, ids=[c[2] for c in CASES])
def test_a_refused_policy_is_said_and_the_job_without_it_is_judged(
    family: str, module: ModuleType, probe_name: str, claim: str, version: str, tmp_path: Path
) -> None:
    probe = run(family, module, refused_then_created_without_it(family, probe_name, version), tmp_path)
    verdicts = {verdict.claim.id: verdict for verdict in probe.verdicts}
    said = verdicts[claim]
    assert (said.status, said.observed) == (PASS, "rejected")
    others = {claim: verdict.status for claim, verdict in verdicts.items() if verdict is not said}
    assert others and set(others.values()) <= {PASS, NOT_OBSERVABLE}  # the Job without it, watched and judged


def test_the_same_refusal_where_the_field_exists_fails(tmp_path: Path) -> None:
    """1.25.0-rc.0 knows podFailurePolicy (its gate off: dropped): a refusal there contradicts the rows."""
    family, module, probe_name, _ = CASES[0]
    with pytest.raises(ClaimsFailed) as failed:
        run(family, module, refused_then_created_without_it(family, probe_name, "v1.25.0-rc.0"), tmp_path)
    message = str(failed.value)
    assert "failure-policy.policy-kept" in message and "was 'rejected', expected 'None'" in message
    assert "behaved like >=1.24.0-beta.0,<1.24.0-rc.0 / >=1.25.0-alpha.3,<1.25.0-rc.0" in message
