"""activeDeadlineSeconds on a Pod versus on a Job.

Document active-deadline-pod-vs-job ("KubernetesのactiveDeadlineSecondsはJobとPodでちょっと違う",
kind v1.21.1): a Pod past its deadline is failed and killed by the kubelet, and stays (API object, logs,
exited container on the node); a Job past its deadline is failed by the job controller, which deletes its
active pod, so the pod and its container are gone. With both deadlines set, the shorter one decides.

Each probe watches the Job and every pod of its namespace from before it creates anything, records when
each transition happened relative to the deadline that caused it, reads the events and the node, and
checks the claims of expectations/active_deadline.yaml for the version the API server reports.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

import pytest

from harness.core.basis import Basis
from harness.core.observe import Observer, ProbeTimeout
from harness.core.observe_readings import PodObserver, conditions_before_failed
from harness.core.probe import Probe
from harness.core.probe_helpers import DEADLINE_SLACK_S, container_exit, finished_at, written_instants
from harness.core.transport import JsonDict
from harness.core.views import JobView, PodView, parse_time

pytestmark = pytest.mark.probe("active_deadline")

# How long the Job's events may trail the status write that caused them (the event broadcaster is asynchronous).
EVENT_SETTLE_S = 10.0
# How long a deleted pod's container may stay on the node: the kubelet's container garbage collection
# runs once a minute (pkg/kubelet/kubelet.go ContainerGCPeriod), so two periods bound it.
CONTAINER_REMOVAL_BOUND_S = 150.0


def seconds_between(later: str | None, earlier: datetime | None) -> float | None:
    moment = parse_time(later)
    return None if moment is None or earlier is None else (moment - earlier).total_seconds()


def deadline_of(start: str | None, seconds: int) -> datetime | None:
    started = parse_time(start)
    return None if started is None else started + timedelta(seconds=seconds)


def pod_outcome(pod: PodView) -> JsonDict:
    return {"phase": pod.phase, "reason": pod.reason, "message": pod.message}


def sigterm_to_last_beat(pod: PodView) -> float | None:
    """Seconds from the container's SIGTERM instant to its last heartbeat, on the node's kernel clock.

    The deadline pods write "sigterm <uptime>" and then "alive <uptime>" every 0.1 s to /dev/termination-log,
    which the kubelet copies into the terminated state's message: the last beat is the container's end (its
    SIGKILL) to within one beat, never after it. None when either is missing (no message, or no SIGTERM seen).
    """
    main = next((c for c in pod.containers if c.name == "main"), None)
    sigterm: float | None = None
    last: float | None = None
    for name, instant in written_instants(main.message if main else None):
        if name == "sigterm" and sigterm is None:
            sigterm = instant
        elif name == "alive":
            last = instant
    return None if sigterm is None or last is None else round(last - sigterm, 2)


def job_wait_s(manifest: JsonDict) -> float:
    """How long `run_job` waits, from the Job's creation, for it to finish: the later of its two deadlines, a
    first back-off and pod start-up (60 s), and the slack every deadline wait gets."""
    deadline = manifest["spec"].get("activeDeadlineSeconds") or 0
    pod_deadline = manifest["spec"]["template"]["spec"].get("activeDeadlineSeconds") or 0
    return float(max(deadline, pod_deadline) + 60 + DEADLINE_SLACK_S)


def not_failed(manifest: JsonDict) -> str:
    """What the Job-failure claims observe of a Job that had no Failed condition when the probe stopped waiting.

    A value, not a timeout: where the controller never acts on the deadline (it lost its timer and nothing
    else syncs the Job), "not failed within the wait" is what the claims expect, with the wait in it.
    """
    return f"not failed within {job_wait_s(manifest):.0f} s of its creation"


def job_failure(job: JobView, manifest: JsonDict) -> JsonDict | str:
    failed = job.condition("Failed")
    return not_failed(manifest) if failed is None else {"reason": failed.reason, "message": failed.message}


def controller_event_reasons(events: Iterable[JsonDict], job: str) -> list[str]:
    """The distinct reasons of the events about this Job, sorted (their timestamps have one-second resolution)."""
    reasons = set()
    for event in events:
        involved = event.get("involvedObject") or event.get("regarding") or {}
        if involved.get("kind") == "Job" and involved.get("name") == job:
            reasons.add(str(event.get("reason")))
    return sorted(reasons)


def job_event_reasons_settled(probe: Probe, job: str, awaited: str, within_s: float = EVENT_SETTLE_S) -> list[str]:
    """The Job's event reasons, read again (once a second, at most `within_s`) until `awaited` is among them.

    Events are posted after the status write that causes them, by the controller's event broadcaster, on its own
    time: live on 1.37.2 the Job's Failed condition and its DeadlineExceeded event came in the same sync, and a
    single read right after the condition missed the event. An event that never comes is what the claim sees.
    """
    deadline = probe.transport.now() + within_s
    reasons = controller_event_reasons(probe.events(), job)
    while awaited not in reasons and probe.transport.now() < deadline:
        probe.transport.pause(1.0)
        reasons = controller_event_reasons(probe.events(), job)
    return reasons


def only_pod(pods: PodObserver) -> PodView:
    seen = pods.objects()
    assert len(seen) == 1, f"expected the Job to create exactly one pod, saw {[pod.name for pod in seen]}"
    return seen[0]


def failed_at(job: JobView) -> str | None:
    failed = job.condition("Failed")
    return None if failed is None else failed.last_transition_time


def check_pod_failed_by_its_deadline(probe: Probe, pods: PodObserver, name: str, deadline_s: int) -> PodView:
    """The kubelet's side (the document's pod-01): Failed/DeadlineExceeded, killed, logs kept.

    The kill is judged twice: from the deadline on the server's clock (one-second timestamps, the kubelet's
    next sync in between) and, for the grace it used, from the container's own SIGTERM to its last heartbeat.

    A container that is not killed in time is what the claims then observe (still running), not an error.
    """
    not_killed = pods.await_outcome(
        f"pod {name}'s container to be killed after its deadline",
        lambda o: (pod := o.named(name)) is not None and pod.all_containers_terminated,
        within=deadline_s + DEADLINE_SLACK_S,
        veto=lambda o: f"pod {name} was deleted" if (pod := o.named(name)) and o.is_deleted(pod) else None,
    )
    pod = pods.named(name)
    if pod is None:
        raise ProbeTimeout(f"pod {name} was never seen: {not_killed}")
    left = pods.final_state(pod)  # its status as the kubelet left it
    probe.check("pod-deadline.status", pod_outcome(pod), left, evidence=not_killed)
    probe.check("pod-deadline.killed", container_exit(pod), left, evidence=not_killed)
    probe.check(
        "pod-deadline.killed-after-deadline",
        seconds_between(finished_at(pod), deadline_of(pod.raw["status"].get("startTime"), deadline_s)),
        left,
        evidence=not_killed,
    )
    probe.check("pod-deadline.killed-after-sigterm", sigterm_to_last_beat(pod), left, evidence=not_killed)
    lines = probe.logs(name, "main").split()
    probe.check("pod-deadline.logs-kept", bool(lines) and lines[0] == "1", Basis.direct("the container's log"))
    return pod


def check_container_on_node(probe: Probe, claim: str, pod: PodView, expected_states: set[str]) -> None:
    state = probe.wait_on_node(pod, "main", until=expected_states, within=CONTAINER_REMOVAL_BOUND_S)
    if state is None:
        probe.check_not_observable(claim, probe.why_not_on_node(pod, "main"))
    else:
        probe.check(claim, state, Basis.direct("the node's container list"))


def run_job(probe: Probe, manifest_name: str) -> tuple[Observer[JobView], PodObserver, JsonDict, str | None]:
    """Watch Jobs and pods, create the Job, and wait until it has a Failed (or Complete) condition.

    The last item says how the wait ended when the Job did not finish in time (None when it did): the claims
    about the Job then judge what was seen, with that as their evidence.
    """
    manifest = probe.manifest(manifest_name)
    name = manifest["metadata"]["name"]
    jobs: Observer[JobView] = probe.watch_all("Job", focus=name)
    pods = probe.watch_pods()
    probe.create(manifest, anchor=True)
    unfinished = jobs.await_outcome(
        f"Job {name} to finish",
        lambda o: o.named(name) is not None and o.latest.finished,
        within=job_wait_s(manifest),
    )
    if jobs.named(name) is None:
        raise ProbeTimeout(f"Job {name} was never seen: {unfinished}")
    pods.catch_up()
    return jobs, pods, manifest, unfinished


def check_failed_at_the_job_deadline(
    probe: Probe, claim: str, jobs: Observer[JobView], manifest: JsonDict, unfinished: str | None
) -> None:
    """Seconds from the Job's deadline to its Failed condition, or `not_failed` when it had none."""
    job = jobs.latest
    deadline = deadline_of(job.start_time, manifest["spec"]["activeDeadlineSeconds"])
    moment = failed_at(job)
    observed = not_failed(manifest) if moment is None else seconds_between(moment, deadline)
    probe.check(claim, observed, jobs.final_state(job), evidence=unfinished)


