"""What happens, in order, when a pod is deleted: deletion fields, preStop, SIGTERM, SIGKILL.

Document safe-pod-termination ("アルパカでもわかる安全なPodの終了"): the API server sets
deletionTimestamp = time of the delete + grace and deletionGracePeriodSeconds = grace; the kubelet runs
the preStop hook, then sends SIGTERM, then SIGKILL when the grace runs out. A preStop that ends in time
leaves the container what remains of the grace (at least 2 s); one that overruns it is cut off at the
grace, and SIGTERM is then followed by SIGKILL 2 s later. Not from 1.22 to 1.27: there the kubelet gave the
container the whole grace again after the hook (k/k#115817, fixed by k/k#115835 in 1.28), which the first
live run (1.27.3) showed: SIGKILL 15 s after the delete for a 3 s hook and a 10 s grace.

Instants are measured on both sides: the container writes the instants it sees on the node's kernel
clock (/proc/uptime, 10 ms resolution, so intervals between them are exact to ~0.02 s); the API server's
timestamps (deletionTimestamp, finishedAt) have one-second resolution, so intervals between them carry
+-1 s, and the delete request's own time is taken on this machine's clock (kind runs on it).
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from harness.core.basis import Basis
from harness.core.identity import controller_uid, running_ready, successor
from harness.core.observe import Observer, key_of
from harness.core.observe_readings import PodObserver, delete_requested_at
from harness.core.probe import NotServed, Probe
from harness.core.probe_helpers import (
    POD_START_BUDGET_S,
    STOP_SLACK_S,
    container_exit,
    container_status,
    exit_status_kept,
    first_absent,
    lost_exit_status,
    written_instants,
)
from harness.core.transport import JsonDict
from harness.core.views import EndpointsView, PodView, parse_time

pytestmark = pytest.mark.probe("termination_order")

# How soon after the delete the endpoints controllers must have taken the pod out of its Service.
ENDPOINT_BOUND_S = 10.0
# The heartbeat the timeline pod writes from SIGTERM on: its last one is the container's end (SIGKILL).
LAST_INSTANT = "alive"
# Whether the kubelet kept the container's own end: every claim below that reads it (its exit, its finishedAt, the
# instants it wrote to its termination message) is not observable when it was lost.
EXIT_KEPT = "termination.exit-status-kept"


def container_instants(probe: Probe, pod: PodView) -> dict[str, float]:
    """The instants the container wrote down ('prestop-start 1234.56'), by name, first occurrence.

    Read from the terminated state's message (the container and its hook append every instant to
    /dev/termination-log, which the kubelet copies into the pod's status): the container's log is gone by
    then, as the kubelet removes a deleted pod's dead container at once. The log is read only when there is
    no message (a runtime that does not support termination messages).
    `alive` is the last heartbeat instead (the timeline pod beats every 0.1 s from SIGTERM on): the container's
    end on its own clock, to within one beat, never after it, as SIGKILL itself cannot be written down.
    They go into the timeline too, relative to the preStop's start on the container's own clock (the node's
    uptime cannot be placed exactly on the API server's or this machine's clock).
    """
    instants: dict[str, float] = {}
    written = pod.container("main").message or probe.logs(pod.name, "main")
    for name, instant in written_instants(written):
        if name == LAST_INSTANT:
            instants[name] = instant
        else:
            instants.setdefault(name, instant)
    origin = instants.get("prestop-start", min(instants.values(), default=0.0))
    relative = {name: round(value - origin, 2) for name, value in instants.items()}
    probe.timeline.observed(
        probe.transport.now(), f"container/{pod.name}", "log", {"since prestop-start (s)": relative}
    )
    return instants


def interval(instants: dict[str, float], start: str, end: str) -> float | None:
    if start in instants and end in instants:
        return round(instants[end] - instants[start], 2)
    return None


def finished_after_delete(finished_pod: PodView, deleted: PodView) -> float | None:
    """finishedAt minus the server's time of the delete, read from the state the delete first showed (`deleted`):
    a later delete rewrites deletionTimestamp and deletionGracePeriodSeconds.
    """
    main = container_status(finished_pod)
    finished, requested = parse_time(main.finished_at if main else None), delete_requested_at(deleted)
    if finished is None or requested is None:
        return None
    return (finished - requested).total_seconds()


class Deletion(NamedTuple):
    """A deleted pod as the probe saw it: when its container stopped, as the delete first showed it, and when."""

    last: PodView  # as last seen: the first state with every container stopped, unless they never stopped
    deleted: PodView  # the first state with a deletionTimestamp
    requested_at: float  # this machine's clock, when the delete was sent
    running: str | None  # None when the container stopped in time, else what was awaited and last seen
    ended: Basis  # what a reading of `last` rests on: the state the pod was left in
    deletion_seen: Basis  # what a reading of `deleted` rests on: the first state that showed the delete


def delete_and_observe(probe: Probe, manifest: JsonDict, grace_override: int | None = None) -> Deletion:
    """Start the pod, note this machine's clock, delete it, and watch until its container stopped.

    A container that never stops is an observation (`running` says so), not an error.
    """
    with probe.start_pod(manifest) as pod:
        requested_at = probe.transport.wall_clock()
        deleted_at = probe.delete_pod(pod.latest, grace_period_seconds=grace_override)
        grace = grace_override if grace_override is not None else manifest["spec"]["terminationGracePeriodSeconds"]
        running = pod.await_outcome(
            "the deleted pod's container to stop",
            lambda o: o.latest.all_containers_terminated,
            within=grace + STOP_SLACK_S,
            veto=lambda o: "the pod is gone, although a finalizer holds it" if o.gone else None,
        )
        sighting = pod.deletion_sighting(pod.latest)
        if sighting is None:
            raise AssertionError(f"pod {pod.latest.name} was never seen with a deletionTimestamp")
        deletion_seen = pod.sighted(sighting, deleted_at)
        return Deletion(pod.latest, sighting.view, requested_at, running, pod.final_state(pod.latest), deletion_seen)


def check_deletion_timestamp(probe: Probe, seen: Deletion, grace: int) -> None:
    deletion = parse_time(seen.deleted.deletion_timestamp)
    offset = None if deletion is None else round(deletion.timestamp() - seen.requested_at - grace, 2)
    probe.check("deletion.timestamp-is-request-plus-grace", offset, seen.deletion_seen)


# ------------------------------------------------------------------------------------ deletion fields


def test_deletion_fields_from_the_spec(probe: Probe) -> None:
    """The document's §1: deletionTimestamp = time of the delete + terminationGracePeriodSeconds (7 s here),
    deletionGracePeriodSeconds = terminationGracePeriodSeconds.
    """
    seen = delete_and_observe(probe, probe.manifest("pod-finalizer-traps-sigterm.grace-7s.yaml"))
    probe.check("deletion.grace-from-spec", seen.deleted.deletion_grace_period_seconds, seen.deletion_seen)
    check_deletion_timestamp(probe, seen, 7)
    probe.conclude()


def test_deletion_fields_with_a_grace_period_override(probe: Probe) -> None:
    """The same when DeleteOptions.gracePeriodSeconds (3 s) overrides the spec's 7 s: the override wins."""
    manifest = probe.manifest("pod-finalizer-traps-sigterm.grace-7s.yaml")
    seen = delete_and_observe(probe, manifest, grace_override=3)
    probe.check("deletion.grace-from-override", seen.deleted.deletion_grace_period_seconds, seen.deletion_seen)
    check_deletion_timestamp(probe, seen, 3)
    probe.conclude()


