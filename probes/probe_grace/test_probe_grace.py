"""Probe-level grace (KEP-2238): the grace a container gets when its liveness probe fails.

`livenessProbe.terminationGracePeriodSeconds` gives the kill that follows a failed liveness probe a grace of its
own, shorter than the pod's. The API server keeps the field only where ProbeTerminationGracePeriod is on (beta and
on by default from 1.25, GA in 1.28, the gate gone from 1.29); elsewhere it drops it and the pod's grace applies.
The kubelet applies the probe's grace only to a kill it makes for the failed probe (reason LivenessProbe): a pod
with restartPolicy Never has nothing to restart, so the kubelet kills the whole pod instead, and that kill carries
no reason: the pod's grace applies there on every release.

The grace is read twice. On the container's own clock: it traps SIGTERM and keeps going, noting its SIGTERM instant
and a heartbeat every 0.1 s until the SIGKILL (node kernel clock, /proc/uptime). And as the cluster tells it: from
the kubelet's Killing event (its first timestamp) to the container's finishedAt, both on the node's clock.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from harness.core.basis import Basis
from harness.core.observe_readings import PodObserver
from harness.core.probe import Probe
from harness.core.probe_helpers import POD_START_BUDGET_S, STOP_SLACK_S, written_instants
from harness.core.transport import JsonDict
from harness.core.views import PodView, parse_time

pytestmark = pytest.mark.probe("probe_grace")

POD_GRACE_S = 15.0  # the pod's terminationGracePeriodSeconds: the longest grace the kill can get
UNHEALTHY_AFTER_S = 3.0  # the container removes the file its liveness probe reads 3 s after it started
CREATE = "the API server's answer to the create"
EVENTS = "the namespace's events (the kubelet's Killing event)"


def kept_probe_grace(created: JsonDict) -> int | None:
    """The created pod's livenessProbe.terminationGracePeriodSeconds (None: the server dropped it)."""
    probe_spec = created["spec"]["containers"][0].get("livenessProbe") or {}
    grace: int | None = probe_spec.get("terminationGracePeriodSeconds")
    return grace


def main_status(pod: PodView) -> JsonDict:
    """main's raw container status ({} before it has one)."""
    statuses = (pod.raw.get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s.get("name") == "main"), {})


def ended_run(pod: PodView, restarted: bool) -> JsonDict | None:
    """The terminated state of main's first run: its lastState once restarted (Always), else its state (Never)."""
    status = main_status(pod)
    state = status.get("lastState" if restarted else "state") or {}
    terminated: JsonDict | None = state.get("terminated")
    return terminated


def grace_on_its_own_clock(terminated: JsonDict | None) -> float | None:
    """Seconds from the container's SIGTERM instant to its last heartbeat (None: it noted no SIGTERM)."""
    instants = written_instants(terminated.get("message") if terminated else None)
    sigterm = next((t for what, t in instants if what == "sigterm"), None)
    beats = [t for what, t in instants if what == "alive"]
    if sigterm is None or not beats:
        return None
    return round(beats[-1] - sigterm, 2)


def event_instant(event: JsonDict) -> datetime | None:
    """When an event was first recorded: its eventTime (microseconds) where set, else its firstTimestamp."""
    return parse_time(event.get("eventTime") or event.get("firstTimestamp"))


def killing_to_finished(events: list[JsonDict], pod: str, terminated: JsonDict | None) -> float | None:
    """Seconds from the kubelet's first Killing event of the pod to the container's finishedAt (None: either is
    missing)."""
    kills = [
        instant
        for e in events
        if e.get("reason") == "Killing" and (e.get("involvedObject") or {}).get("name") == pod
        if (instant := event_instant(e)) is not None
    ]
    finished = parse_time((terminated or {}).get("finishedAt"))
    if not kills or finished is None:
        return None
    return round((finished - min(kills)).total_seconds(), 2)


def exit_of(terminated: JsonDict | None) -> JsonDict:
    """How the run ended: {exitCode, reason} (both None when it was never seen ending)."""
    return {"exitCode": (terminated or {}).get("exitCode"), "reason": (terminated or {}).get("reason")}


def read_the_kill(probe: Probe, pods: PodObserver, restarted: bool) -> tuple[JsonDict | None, str | None, Basis]:
    """Wait until main's first run has ended; return its terminated state, what was awaited if it did not end in
    time, and what the reading rests on."""
    running = pods.await_outcome(
        "main's first run to end (SIGKILL at the end of the grace)",
        lambda o: ended_run(o.latest, restarted) is not None,
        within=POD_START_BUDGET_S + UNHEALTHY_AFTER_S + POD_GRACE_S + STOP_SLACK_S,
    )
    last = pods.latest
    terminated = ended_run(last, restarted)
    figure = grace_on_its_own_clock(terminated)
    seen = {"SIGTERM to last beat (s)": figure}
    probe.timeline.observed(probe.transport.now(), f"containers/{last.name}", "log", seen)
    return terminated, running, pods.reading(last)


@pytest.mark.alone(
    "a starved heartbeat loop beats its last before the kill early: sigterm-to-last-beat"
)  # docs/parallel-load.md
def test_a_failing_liveness_probe_kills_with_the_probes_grace(probe: Probe) -> None:
    """KEP-2238: a container whose liveness probe (grace 3 s) fails in a pod of grace 15 s is killed with the
    probe's grace where the server keeps the field (1.25 on), with the pod's where it drops it."""
    manifest = probe.manifest("pod-liveness-probe-grace.yaml")
    created = probe.create(manifest)
    probe.check("liveness.probe-grace-kept", kept_probe_grace(created), Basis.direct(CREATE))
    pods = probe.watch_pod(PodView.from_object(created))
    terminated, running, read = read_the_kill(probe, pods, restarted=True)
    probe.check("liveness.sigterm-to-last-beat", grace_on_its_own_clock(terminated), read, evidence=running)
    events = probe.events()
    probe.check(
        "liveness.killing-event-to-finished",
        killing_to_finished(events, manifest["metadata"]["name"], terminated),
        Basis.of(read, Basis.direct(EVENTS)),
        evidence=running,
    )
    probe.check("liveness.exit", exit_of(terminated), read, evidence=running)
    probe.conclude()


@pytest.mark.alone(
    "a loaded node starves the heartbeat loop, its last beat comes early: sigterm-to-last-beat"
)  # docs/parallel-load.md
def test_a_never_pod_killed_by_its_liveness_probe_gets_the_pods_grace(probe: Probe) -> None:
    """The same container in a pod with restartPolicy Never: nothing to restart, so the kubelet kills the pod
    (computePodActions' KillPod) without the probe's reason, and the pod's grace (15 s) applies on every release."""
    manifest = probe.manifest("pod-liveness-probe-grace.never.yaml")
    created = probe.create(manifest)
    pods = probe.watch_pod(PodView.from_object(created))
    terminated, running, read = read_the_kill(probe, pods, restarted=False)
    probe.check("never.sigterm-to-last-beat", grace_on_its_own_clock(terminated), read, evidence=running)
    probe.check(
        "never.killing-event-to-finished",
        killing_to_finished(probe.events(), manifest["metadata"]["name"], terminated),
        Basis.of(read, Basis.direct(EVENTS)),
        evidence=running,
    )
    probe.conclude()