def check_job_failure(
    probe: Probe, claim: str, jobs: Observer[JobView], manifest: JsonDict, unfinished: str | None
) -> None:
    """How the Job failed (its Failed condition's reason and message), as the Job was left, or `not_failed`."""
    probe.check(claim, job_failure(jobs.latest, manifest), jobs.final_state(jobs.latest), evidence=unfinished)


def settle_job_pods(pods: PodObserver, within: float) -> str | None:
    """Wait until every pod of the Job is gone, or stopped and not being deleted: its final state.

    Returns None when they settled, else what was last seen: a pod the controller should have deleted and
    that keeps running is an observation for the claims, not an error.
    """

    def settled(o: Observer[PodView]) -> bool:
        return bool(o.states) and all(
            uid in o.deleted or (pod.all_containers_terminated and not pod.deletion_timestamp)
            for uid, pod in o.states.items()
        )

    return pods.await_outcome("the Job's pods to be gone, or stopped and not being deleted", settled, within=within)


# ---------------------------------------------------------------------------------------------- Pod


@pytest.mark.alone("a loaded kubelet notices the deadline late: killed-after-deadline")  # docs/parallel-load.md
def test_pod_deadline(probe: Probe) -> None:
    """The document's pod-01: the kubelet fails the pod (phase Failed, reason DeadlineExceeded, its message),
    kills the container (exit 137) one grace period after the deadline (SIGKILL 5 s after its SIGTERM, on
    the container's clock); logs and the exited container stay.
    """
    manifest = probe.manifest("pod-active-deadline.yaml")
    pods = probe.watch_pods(focus="pod-01")
    probe.create(manifest, anchor=True)
    pod = check_pod_failed_by_its_deadline(probe, pods, "pod-01", manifest["spec"]["activeDeadlineSeconds"])
    pods.observe_for(5)
    probe.check("pod-deadline.pod-remains", not pods.gone, pods.final_state(pod))
    check_container_on_node(probe, "pod-deadline.container-on-node", pod, {"exited"})
    probe.conclude()


