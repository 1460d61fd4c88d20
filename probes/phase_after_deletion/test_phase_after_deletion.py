"""Pod phase after deletion: `Running` until 1.26, `Failed` / `Succeeded` from 1.27.

Document pod-phase-on-stop-1.27 ("[Kubernetes 1.27] Pod 停止時のフェーズ遷移の変更"):
a deleted pod held by a finalizer stayed in phase `Running` after its containers stopped on 1.26
(kindest/node v1.26.6), and moved to `Failed` (SIGTERM ignored, SIGKILLed: exit 137, reason Error) or
`Succeeded` (SIGTERM handled: exit 0, reason Completed) on 1.27 (kindest/node v1.27.3). The change is
k/k#115331 "Give terminal phase correctly to all pods that will not be restarted" (KEP-3329).

Each probe: create the pod, wait until it runs, delete it, watch until its containers have stopped (or
the pod is gone) and for a few seconds more, then check the claims of expectations/phase_after_deletion.yaml
for the version the API server reports.
"""

from __future__ import annotations

import pytest

from harness.core.basis import Basis
from harness.core.observe_readings import PodObserver
from harness.core.probe import Probe
from harness.core.probe_helpers import STOP_SLACK_S, container_exit, exit_status_kept, finished_at
from harness.core.transport import JsonDict
from harness.core.views import PodView, parse_time

pytestmark = pytest.mark.probe("phase_after_deletion")

# After the containers stopped, keep watching this long: a phase that stays `Running` is a claim too.
SETTLE_S = 5.0
# The claims that read the container's own end, not observable when the kubelet lost it (exit-status-kept).
SIGKILLED = ("sigterm-ignored.exit", "sigterm-ignored.killed-after-grace")
EXITED = ("sigterm-handled.exit", "sigterm-handled.exited-after-delete")


def delete_and_watch(
    probe: Probe, manifest: JsonDict, until_gone: bool = False
) -> tuple[PodObserver, float, str | None]:
    """Start the pod, delete it, watch until its containers stopped (then SETTLE_S more) or it is gone.

    The last item is None when that happened in time; otherwise what was awaited and last seen: a container
    that never stops (or a pod that never goes) is what the claims then observe, with that as evidence.
    """
    with probe.start_pod(manifest) as pod:
        grace = pod.latest.raw["spec"]["terminationGracePeriodSeconds"]
        deleted_at = probe.delete_pod(pod.latest)
        if until_gone:
            timeout = pod.await_outcome("the deleted pod to be gone", lambda o: o.gone, within=grace + STOP_SLACK_S)
        else:
            timeout = pod.await_outcome(
                "the deleted pod's containers to stop",
                lambda o: o.latest.all_containers_terminated,
                within=grace + STOP_SLACK_S,
                veto=lambda o: "the pod is gone, although a finalizer holds it" if o.gone else None,
            )
            if timeout is None:
                pod.observe_for(SETTLE_S)
    return pod, deleted_at, timeout


def as_deleted(pod: PodObserver) -> PodView:
    """The pod as the probe's delete left it (PodObserver.as_deleted: later deletes rewrite the fields)."""
    deleted = pod.as_deleted(pod.latest)
    if deleted is None:
        raise AssertionError(f"pod {pod.latest.name} was never seen with a deletionTimestamp")
    return deleted


def deletion_seen(pod: PodObserver, deleted_at: float) -> Basis:
    """What a reading of the delete's fields rests on: the first state that showed them (a re-list's whole gap,
    when only a re-list did: an earlier state may have had them before a later delete rewrote them)."""
    return pod.sighted(pod.deletion_sighting(pod.latest), deleted_at, pod.latest)


def seconds_after_grace(deleted: PodView, latest: PodView, container: str) -> float | None:
    """When the container finished (latest view), counted from the end of the grace the delete set.

    Both are on the server's clock with one-second resolution: the difference is exact to +-1 s. None when
    the container never finished.
    """
    finished = parse_time(finished_at(latest, container))
    grace_ends = parse_time(deleted.deletion_timestamp)
    if finished is None:
        return None
    assert grace_ends is not None, f"pod {deleted.name} has no deletionTimestamp"
    return (finished - grace_ends).total_seconds()