# -------------------------------------------------------------------------- preStop, SIGTERM, SIGKILL


@pytest.mark.alone(
    "the hook is counted from its exec: its start latency shortens killed-after-sigterm"
)  # docs/parallel-load.md
def test_prestop_within_the_grace_period(probe: Probe) -> None:
    """The document's §2-a: preStop (3 s) ends within the grace (10 s): SIGTERM follows it, and the container,
    which ignores SIGTERM, is SIGKILLed when the grace has run out, about 10 s after the delete: what the hook
    left of the grace (10 - 3 s) after SIGTERM, on the container's own clock.
    """
    seen = delete_and_observe(probe, probe.manifest("pod-prestop-timeline.within-grace.yaml"))
    pod, running = seen.last, seen.running
    instants = container_instants(probe, pod)
    reading_the_end = (
        "prestop-in-time.sigterm-after-prestop-start",
        "sigkilled.exit",
        "prestop-in-time.killed-after-delete",
        "prestop-in-time.killed-after-sigterm",
    )
    if exit_status_kept(probe, EXIT_KEPT, pod, seen.ended, reading_the_end):
        probe.check(
            "prestop-in-time.sigterm-after-prestop-start", interval(instants, "prestop-start", "sigterm"), seen.ended
        )
        probe.check("sigkilled.exit", container_exit(pod), seen.ended, evidence=running)
        probe.check(
            "prestop-in-time.killed-after-delete",
            finished_after_delete(pod, seen.deleted),
            Basis.of(seen.deletion_seen, seen.ended),
            evidence=running,
        )
        killed_after_sigterm = interval(instants, "sigterm", LAST_INSTANT)
        probe.check("prestop-in-time.killed-after-sigterm", killed_after_sigterm, seen.ended, evidence=running)
    probe.conclude()


