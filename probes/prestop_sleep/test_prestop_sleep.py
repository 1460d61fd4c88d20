"""The preStop sleep action (KEP-3960; zero seconds by KEP-4818): accepted or refused per release, and the delay
it puts before SIGTERM.

`lifecycle.preStop.sleep.seconds` makes the kubelet itself wait before it stops the container: nothing runs in
the container, so an image without a shell (or a `sleep` binary) can use it, which is what the `exec: sleep`
pattern of the termination write-ups needs. Where the action is unknown the Strict create is refused (1.25-1.28)
or, before 1.25, the field dropped and the hook left without a handler; where the gate is off (1.29) the field is
dropped and the hook is refused as having no handler. Validation bounds the seconds by the pod's
terminationGracePeriodSeconds and, until KEP-4818 is on (1.33), refuses zero.

The delay is read on the containers' own clock: `witness` (no hook) and `main` (the sleep) both note the instant
SIGTERM reaches them on the node's kernel clock (/proc/uptime, 10 ms); main's minus witness's is the sleep.
"""

from __future__ import annotations

import pytest

from harness.core.basis import Basis
from harness.core.observe import Observer
from harness.core.observe_readings import PodObserver
from harness.core.probe import Probe
from harness.core.probe_helpers import STOP_SLACK_S, first_absent, written_instants
from harness.core.transport import JsonDict, Rejected
from harness.core.views import EndpointsView, PodView

pytestmark = pytest.mark.probe("prestop_sleep")

CREATE = "the API server's answer to the create"
SLEEP_S = 5.0  # the served pod's preStop sleep (pod-prestop-sleep.served.yaml)


def refusal(rejected: Rejected) -> JsonDict:
    """What the server said, without the object's name: the field errors after 'is invalid: ', or what follows
    'strict decoding error: ' (an unknown field), else the whole message."""
    message = rejected.message
    for marker in (" is invalid: ", "strict decoding error: "):
        if marker in message:
            message = message.split(marker, 1)[1]
            break
    return {"status": rejected.status, "refused": message}


def create_pod(probe: Probe, manifest: JsonDict) -> tuple[PodObserver | None, JsonDict | str]:
    """Create the pod and wait until it runs; return its observer and 'accepted', or None and the refusal."""
    try:
        return probe.start_pod(manifest), "accepted"
    except Rejected as rejected:
        return None, refusal(rejected)


def sigterm_instant(pod: PodView, name: str) -> float | None:
    """When the container noted SIGTERM on its own clock (None: it never did)."""
    status = next((c for c in pod.containers if c.name == name), None)
    found = [t for what, t in written_instants(status.message if status is not None else None) if what == "sigterm"]
    return found[0] if found else None


def delete_and_read_the_delay(probe: Probe, pods: PodObserver, grace: int | None = None) -> tuple[float | None, Basis]:
    """Delete the running pod (with `grace` as DeleteOptions.gracePeriodSeconds when given), wait until both
    containers stopped, and return main's SIGTERM instant minus witness's, with what it rests on."""
    probe.delete_pod(pods.latest, grace_period_seconds=grace)
    running = pods.await_outcome(
        "both containers of the deleted pod to stop",
        lambda o: o.latest.all_containers_terminated,
        within=(grace if grace is not None else 10) + STOP_SLACK_S,
        veto=lambda o: "the pod is gone, although a finalizer holds it" if o.gone else None,
    )
    last = pods.latest
    main, witness = sigterm_instant(last, "main"), sigterm_instant(last, "witness")
    delay = None if main is None or witness is None else round(main - witness, 2)
    probe.timeline.observed(
        probe.transport.now(), f"containers/{last.name}", "log", {"main's SIGTERM after witness's (s)": delay}
    )
    if running is not None:
        probe.timeline.observed(probe.transport.now(), f"pod/{last.name}", "still running", {"why": running})
    return delay, pods.final_state(last)


@pytest.mark.alone(
    "a loaded kubelet starts main's sleep late beside the witness's stop: sleep.sigterm-delay"
)  # docs/parallel-load.md
def test_prestop_sleep_delays_sigterm(probe: Probe) -> None:
    """KEP-3960: a preStop sleep of 3 s (grace 10 s) delays the container's SIGTERM by 3 s, with no exec in it."""
    pods, answer = create_pod(probe, probe.manifest("pod-prestop-sleep.3s.yaml"))
    probe.check("sleep.accepted", answer, Basis.direct(CREATE))
    if pods is None:
        probe.check_not_observable("sleep.sigterm-delay", f"the API server refused the pod: {answer}")
    else:
        delay, ended = delete_and_read_the_delay(probe, pods)
        probe.check("sleep.sigterm-delay", delay, ended)
    probe.conclude()