# ---------------------------------------------------------------------------------------------- Job


@pytest.mark.alone(
    "a loaded kubelet ends the pod late, and the Job fails after it: failed-after-deadline"
)  # docs/parallel-load.md
def test_job_deadline(probe: Probe) -> None:
    """The document's job-01: the job controller fails the Job (DeadlineExceeded, its message) and deletes
    the active pod (SuccessfulDelete); the pod and, within a bound, its container are gone.

    Where the controller loses its deadline timer at the pod's creation (JobReadyPods on, no k/k#110294:
    1.24.0-beta.0 to 1.24.2) nothing syncs the Job after its deadline: the claims then observe a Job not failed
    within the wait, its pod kept and its container running.
    """
    jobs, pods, manifest, unfinished = run_job(probe, "job-active-deadline.yaml")
    job = jobs.latest
    check_job_failure(probe, "job-deadline.failed", jobs, manifest, unfinished)
    before_failed, rests_on = conditions_before_failed(jobs)
    probe.check("job-deadline.conditions-before-failed", before_failed, rests_on, evidence=unfinished)
    check_failed_at_the_job_deadline(probe, "job-deadline.failed-after-deadline", jobs, manifest, unfinished)
    unsettled = settle_job_pods(pods, within=DEADLINE_SLACK_S)
    pod = only_pod(pods)
    probe.check("job-deadline.active-pod-deleted", pods.is_deleted(pod), pods.final_state(pod), evidence=unsettled)
    reasons = job_event_reasons_settled(probe, job.name, "DeadlineExceeded")
    probe.check("job-deadline.events", reasons, Basis.direct("the namespace's events"))
    check_container_on_node(probe, "job-deadline.container-removed", pod, {"removed"})
    probe.conclude()