@pytest.mark.alone(
    "the grace runs from the hook's exec: its start latency shortens sigterm-after-prestop-start"
)  # docs/parallel-load.md
def test_prestop_overrunning_the_grace_period(probe: Probe) -> None:
    """The document's §2-a: preStop (30 s) overruns the grace (5 s): it is cut off, SIGTERM comes at the end of
    the grace and SIGKILL a fixed 2 s later (the kubelet's minimumGracePeriodInSeconds), measured on the
    container's own clock from its SIGTERM instant to its last heartbeat.
    """
    seen = delete_and_observe(probe, probe.manifest("pod-prestop-timeline.overrunning-grace.yaml"))
    pod, running = seen.last, seen.running
    instants = container_instants(probe, pod)
    reading_the_end = (
        "prestop-overrun.sigterm-after-prestop-start",
        "prestop-overrun.prestop-cut-off",
        "sigkilled.exit",
        "prestop-overrun.killed-after-delete",
        "prestop-overrun.killed-after-sigterm",
    )
    if exit_status_kept(probe, EXIT_KEPT, pod, seen.ended, reading_the_end):
        probe.check(
            "prestop-overrun.sigterm-after-prestop-start", interval(instants, "prestop-start", "sigterm"), seen.ended
        )
        probe.check("prestop-overrun.prestop-cut-off", "prestop-end" not in instants, seen.ended)
        probe.check("sigkilled.exit", container_exit(pod), seen.ended, evidence=running)
        probe.check(
            "prestop-overrun.killed-after-delete",
            finished_after_delete(pod, seen.deleted),
            Basis.of(seen.deletion_seen, seen.ended),
            evidence=running,
        )
        killed_after_sigterm = interval(instants, "sigterm", LAST_INSTANT)
        probe.check("prestop-overrun.killed-after-sigterm", killed_after_sigterm, seen.ended, evidence=running)
    probe.conclude()


