"""Sidecar containers (KEP-753): the order in which a pod's main container and its sidecars stop.

A sidecar is an init container with `restartPolicy: Always`: it starts before the main containers and runs
beside them. Where the feature is on (SidecarContainers beta, on by default from 1.29; GA in 1.33) the kubelet
stops a deleted pod's main containers first and each sidecar only once the main containers and every later
sidecar have ended (k/k#120620), and a Job's pod completes when its main container exits: the sidecars are
stopped then, in the same order. Where it is not, the API server refuses the field (Strict field validation,
1.25-1.27) or drops it (1.28, where the gate is off; before 1.25, unknown fields are dropped): the first sidecar
is then a plain init container that never ends, so the main container never starts and a Job never completes.

Every container writes its instants (started, SIGTERM, exit, and a heartbeat in between) on the node's kernel
clock (/proc/uptime, 10 ms resolution), one clock for every container of the node, so the order and the gaps
between them are exact to ~0.02 s. They are read from each container's terminated state (the kubelet copies
/dev/termination-log into it).
"""

from __future__ import annotations

import copy

import pytest

from harness.core.basis import Basis
from harness.core.observe import ProbeTimeout
from harness.core.observe_readings import cannot_start
from harness.core.probe import Probe
from harness.core.probe_helpers import (
    DEADLINE_SLACK_S,
    POD_START_BUDGET_S,
    STOP_SLACK_S,
    placeholder_end,
    pod_failure_policy_kept,
    written_instants,
)
from harness.core.transport import JsonDict, Rejected
from harness.core.views import ContainerView, JobView, PodView

pytestmark = pytest.mark.probe("sidecar_termination")

SIDECARS = ("sidecar-a", "sidecar-b")  # in the order they start
# Once sidecar-a runs: sidecar-b and then main start within seconds where sidecars exist; where sidecar-a is a plain
# init container, main has not started when this has passed.
MAIN_START_S = 20.0
# The pod's grace: every container stops within it (each takes 2 s after its SIGTERM).
GRACE_S = 30.0
# The Job's activeDeadlineSeconds: what ends it where its pod never completes.
JOB_DEADLINE_S = 40.0
LAST_INSTANT = "alive"  # the heartbeat; the last one is kept
# The Job's claims that read what followed main's end: not observable where main never ran.
JOB_CLAIMS_ON_MAINS_END = (
    "job.pod-phase",
    "job.sidecar-sigterm-order",
    "job.sidecar-b-sigterm-after-main-exit",
    "job.exits",
)
CREATE = "the API server's answer to the create"
# The Job claims a refused Job leaves without anything to observe (each with 'job-fail.' for the failing main).
JOB_CLAIMS_OF_A_RUN = ("job.outcome", *JOB_CLAIMS_ON_MAINS_END)


def pod_spec(manifest: JsonDict) -> JsonDict:
    """The pod spec of a Pod or of a Job's template."""
    spec: JsonDict = manifest["spec"]
    return spec["template"]["spec"] if manifest["kind"] == "Job" else spec


def without_restart_policy(manifest: JsonDict) -> JsonDict:
    """The manifest with no restartPolicy on its init containers: what a server without the field keeps of it."""
    stripped = copy.deepcopy(manifest)
    for container in pod_spec(stripped)["initContainers"]:
        container.pop("restartPolicy", None)
    return stripped


def create_with_sidecars(probe: Probe, manifest: JsonDict, anchor: bool = False) -> tuple[JsonDict, str]:
    """Create the object; return it and what the server kept of its init containers' restartPolicy: 'Always',
    'None' (dropped), or 'rejected' (refused: the same object is then created without the field)."""
    try:
        created = probe.create(manifest, anchor=anchor)
    except Rejected as rejected:
        if "restartPolicy" not in rejected.message:
            raise
        return probe.create(without_restart_policy(manifest), anchor=anchor), "rejected"
    kept = sorted({str(c.get("restartPolicy")) for c in pod_spec(created)["initContainers"]})
    return created, ",".join(kept)


def refusal(rejected: Rejected) -> str:
    """What the server said, without the object's name: what follows 'strict decoding error: ' (unknown fields),
    else the whole message."""
    message = rejected.message
    marker = "strict decoding error: "
    return f"{rejected.status} {message.split(marker, 1)[1] if marker in message else message}"


def status_of(pod: PodView, name: str) -> ContainerView | None:
    """A container's status, init (sidecar) or main, or None before it has one."""
    return next((c for c in (*pod.init_containers, *pod.containers) if c.name == name), None)


def is_running(pod: PodView, name: str) -> bool:
    status = status_of(pod, name)
    return status is not None and status.state == "running"


def none_running(pod: PodView) -> bool:
    """No container of the pod runs any more (and it has statuses at all)."""
    statuses = (*pod.init_containers, *pod.containers)
    return bool(statuses) and not any(c.state == "running" for c in statuses)


def instants_of(pod: PodView, name: str) -> dict[str, float]:
    """The instants a container wrote ('sigterm 1234.56'), first occurrence, the heartbeat's last one."""
    status = status_of(pod, name)
    instants: dict[str, float] = {}
    for what, instant in written_instants(status.message if status is not None else None):
        if what == LAST_INSTANT:
            instants[what] = instant
        else:
            instants.setdefault(what, instant)
    return instants


