"""Pod failure policy: exit code 42 fails the Job at once (the document's Job, KEP-3329).

"[Kubernetes 1.27] Pod 停止時のフェーズ遷移の変更" (pod-phase-on-stop-1.27) shows a Job with a podFailurePolicy
whose FailJob rule matches exit code 42 and whose Ignore rule matches the DisruptionTarget pod condition. Where
the policy exists and is on (JobPodFailurePolicy beta from 1.26), the first pod's exit 42 fails the Job with
reason PodFailurePolicy and no retry; where it does not (before 1.26: alpha and off in 1.25, absent before), the
field is dropped, the Job retries up to its backoffLimit (1 here) and fails with BackoffLimitExceeded.

Where Strict validation refuses the field as unknown (1.24.0-beta.0, 1.25.0-alpha.3 to 1.25.0-beta.0: it came
with k/k#111113 in 1.25.0-rc.0), each probe records the refusal as `<probe>.policy-kept` and creates the same Job
without the field (manifests/*.without-policy-field.yaml), as a client with the default field validation (Warn:
unknown fields dropped) would have it, so the other claims show the Job without a policy there too.

The second probe evicts the Job's running pod through the Eviction API. Where pod disruption conditions
are on (PodDisruptionConditions beta from 1.26) the API server first gives the pod the DisruptionTarget
condition, and the policy's Ignore rule then keeps its failure from counting against backoffLimit (0 here):
the Job replaces the pod and completes. Before 1.26 there is no such condition and no policy; what the
evicted pod does to the Job then depends on how the controller tracks pods (see the expectations).
"""

from __future__ import annotations

import pytest

from harness.core.basis import Basis
from harness.core.identity import running_ready
from harness.core.observe import Observer, ProbeTimeout, key_of
from harness.core.observe_readings import conditions_before_failed
from harness.core.probe import Probe
from harness.core.probe_helpers import POD_START_BUDGET_S, container_exit, pod_failure_policy_kept
from harness.core.transport import JsonDict, Rejected
from harness.core.views import JobView, PodView

pytestmark = pytest.mark.probe("job_failure_policy")

# Pod start-up, 5 s of work, the controller's back-off before a retry (10 s) and a second run.
BUDGET_S = 120.0
# Pod start-up, then the evicted pod's stop (5 s grace at most) and a replacement's 12 s of work.
EVICTION_BUDGET_S = 120.0
CREATE = "the API server's answer to the create"


def create_with_policy(probe: Probe, manifest_file: str, anchor: bool = False) -> str:
    """Create the Job; return what the server kept of its podFailurePolicy (pod_failure_policy_kept), or
    'rejected': refused as an unknown field, the same Job is then created from its .without-policy-field overlay."""
    try:
        created = probe.create(probe.manifest(manifest_file), anchor=anchor)
    except Rejected as rejected:
        if "podFailurePolicy" not in rejected.message:
            raise
        probe.create(probe.manifest(manifest_file.replace(".yaml", ".without-policy-field.yaml")), anchor=anchor)
        return "rejected"
    return pod_failure_policy_kept(created)


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
    """The document's Pod Failure Policy: FailJob on exit code 42 ends the Job after its first pod."""
    manifest = probe.manifest("job-pod-failure-policy-exit-42.yaml")
    name = manifest["metadata"]["name"]
    jobs = probe.watch_all("Job", focus=name)
    pods = probe.watch_pods()
    kept = create_with_policy(probe, "job-pod-failure-policy-exit-42.yaml", anchor=True)
    probe.check("failure-policy.policy-kept", kept, Basis.direct(CREATE))
    not_failed = jobs.await_outcome(
        f"Job {name} to fail",
        lambda o: o.named(name) is not None and o.latest.condition("Failed") is not None,
        within=BUDGET_S,
    )
    if jobs.named(name) is None:
        raise ProbeTimeout(f"Job {name} was never seen: {not_failed}")
    pods.catch_up()
    failed = failure(jobs.latest, probe.namespace, pods.names())
    probe.check("failure-policy.failed", failed, jobs.final_state(jobs.latest), evidence=not_failed)
    before_failed, rests_on = conditions_before_failed(jobs)
    probe.check("failure-policy.conditions-before-failed", before_failed, rests_on, evidence=not_failed)
    # every pod the Job ran, by uid: a pod that came and went while the watch was down would be missed
    every_pod = pods.during(0.0)
    probe.check("failure-policy.pods-run", len(pods.states), every_pod, evidence=not_failed)
    exits = sorted({str(p.container("main").exit_code) for p in pods.objects() if p.all_containers_terminated})
    probe.check("failure-policy.exit-codes", exits, every_pod, evidence=not_failed)
    probe.conclude()


def outcome(job: JobView) -> JsonDict:
    """How the Job ended: Complete, or Failed with its reason; and status.failed (the failures it counted)."""
    failed = job.condition("Failed")
    if failed is not None:
        return {"condition": "Failed", "reason": failed.reason, "failed": job.failed}
    return {"condition": "Complete" if job.condition("Complete") else None, "failed": job.failed}


def test_evicted_pod_is_ignored_through_the_disruption_target_rule(probe: Probe) -> None:
    """The document's Pod Failure Policy: the Ignore rule on DisruptionTarget; an evicted pod does not count."""
    manifest = probe.manifest("job-evicted-pod-ignored.yaml")
    name = manifest["metadata"]["name"]
    jobs: Observer[JobView] = probe.watch_all("Job", focus=name)
    pods = probe.watch_pods()
    kept = create_with_policy(probe, "job-evicted-pod-ignored.yaml")
    probe.check("eviction.policy-kept", kept, Basis.direct(CREATE))
    pods.wait_for(f"Job {name}'s first pod to run", lambda o: running_ready(o) is not None, within=POD_START_BUDGET_S)
    first = running_ready(pods)
    assert first is not None
    evicted_at = probe.evict(first.name)
    unfinished = jobs.await_outcome(
        f"Job {name} to complete or fail",
        lambda o: o.named(name) is not None and o.latest.finished,
        within=EVICTION_BUDGET_S,
    )
    pods.catch_up()
    probe.check(
        "eviction.disruption-target",
        pods.first_condition(first, "DisruptionTarget"),
        pods.sighted(pods.condition_sighting(first, "DisruptionTarget"), evicted_at, first),
    )
    if (late := finished_before_eviction(pods.states.get(key_of(first), first))) is not None:
        probe.check_not_observable("eviction.job-outcome", late)
        probe.check_not_observable("eviction.pods-run", late)
    else:
        ended = jobs.final_state(jobs.latest)
        probe.check("eviction.job-outcome", outcome(jobs.latest), ended, evidence=unfinished)
        probe.check("eviction.pods-run", len(pods.states), pods.during(0.0), evidence=unfinished)
    probe.conclude()


def finished_before_eviction(evicted: PodView) -> str | None:
    """Why the eviction stopped no running pod, if it did not: its container had already done its 12 s of work.

    The pod traps SIGTERM and exits 143, so exit 0 means the work was over before the eviction came. Seen live
    (v1.26.7, REPEAT=3 with 26 workers on 2 cores): the kubelet reported the pod Running 22 s after its
    container had started, 10 s after it had finished; the Job then completed through that pod and the Ignore
    rule was never tried. The Job's outcome says nothing about the rule then."""
    ended = container_exit(evicted)
    if ended["exitCode"] != 0:
        return None
    return (
        f"pod {evicted.name}'s container had finished its work (exit 0, {ended['reason']}) before the eviction: the "
        "kubelet reported the pod Running late, so no running pod was evicted and the Ignore rule was not tried"
    )