@pytest.mark.alone("a loaded kubelet acts on the delete late: finished-after-delete")  # docs/parallel-load.md
def test_sigterm_handled_after_prestop(probe: Probe) -> None:
    """The document's §2-a: preStop (2 s), then SIGTERM, which the container handles in 1 s and exits 0."""
    seen = delete_and_observe(probe, probe.manifest("pod-graceful-exit-after-prestop.prestop-2s.yaml"))
    pod, running = seen.last, seen.running
    instants = container_instants(probe, pod)
    reading_the_end = ("graceful.sigterm-after-prestop-start", "graceful.exit", "graceful.finished-after-delete")
    if exit_status_kept(probe, EXIT_KEPT, pod, seen.ended, reading_the_end):
        probe.check("graceful.sigterm-after-prestop-start", interval(instants, "prestop-start", "sigterm"), seen.ended)
        probe.check("graceful.exit", container_exit(pod), seen.ended, evidence=running)
        probe.check(
            "graceful.finished-after-delete",
            finished_after_delete(pod, seen.deleted),
            Basis.of(seen.deletion_seen, seen.ended),
            evidence=running,
        )
    probe.conclude()


# ------------------------------------------------------------------------------ owner (ReplicaSet)


def running_deployment_pod(pods: PodObserver) -> PodView:
    """Wait for the Deployment's pod to be Running and Ready, and return it."""
    pods.wait_for(
        "the Deployment's pod to be Running and Ready",
        lambda o: running_ready(o) is not None,
        within=POD_START_BUDGET_S,
    )
    pod = running_ready(pods)
    assert pod is not None
    return pod


def test_replicaset_replaces_a_pod_while_it_terminates(probe: Probe) -> None:
    """The document's §2-c: once a pod has its deletionTimestamp, its ReplicaSet no longer counts it and creates
    the replacement at once: the new pod exists while the old pod's container is still running (for its
    whole 10 s grace here, as it ignores SIGTERM).
    """
    pods = probe.watch_pods()
    probe.create(probe.manifest("deployment-slow-to-stop.yaml"))
    old = running_deployment_pod(pods)
    deleted_at = probe.delete_pod(old)
    owner, act = controller_uid(old), probe.act(deleted_at)
    waited = pods.await_outcome(
        "a replacement pod, and the old pod's container to stop",
        lambda o: (
            successor(o, owner, act) is not None
            and (o.is_deleted(old) or o.states[key_of(old)].all_containers_terminated)
        ),
        within=old.raw["spec"]["terminationGracePeriodSeconds"] + STOP_SLACK_S,
    )
    # Each instant from the state that first showed its event (by uid): the kubelet's final delete rewrites the
    # deletion fields, and the old pod's last state may be long after its container stopped.
    new = successor(pods, owner, act)  # the harness's rule (harness/core/identity.py); None: never replaced in time
    created = parse_time(new.view.raw["metadata"].get("creationTimestamp")) if new is not None else None
    # The old container's end as the kubelet first reported it, or its loss (before 1.27 a kubelet can remove the
    # container before it writes its end: the status goes back to waiting or gets a placeholder end).
    stopped = pods.first_sighting(
        lambda _, p: p.uid == old.uid and (p.all_containers_terminated or lost_exit_status(p) is not None)
    )
    lost = lost_exit_status(stopped.view) if stopped is not None else None
    main = container_status(stopped.view) if stopped is not None else None
    finished = parse_time(main.finished_at) if main is not None else None
    deletion = pods.deletion_sighting(old)
    requested = delete_requested_at(deletion.view) if deletion is not None else None
    replaced = pods.sighted(new, deleted_at)  # never seen: any pod since the delete could have been it
    if lost is not None:
        probe.check_not_observable("replacement.created-before-old-container-finished", lost)
    else:
        probe.check(
            "replacement.created-before-old-container-finished",
            None if created is None or finished is None else (finished - created).total_seconds(),
            Basis.of(replaced, pods.sighted(stopped, deleted_at, old)),
            evidence=waited,
        )
    probe.check(
        "replacement.created-right-after-delete",
        None if created is None or requested is None else (created - requested).total_seconds(),
        Basis.of(replaced, pods.sighted(deletion, deleted_at, old)),
        evidence=waited,
    )
    probe.conclude()


# ------------------------------------------------------------------------------- endpoints (Service)