@pytest.mark.alone("a loaded kubelet notices the deadline late: killed-after-deadline")  # docs/parallel-load.md
def test_job_with_shorter_pod_deadline(probe: Probe) -> None:
    """The document's job-02: the pod fails on its own deadline first; with backoffLimit 0 the Job fails
    with BackoffLimitExceeded, and the pod (Failed, DeadlineExceeded) and its exited container remain.
    """
    jobs, pods, manifest, unfinished = run_job(probe, "job-pod-deadline-shorter.yaml")
    check_job_failure(probe, "job-backoff.failed", jobs, manifest, unfinished)
    pod = check_pod_failed_by_its_deadline(
        probe, pods, only_pod(pods).name, manifest["spec"]["template"]["spec"]["activeDeadlineSeconds"]
    )
    pods.observe_for(5)
    probe.check("job-backoff.pod-remains", not pods.is_deleted(pod), pods.final_state(pod))
    check_container_on_node(probe, "job-backoff.container-on-node", pod, {"exited"})
    probe.conclude()


def test_job_with_shorter_job_deadline(probe: Probe) -> None:
    """The document's job-03: the Job's deadline passes first: DeadlineExceeded, the pod is deleted and its
    container removed, although the pod's own deadline had not passed.

    Where the controller loses its deadline timer at the pod's creation (1.24.0-beta.0 to 1.24.2) the first sync
    after the Job's deadline is the pod's own failure: BackoffLimitExceeded (backoffLimit 0), the pod kept.
    """
    jobs, pods, manifest, unfinished = run_job(probe, "job-deadline-shorter.yaml")
    check_job_failure(probe, "job-shorter.failed", jobs, manifest, unfinished)
    check_failed_at_the_job_deadline(probe, "job-shorter.failed-after-deadline", jobs, manifest, unfinished)
    unsettled = settle_job_pods(pods, within=DEADLINE_SLACK_S)
    pod = only_pod(pods)
    probe.check("job-shorter.active-pod-deleted", pods.is_deleted(pod), pods.final_state(pod), evidence=unsettled)
    check_container_on_node(probe, "job-shorter.container-removed", pod, {"removed"})
    probe.conclude()


def retries_ended_before_the_job_deadline(
    probe: Probe, jobs: Observer[JobView], pods: PodObserver, deadline_s: int, retries: list[PodView]
) -> tuple[list[PodView], str, Basis]:
    """The retries already seen Failed or Succeeded before the Job's deadline, the instants that say so, and what
    that rests on (a gap before the deadline could hide a retry's end, or move the startTime's sighting).

    The deadline is placed on the watch clock from the first sighting of the Job's startTime: the server
    writes startTime in whole seconds, so the deadline lies within the second before that sighting plus
    `deadline_s`; a retry counts as ended only when it was seen ended before that second began.
    """
    started = jobs.first_sighting(lambda _, view: view.uid == jobs.latest.uid and view.start_time is not None)
    if started is None:
        return [], "", jobs.during(0.0, None, jobs.latest)
    deadline = started.t + deadline_s - 1.0
    ended_at = {pod.uid: pods.first_seen(pod, lambda view: view.phase in ("Failed", "Succeeded")) for pod in retries}
    ended = [pod for pod in retries if (t := ended_at[pod.uid]) is not None and t < deadline]
    instants = ", ".join(f"{pod.name} at {probe.timeline.rel(ended_at[pod.uid] or 0.0):.1f} s" for pod in ended)
    rests_on = Basis.of(jobs.sighted(started, 0.0), pods.during(started.t, deadline, retries))
    return (
        ended,
        f"the Job's deadline came after {probe.timeline.rel(deadline):.1f} s; ended before it: {instants}",
        rests_on,
    )


