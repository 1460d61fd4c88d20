"""Pod failure policy: exit code 42 fails the Job at once (document 000's Job, KEP-3329).

Document 000 (shared/seeds/000_c1d4d88888778485.txt) shows a Job with a podFailurePolicy whose FailJob rule
matches exit code 42 and whose Ignore rule matches the DisruptionTarget pod condition. Where the policy
exists and is on (JobPodFailurePolicy beta from 1.26), the first pod's exit 42 fails the Job with reason
PodFailurePolicy and no retry; where it does not (before 1.26: alpha and off in 1.25, absent before), the
field is dropped, the Job retries up to its backoffLimit (1 here) and fails with BackoffLimitExceeded.
This is issue 8's fifth probe, first half; the eviction / DisruptionTarget half is not written yet.
"""

from __future__ import annotations

import pytest

from harness.probe import Probe
from harness.transport import JsonDict
from harness.views import JobView

pytestmark = pytest.mark.probe("job_failure_policy")

# Pod start-up, 5 s of work, the controller's back-off before a retry (10 s) and a second run.
BUDGET_S = 120.0


def failure(job: JobView, namespace: str, pods: list[str]) -> JsonDict | None:
    """The Failed condition's reason and message, with this run's namespace and pod names made generic."""
    failed = job.condition("Failed")
    if failed is None:
        return None
    message = failed.message or ""
    for pod in pods:
        message = message.replace(f"{namespace}/{pod}", "<namespace>/<pod>")
    return {"reason": failed.reason, "message": message}


def test_exit_code_42_fails_the_job_through_its_pod_failure_policy(probe: Probe) -> None:
    """Document 000, Pod Failure Policy: FailJob on exit code 42 ends the Job after its first pod."""
    manifest = probe.manifest("job-pod-failure-policy-exit-42.yaml")
    name = manifest["metadata"]["name"]
    jobs = probe.watch_all("Job", focus=name)
    pods = probe.watch_pods()
    probe.create(manifest, anchor=True)
    jobs.wait_for(
        f"Job {name} to fail", lambda o: name in o.states and o.latest.condition("Failed") is not None, within=BUDGET_S
    )
    pods.catch_up()
    probe.check("failure-policy.failed", failure(jobs.latest, probe.namespace, pods.names()))
    probe.check("failure-policy.pods-run", len(pods.names()))
    exits = sorted({str(p.container("main").exit_code) for p in pods.states.values() if p.all_containers_terminated})
    probe.check("failure-policy.exit-codes", exits)
    probe.conclude()