def seconds_after_delete(deleted: PodView, latest: PodView, container: str) -> float | None:
    """When the container finished, counted from the delete request on the server's clock."""
    after_grace = seconds_after_grace(deleted, latest, container)
    return None if after_grace is None else after_grace + (deleted.deletion_grace_period_seconds or 0)


def check_sigkilled(probe: Probe, pod: PodObserver, deleted_at: float, timeout: str | None) -> None:
    """The container ignored SIGTERM: SIGKILLed when the grace period ran out."""
    ended = pod.final_state(pod.latest)  # the container's end, as the pod was left
    probe.check("sigterm-ignored.exit", container_exit(pod.latest, "main"), ended, evidence=timeout)
    probe.check(
        "sigterm-ignored.killed-after-grace",
        seconds_after_grace(as_deleted(pod), pod.latest, "main"),
        Basis.of(deletion_seen(pod, deleted_at), ended),
        evidence=timeout,
    )


def check_exited_on_sigterm(probe: Probe, pod: PodObserver, deleted_at: float, timeout: str | None) -> None:
    """The container trapped SIGTERM and exited 0, well before the grace period ran out."""
    ended = pod.final_state(pod.latest)
    probe.check("sigterm-handled.exit", container_exit(pod.latest, "main"), ended, evidence=timeout)
    probe.check(
        "sigterm-handled.exited-after-delete",
        seconds_after_delete(as_deleted(pod), pod.latest, "main"),
        Basis.of(deletion_seen(pod, deleted_at), ended),
        evidence=timeout,
    )


def check_phases(probe: Probe, claim: str, pod: PodObserver, deleted_at: float, timeout: str | None) -> None:
    """The phases the pod went through from the delete on (a gap explains a mismatch only where it lies)."""
    phases, rests_on = pod.phases(pod.latest, deleted_at)
    probe.check(claim, phases, rests_on, evidence=timeout)


def exit_kept(probe: Probe, pod: PodObserver, depending: tuple[str, ...]) -> bool:
    """exit-status-kept, read from the state the pod was left in (probe_helpers.exit_status_kept)."""
    return exit_status_kept(probe, "exit-status-kept", pod.latest, pod.final_state(pod.latest), depending)


def check_stopped_on_node(probe: Probe, pod: PodObserver) -> None:
    """The kubelet really stopped the container: it is exited (or already removed) on the node."""
    state = probe.node_container_state(pod.latest, "main")
    if state is None:
        probe.check_not_observable("container-stopped-on-node", probe.why_not_on_node(pod.latest, "main"))
    else:
        stopped = "running" if state == "running" else "stopped"
        probe.check("container-stopped-on-node", stopped, Basis.direct("the node's container list"))


# ----------------------------------------------------------------------------- restartPolicy Always


@pytest.mark.alone("a loaded kubelet acts on the delete late: killed-after-grace")  # docs/parallel-load.md
def test_always_pod_ignoring_sigterm(probe: Probe) -> None:
    """The document's first experiment: restartPolicy Always, finalizer, SIGTERM ignored, grace 5 s.

    Claim: exit 137 / Error at the end of the grace; phase stays `Running` the whole time on 1.26,
    becomes `Failed` on 1.27 (k/k#115331).
    """
    pod, deleted_at, timeout = delete_and_watch(probe, probe.manifest("pod-finalizer-ignores-sigterm.yaml"))
    if exit_kept(probe, pod, SIGKILLED):
        check_sigkilled(probe, pod, deleted_at, timeout)
    check_phases(probe, "always.sigterm-ignored.phases", pod, deleted_at, timeout)
    check_stopped_on_node(probe, pod)
    probe.conclude()


@pytest.mark.alone("a loaded kubelet acts on the delete late: killed-after-grace")  # docs/parallel-load.md
def test_always_pod_ignoring_sigterm_default_grace(probe: Probe) -> None:
    """The same with no terminationGracePeriodSeconds, as in the document: the API's default of 30 s."""
    manifest = probe.manifest("pod-finalizer-ignores-sigterm.default-grace.yaml")
    pod, deleted_at, timeout = delete_and_watch(probe, manifest)
    probe.check("default-grace-period", as_deleted(pod).deletion_grace_period_seconds, deletion_seen(pod, deleted_at))
    if exit_kept(probe, pod, SIGKILLED):
        check_sigkilled(probe, pod, deleted_at, timeout)
    check_phases(probe, "always.sigterm-ignored.phases", pod, deleted_at, timeout)
    probe.conclude()