def check_containers_left(probe: Probe, pods: PodObserver, first: PodView, retries: list[PodView]) -> None:
    """The states of the Job's containers on the node once the deleted retries' containers had time to go.

    Only a deleted pod's container is waited for: the kubelet keeps the container of a pod that still exists.
    """
    states = {
        pod.uid: probe.wait_on_node(pod, "main", {"removed"}, CONTAINER_REMOVAL_BOUND_S)
        if pods.is_deleted(pod)
        else probe.node_container_state(pod, "main")
        for pod in retries
    }
    states[first.uid] = probe.node_container_state(first, "main")
    if None in states.values():
        unseen = next(pod for pod in (*retries, first) if states[pod.uid] is None)
        probe.check_not_observable("job-retry.containers-left-on-node", probe.why_not_on_node(unseen, "main"))
    else:
        left = sorted(str(s) for s in states.values() if s != "removed")
        probe.check("job-retry.containers-left-on-node", left, Basis.direct("the node's container list"))


@pytest.mark.alone(
    "from 1.31 the Job fails once its pod has terminated: a loaded kubelet adds in (failed-after-deadline)"
)  # docs/parallel-load.md
def test_job_deadline_during_retry(probe: Probe) -> None:
    """The document's job-04: the first pod fails on its own deadline and stays; the retry is active when the
    Job's deadline passes and is deleted; one of the Job's containers remains on the node.

    Before 1.27 the job controller creates the first retry as soon as the first pod failed (its back-off came
    from the queue's requeue count, 0 for the first failure; k/k#114516 in v1.27.0-alpha.1 gives it 10 s), so
    on a quick node the retry can reach its own deadline before the Job's where the kubelet reports a pod Failed at
    its deadline (seen on v1.21.14; from k/k#108366 and its picks in v1.22.9 and v1.23.6, CHANGELOG-1.22/-1.23, it
    waits for the containers to stop, 5 s here, and v1.22.17's retry was still active): then no retry was active
    at the Job's deadline, and the two claims about it are not observable (said with the instants).
    """
    jobs, pods, manifest, unfinished = run_job(probe, "job-deadline-during-retry.yaml")
    check_job_failure(probe, "job-retry.failed", jobs, manifest, unfinished)
    check_failed_at_the_job_deadline(probe, "job-retry.failed-after-deadline", jobs, manifest, unfinished)
    unsettled = settle_job_pods(pods, within=DEADLINE_SLACK_S)
    first, *retries = pods.objects()
    outcome = {**pod_outcome(first), "deleted": pods.is_deleted(first)}
    probe.check("job-retry.first-pod", outcome, pods.final_state(first), evidence=unsettled)
    ended, instants, when = retries_ended_before_the_job_deadline(
        probe, jobs, pods, manifest["spec"]["activeDeadlineSeconds"], retries
    )
    active = [pod for pod in retries if pod not in ended]
    why = f"no retry was active at the Job's deadline: {instants} (watch clock, from the Job's creation)"
    if ended and not active:
        probe.check_not_observable("job-retry.retries-deleted", why)
    else:
        deleted = [pods.is_deleted(pod) for pod in active]
        probe.check(
            "job-retry.retries-deleted", deleted, Basis.of(when, *map(pods.final_state, active)), evidence=unsettled
        )
    if ended:
        probe.check_not_observable("job-retry.containers-left-on-node", why)
    else:
        check_containers_left(probe, pods, first, retries)
    probe.conclude()