def every_instant(probe: Probe, pod: PodView, names: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """Each container's instants; on the timeline relative to the first SIGTERM any of them wrote."""
    instants = {name: instants_of(pod, name) for name in names}
    sigterms = [i["sigterm"] for i in instants.values() if "sigterm" in i]
    origin = min(sigterms, default=0.0)
    relative = {name: {k: round(v - origin, 2) for k, v in i.items()} for name, i in instants.items()}
    since = {"since the first SIGTERM (s)": relative}
    probe.timeline.observed(probe.transport.now(), f"containers/{pod.name}", "log", since)
    return instants


def sigterm_order(instants: dict[str, dict[str, float]]) -> list[str]:
    """The containers that got SIGTERM, in the order they got it on their own clock."""
    return sorted((name for name, i in instants.items() if "sigterm" in i), key=lambda name: instants[name]["sigterm"])


def gap(instants: dict[str, dict[str, float]], ended: str, signalled: str) -> float | None:
    """Seconds from one container's exit to the next one's SIGTERM (None when either is missing)."""
    exit_at, sigterm_at = instants[ended].get("exit"), instants[signalled].get("sigterm")
    if exit_at is None or sigterm_at is None:
        return None
    return round(sigterm_at - exit_at, 2)


def lost_ends(pod: PodView, names: tuple[str, ...]) -> list[str]:
    """The containers whose own end the kubelet lost: terminated as ContainerStatusUnknown (exit 137, its
    placeholder), so the instants the container wrote into its termination message are gone with it."""
    return [name for name in names if (status := status_of(pod, name)) is not None and placeholder_end(status)]


def exits(pod: PodView, names: tuple[str, ...]) -> JsonDict:
    """How each container ended: {exitCode, reason} of its state (a terminated container's end; a waiting one's
    reason and no exit code, as the kubelet leaves a container that never ran); both None before it has a status."""
    out: JsonDict = {}
    for name in names:
        status = status_of(pod, name)
        out[name] = status.exit if status is not None else {"exitCode": None, "reason": None}
    return out


# --------------------------------------------------------------------------------------- a deleted pod


def test_sidecars_stop_after_the_main_container_in_reverse_order(probe: Probe) -> None:
    """KEP-753: a deleted pod's main container gets SIGTERM first; sidecar-b only once main has ended, sidecar-a
    once sidecar-b has. Where the field is refused or dropped, sidecar-a never ends as an init container: main
    never starts, and the deletion stops sidecar-a alone.
    """
    names = ("main", *SIDECARS)
    created, kept = create_with_sidecars(probe, probe.manifest("pod-sidecars-timeline.yaml"))
    created_at = probe.transport.last_call_started()
    probe.check("pod.restart-policy-kept", kept, Basis.direct(CREATE))
    pods = probe.watch_pod(PodView.from_object(created))
    pods.wait_for(
        "sidecar-a to run", lambda o: is_running(o.latest, "sidecar-a"), within=POD_START_BUDGET_S, veto=cannot_start
    )
    not_started = pods.await_outcome("main to run", lambda o: is_running(o.latest, "main"), within=MAIN_START_S)
    main_started = not_started is None
    probe.check("pod.main-started", main_started, pods.during(created_at), evidence=not_started)

    probe.delete_pod(pods.latest)
    running = pods.await_outcome(
        "every container of the deleted pod to stop",
        lambda o: none_running(o.latest),
        within=GRACE_S + STOP_SLACK_S,
        veto=lambda o: "the pod is gone, although a finalizer holds it" if o.gone else None,
    )
    pods.await_outcome(
        "the deleted pod's phase to be terminal",
        lambda o: o.latest.phase in ("Succeeded", "Failed"),
        within=STOP_SLACK_S if running is None else 0.0,
    )
    last = pods.latest
    ended = pods.final_state(last)
    instants = every_instant(probe, last, names)
    # Before k/k#102344 (1.22) the kubelet wrote ContainerStatusUnknown over a deleted pod's running init container
    # before killing it, and removed it once it had exited: its termination message, with its instants, is gone.
    lost = lost_ends(last, names)
    unreadable = f"the kubelet lost the end of {', '.join(lost)} (ContainerStatusUnknown): its instants went with it"
    if lost:
        probe.check_not_observable("pod.sigterm-order", unreadable)
    else:
        probe.check("pod.sigterm-order", sigterm_order(instants), ended, evidence=running)
    # Each sidecar's SIGTERM after the exit of the container stopped before it: main, then sidecar-b.
    for claim, before, after in (
        ("pod.sidecar-b-sigterm-after-main-exit", "main", "sidecar-b"),
        ("pod.sidecar-a-sigterm-after-sidecar-b-exit", "sidecar-b", "sidecar-a"),
    ):
        if not main_started:
            probe.check_not_observable(claim, f"main and sidecar-b never started: {not_started}")
        elif lost:
            probe.check_not_observable(claim, unreadable)
        else:
            probe.check(claim, gap(instants, before, after), ended, evidence=running)
    probe.check("pod.exits", exits(last, names), ended, evidence=running)
    probe.check("pod.phase", last.phase, ended, evidence=running)
    probe.conclude()


# ------------------------------------------------------------------------------------------------ a Job


def job_outcome(job: JobView) -> JsonDict:
    """How the Job ended: Complete, or Failed with its reason (None while it runs)."""
    failed = job.condition("Failed")
    if failed is not None:
        return {"condition": "Failed", "reason": failed.reason}
    return {"condition": "Complete" if job.condition("Complete") else None}


def run_the_job(probe: Probe, manifest_file: str, claims: str) -> None:
    """Create the Job, wait until it finishes, and check the `claims` family of Job claims ('job', 'job-fail')
    on it and on its pod (the first: its only one, unless a pod failure policy it does not match retries)."""
    names = ("main", *SIDECARS)
    manifest = probe.manifest(manifest_file)
    name = manifest["metadata"]["name"]
    jobs = probe.watch_all("Job", focus=name)
    pods = probe.watch_pods()
    with_policy = "podFailurePolicy" in manifest["spec"]
    try:
        created, kept = create_with_sidecars(probe, manifest, anchor=True)
    except Rejected as rejected:
        # Strict validation where the field is still unknown (1.24.0-beta.0, 1.25.0-alpha.3 to beta.0): no Job
        if not with_policy or "podFailurePolicy" not in rejected.message:
            raise
        probe.check(f"{claims}.failure-policy-kept", "rejected", Basis.direct(CREATE))
        why = f"the API server refused the Job: {refusal(rejected)}"
        for claim in JOB_CLAIMS_OF_A_RUN:
            probe.check_not_observable(claim.replace("job.", f"{claims}.", 1), why)
        probe.conclude()
        return
    if claims == "job":  # the same answer for the Job with a failing main: checked once
        probe.check("job.restart-policy-kept", kept, Basis.direct(CREATE))
    if with_policy:
        probe.check(f"{claims}.failure-policy-kept", pod_failure_policy_kept(created), Basis.direct(CREATE))
    unfinished = jobs.await_outcome(
        f"Job {name} to complete or fail",
        lambda o: o.named(name) is not None and o.latest.finished,
        within=POD_START_BUDGET_S + JOB_DEADLINE_S + DEADLINE_SLACK_S,
    )
    if jobs.named(name) is None:
        raise ProbeTimeout(f"Job {name} was never seen: {unfinished}")
    pods.catch_up()
    probe.check(f"{claims}.outcome", job_outcome(jobs.latest), jobs.final_state(jobs.latest), evidence=unfinished)
    if not pods.states:
        raise ProbeTimeout(f"Job {name}'s pod was never seen")
    pod = next(iter(pods.states.values()))
    main = status_of(pod, "main")
    if main is None or main.state != "terminated":
        why = f"main never ran to its end: {pod.summary()}"
        for claim in JOB_CLAIMS_ON_MAINS_END:
            probe.check_not_observable(claim.replace("job.", f"{claims}.", 1), why)
        probe.conclude()
        return
    ended = pods.final_state(pod)
    instants = every_instant(probe, pod, names)
    probe.check(f"{claims}.pod-phase", pod.phase, ended, evidence=unfinished)
    probe.check(f"{claims}.sidecar-sigterm-order", sigterm_order(instants), ended, evidence=unfinished)
    after_main = gap(instants, "main", "sidecar-b")
    probe.check(f"{claims}.sidecar-b-sigterm-after-main-exit", after_main, ended, evidence=unfinished)
    probe.check(f"{claims}.exits", exits(pod, names), ended, evidence=unfinished)
    probe.conclude()


def test_a_job_completes_when_its_main_container_exits(probe: Probe) -> None:
    """KEP-753: a Job's pod whose main container exits 0 succeeds, its sidecars stopped after main in reverse
    order, and the Job completes. Where the field is refused or dropped, sidecar-a never ends, main never runs,
    and the Job's 40 s activeDeadlineSeconds fails it.
    """
    run_the_job(probe, "job-sidecars-main-exits-0.yaml", "job")


@pytest.mark.alone(
    "a loaded kubelet sees main's exit late: job-fail.sidecar-b-sigterm-after-main-exit"
)  # docs/parallel-load.md
def test_a_job_fails_through_its_pod_failure_policy_when_its_main_container_exits_1(probe: Probe) -> None:
    """KEP-753 with a pod failure policy: main exits 1, the sidecars are stopped after it as when it exits 0, the
    pod ends Failed, and the rule FailJob on main's exit code 1 fails the Job (reason PodFailurePolicy) although
    its backoffLimit would retry. Where the sidecar field is refused or dropped, main never runs and the Job's
    deadline fails it, whatever its policy. Where Strict validation refuses podFailurePolicy itself, still unknown
    (1.24.0-beta.0, 1.25.0-alpha.3 to 1.25.0-beta.0), there is no Job: its claims are not observable.
    """
    run_the_job(probe, "job-sidecars-main-exits-0.main-exits-1.yaml", "job-fail")