@pytest.mark.alone("a loaded kubelet acts on the delete late: exited-after-delete")  # docs/parallel-load.md
def test_always_pod_trapping_sigterm(probe: Probe) -> None:
    """The document's second experiment: restartPolicy Always, finalizer, SIGTERM trapped, exit 0.

    Claim: exit 0 / Completed soon after the delete; phase `Running` on 1.26, `Succeeded` on 1.27.
    """
    pod, deleted_at, timeout = delete_and_watch(probe, probe.manifest("pod-finalizer-traps-sigterm.yaml"))
    if exit_kept(probe, pod, EXITED):
        check_exited_on_sigterm(probe, pod, deleted_at, timeout)
    check_phases(probe, "always.sigterm-handled.phases", pod, deleted_at, timeout)
    check_stopped_on_node(probe, pod)
    probe.conclude()


# -------------------------------------------------------------------------- restartPolicy OnFailure


@pytest.mark.alone("a loaded kubelet acts on the delete late: killed-after-grace")  # docs/parallel-load.md
def test_onfailure_pod_ignoring_sigterm(probe: Probe) -> None:
    """restartPolicy OnFailure, finalizer, SIGTERM ignored: the document's claim covers OnFailure too.

    An OnFailure pod's phase follows its container's end on every version, so it reads that end as well.
    """
    manifest = probe.manifest("pod-finalizer-ignores-sigterm.onfailure.yaml")
    pod, deleted_at, timeout = delete_and_watch(probe, manifest)
    phases = "onfailure.sigterm-ignored.phases"
    if exit_kept(probe, pod, (*SIGKILLED, phases)):
        check_sigkilled(probe, pod, deleted_at, timeout)
        check_phases(probe, phases, pod, deleted_at, timeout)
    check_stopped_on_node(probe, pod)
    probe.conclude()


@pytest.mark.alone("a loaded kubelet acts on the delete late: exited-after-delete")  # docs/parallel-load.md
def test_onfailure_pod_trapping_sigterm(probe: Probe) -> None:
    """restartPolicy OnFailure, finalizer, SIGTERM trapped, exit 0 (its phase follows that end, as above)."""
    manifest = probe.manifest("pod-finalizer-traps-sigterm.onfailure.yaml")
    pod, deleted_at, timeout = delete_and_watch(probe, manifest)
    phases = "onfailure.sigterm-handled.phases"
    if exit_kept(probe, pod, (*EXITED, phases)):
        check_exited_on_sigterm(probe, pod, deleted_at, timeout)
        check_phases(probe, phases, pod, deleted_at, timeout)
    check_stopped_on_node(probe, pod)
    probe.conclude()


# --------------------------------------------------------------------------------- no finalizer


def test_pod_without_finalizer_ignoring_sigterm(probe: Probe) -> None:
    """restartPolicy Always, no finalizer, SIGTERM ignored: the phase the watch shows before the pod is gone."""
    manifest = probe.manifest("pod-finalizer-ignores-sigterm.no-finalizer.yaml")
    pod, deleted_at, timeout = delete_and_watch(probe, manifest, until_gone=True)
    check_phases(probe, "no-finalizer.sigterm-ignored.phases", pod, deleted_at, timeout)
    probe.conclude()


def test_pod_without_finalizer_trapping_sigterm(probe: Probe) -> None:
    """restartPolicy Always, no finalizer, SIGTERM trapped: the phase the watch shows before the pod is gone."""
    manifest = probe.manifest("pod-finalizer-traps-sigterm.no-finalizer.yaml")
    pod, deleted_at, timeout = delete_and_watch(probe, manifest, until_gone=True)
    check_phases(probe, "no-finalizer.sigterm-handled.phases", pod, deleted_at, timeout)
    probe.conclude()