def test_prestop_sleep_of_zero_seconds(probe: Probe) -> None:
    """KEP-4818: a sleep of zero seconds, refused until the relaxed validation is on, then no delay at all."""
    pods, answer = create_pod(probe, probe.manifest("pod-prestop-sleep.zero.yaml"))
    probe.check("sleep-zero.accepted", answer, Basis.direct(CREATE))
    if pods is None:
        probe.check_not_observable("sleep-zero.sigterm-delay", f"the API server refused the pod: {answer}")
    else:
        delay, ended = delete_and_read_the_delay(probe, pods)
        probe.check("sleep-zero.sigterm-delay", delay, ended)
    probe.conclude()


@pytest.mark.alone(
    "two StopContainer calls at once; a loaded runtime moves either: sigterm-delay"
)  # docs/parallel-load.md
def test_prestop_sleep_longer_than_the_grace(probe: Probe) -> None:
    """KEP-3960: a sleep longer than the pod's grace is refused by validation; one within it (8 s of 10 s) but
    longer than the grace a deletion gives (3 s) is cut off when that grace runs out, and SIGTERM comes then.
    """
    try:
        probe.create(probe.manifest("pod-prestop-sleep.beyond-grace.yaml"))
        beyond: JsonDict | str = "accepted"
    except Rejected as rejected:
        beyond = refusal(rejected)
    probe.check("sleep-beyond-grace.accepted", beyond, Basis.direct(CREATE))
    pods, answer = create_pod(probe, probe.manifest("pod-prestop-sleep.8s.yaml"))
    claim = "sleep-cut-by-deletion-grace.sigterm-delay"
    if pods is None:
        probe.check_not_observable(claim, f"the API server refused the pod: {answer}")
    else:
        delay, ended = delete_and_read_the_delay(probe, pods, grace=3)
        probe.check(claim, delay, ended)
    probe.conclude()


# ------------------------------------------------------------------------------ the endpoint removal


def in_endpoints(observer: Observer[EndpointsView], pod: str) -> bool:
    """Whether any v1 Endpoints object seen now holds the pod, ready or not."""
    return any(pod in view.pods for uid, view in observer.states.items() if uid not in observer.deleted)


def main_terminated(pod: PodView) -> bool:
    return any(c.name == "main" and c.state == "terminated" for c in pod.containers)


def test_prestop_sleep_outlasts_the_endpoint_removal(probe: Probe) -> None:
    """The write-ups' reason for a preStop sleep, which KEP-3960 makes a field: the deleted pod leaves its
    Service's v1 Endpoints within seconds, while the kubelet's 5 s sleep still holds main's SIGTERM back, so main
    still runs when the pod stops being an address of the Service."""
    claims = ("sleep-endpoints.left-after-delete", "sleep-endpoints.main-running-when-left")
    legacy: Observer[EndpointsView] = probe.watch_all("Endpoints")
    probe.create(probe.manifest("service-prestop-sleep.yaml"))
    pods, answer = create_pod(probe, probe.manifest("pod-prestop-sleep.served.yaml"))
    probe.check("sleep.accepted", answer, Basis.direct(CREATE))  # as for 3 s: no refusal names the seconds
    if pods is None:
        for claim in claims:
            probe.check_not_observable(claim, f"the API server refused the pod: {answer}")
        probe.conclude()
        return
    pod = pods.latest
    legacy.wait_for(
        f"pod {pod.name} to be a ready address of Service sleepy",
        lambda o: any((view.pods.get(pod.name) or {}).get("ready") is True for view in o.states.values()),
        within=60,
    )
    deleted_at = probe.delete_pod(pod)
    still_in = legacy.await_outcome(
        f"pod {pod.name} to leave v1 Endpoints", lambda o: not in_endpoints(o, pod.name), within=SLEEP_S + STOP_SLACK_S
    )
    running = pods.await_outcome(
        "both containers of the deleted pod to stop",
        lambda o: o.latest.all_containers_terminated,
        within=10 + STOP_SLACK_S,
        veto=lambda o: "the pod is gone, although a finalizer holds it" if o.gone else None,
    )
    left_at = first_absent(legacy, pod.name, since=deleted_at)
    left = None if left_at is None else round(left_at - deleted_at, 2)
    left_seen = legacy.during(deleted_at, left_at, legacy.objects())
    probe.check("sleep-endpoints.left-after-delete", left, left_seen, evidence=still_in)
    ended_at = pods.first_seen(pod, main_terminated)
    still_running = None if left_at is None or ended_at is None else ended_at > left_at
    rests_on = Basis.of(left_seen, pods.during(deleted_at, ended_at, pod))
    probe.check("sleep-endpoints.main-running-when-left", still_running, rests_on, evidence=still_in or running)
    probe.conclude()