def endpoint_of(observer: Observer[EndpointsView], pod: str) -> JsonDict | None:
    """The pod's entry in the Service's endpoints (any slice / the Endpoints object), or None if absent."""
    for uid, view in observer.states.items():
        if uid not in observer.deleted and pod in view.pods:
            return view.pods[pod]
    return None


def test_endpoint_removal_while_the_container_still_runs(probe: Probe) -> None:
    """The document's §2-b: the endpoints controllers take a deleted pod out of its Service as soon as its
    deletionTimestamp is set, independently of the kubelet: the endpoint turns not-ready/terminating in the
    EndpointSlice (or leaves it, before terminating endpoints existed) and leaves v1 Endpoints while the
    container, which ignores SIGTERM, is still running.
    """
    pods = probe.watch_pods()
    legacy: Observer[EndpointsView] = probe.watch_all("Endpoints")
    try:
        slices: Observer[EndpointsView] | None = probe.watch_all("EndpointSlice")
    except NotServed as err:
        slices = None
        probe.check_not_observable("endpoints.slice-entry-after-delete", str(err))
    probe.create(probe.manifest("service-web.yaml"))
    probe.create(probe.manifest("deployment-slow-to-stop.yaml"))
    old = running_deployment_pod(pods)
    legacy.wait_for(
        f"pod {old.name} to be a ready address of Service web",
        lambda o: (endpoint_of(o, old.name) or {}).get("ready") is True,
        within=60,
    )
    if slices is not None:
        slices.wait_for(
            f"pod {old.name} to be a ready endpoint in an EndpointSlice",
            lambda o: (endpoint_of(o, old.name) or {}).get("ready") is True,
            within=60,
        )

    deleted_at = probe.delete_pod(old)
    still_in = legacy.await_outcome(
        f"pod {old.name} to leave v1 Endpoints", lambda o: endpoint_of(o, old.name) is None, within=ENDPOINT_BOUND_S
    )
    left_endpoints_at = legacy.history[-1][0] if still_in is None else None
    if slices is not None:
        unchanged = slices.await_outcome(
            f"pod {old.name}'s EndpointSlice entry to change",
            lambda o: (endpoint_of(o, old.name) or {}).get("ready") is not True,
            within=ENDPOINT_BOUND_S,
        )
        probe.check(
            "endpoints.slice-entry-after-delete",
            endpoint_of(slices, old.name) or "removed",
            slices.reading(slices.objects()),  # the entry as it is once it changed
            evidence=unchanged,
        )
    running = pods.await_outcome(
        f"pod {old.name}'s container to stop",
        lambda o: o.is_deleted(old) or o.states[key_of(old)].all_containers_terminated,
        within=old.raw["spec"]["terminationGracePeriodSeconds"] + STOP_SLACK_S,
    )
    stopped_at = None  # the container did not stop in time
    if running is None:
        stopped_at = pods.first_seen(old, lambda p: p.all_containers_terminated) or pods.history[-1][0]
    if left_endpoints_at is None:  # not within the bound: it may have left later, while the container still ran
        legacy.catch_up()
        left_endpoints_at = first_absent(legacy, old.name, since=deleted_at)
    left = None if left_endpoints_at is None else round(left_endpoints_at - deleted_at, 2)
    # Only a gap between the delete and the instant read can move that instant (a re-list dates the change
    # to its own arrival, though it happened somewhere in the gap).
    left_seen = legacy.during(deleted_at, left_endpoints_at, legacy.objects())
    probe.check("endpoints.left-v1-endpoints-after-delete", left, left_seen, evidence=still_in)
    out_of_service = left_endpoints_at is not None and (stopped_at is None or left_endpoints_at < stopped_at)
    probe.check(
        "endpoints.out-of-service-before-container-stopped",
        out_of_service,
        Basis.of(left_seen, pods.during(deleted_at, stopped_at, old)),
        evidence=still_in or running,
    )
    probe.conclude()
