"""Pods of a DaemonSet and of a StatefulSet through a graceful node shutdown.

"[Kubernetes 1.27] Pod 停止時のフェーズ遷移の変更" (pod-phase-on-stop-1.27): since 1.27 (k/k#115331) a pod the
kubelet stops can end Succeeded instead of Failed, and a graceful node shutdown stops pods without deleting
them. The DaemonSet controller handled only Failed pods and left a Succeeded one in place (k/k#117018, fixed by
k/k#117073); the StatefulSet controller did the same (k/k#118310, fixed by k/k#120398, reverted, re-landed as
k/k#121389). Each probe also checks what the shutdown does to the pod itself: phase, reason, message, the
DisruptionTarget condition, the container's exit.

How (harness/clusters/kind/node_shutdown.py): a cluster of a control-plane and one labelled worker, from a node image
derived from the pinned one that adds D-Bus and logind (for the suite's own plp-node images: built beside
them), with the kubelets' shutdownGracePeriod 30 s (20 s
for regular pods). The probe starts the pod on the worker, announces a shutdown there by emitting logind's
PrepareForShutdown(true) on the node's system bus (as the kubelet's node e2e test does), observes the pod,
cancels the shutdown (PrepareForShutdown(false): the kubelet takes its lock again, the node turns Ready),
and waits for the controller to run a pod on the node again.

Verified: read in the sources, the kubelet's signal match (interface, member, path, no sender), the e2e
test's use of the signal and of `false` to recover, the kubelet's shutdown status and messages, kind's cluster
config fields (node labels, cluster-level KubeletConfiguration patch) — see the expectations' sources. Seen
live on kind with node images built from Go modules (recordings `*-live-kind.json`; `make coverage` lists them)
on every minor from 1.21 to 1.36 (kind v0.20.0), e.g. v1.22.4 (k/k#104531: the pod stays Running and is not
replaced), v1.27.0-rc.0 (DaemonSet and StatefulSet pods left Succeeded), v1.27.3 and v1.27.4 (DaemonSet pod
replaced, StatefulSet pod left Succeeded: before k/k#121389, v1.27.9) and v1.26.6 (both Failed, deleted and
replaced); 1.37 runs on kind v0.33.0 (kubeadm v1beta4).
The shutdown-capable image brings up D-Bus and logind, the kubelet holds its delay lock
(`shutdown.kubelet-listening`), and `busctl emit` is heard. Where a pod's controller deletes it before the
kubelet reports its container's end, that claim is not observable (1.26.6 DaemonSet, once).
"""

from __future__ import annotations

import pytest

from harness.core.basis import Basis
from harness.core.identity import controller_uid, running_ready, successor
from harness.core.observe import Observer, key_of
from harness.core.observe_readings import PodObserver
from harness.core.probe import POD_START_BUDGET_S, Probe
from harness.core.timeline import Sighting
from harness.core.views import PodView

pytestmark = [pytest.mark.probe("node_shutdown"), pytest.mark.node_shutdown]

# The kubelet's shutdown grace (30 s) bounds how long stopping the pods takes, plus its status update.
SHUTDOWN_BUDGET_S = 45.0
# After the shutdown is cancelled: node Ready again, the controller's back-off for failed daemon pods
# (1 s doubling, pkg/controller/daemon/daemon_controller.go failedPodsBackoff), the pod's start.
RECOVERY_BUDGET_S = 150.0


def serving(pod: PodView) -> bool:
    """Running and Ready on a node, and not being deleted."""
    return pod.phase == "Running" and pod.ready and bool(pod.node_name) and not pod.deletion_timestamp


def on_worker(pods: Observer[PodView]) -> PodView | None:
    """A pod of the namespace that runs, Ready, on a node, is not being deleted and is not known deleted."""
    return running_ready(pods, serving)


def stopped(pod: PodView) -> bool:
    """Terminal in the API and its containers stopped (the kubelet writes the phase first, then the exits)."""
    return pod.phase in ("Failed", "Succeeded") and pod.all_containers_terminated


def last_state(pods: Observer[PodView], pod: PodView) -> PodView:
    """The pod as last seen, by uid (a StatefulSet's replacement takes the same name)."""
    return pods.states.get(key_of(pod), pod)


def ended(pods: PodObserver, pod: PodView) -> Sighting[PodView] | None:
    """The first state of the pod (by uid) that shows its containers stopped; None if it never did."""
    return pods.first_sighting(lambda _, view: view.uid == pod.uid and view.all_containers_terminated)


def shut_down_and_recover(probe: Probe, manifest_name: str) -> tuple[PodObserver, PodView, PodView | None, float]:
    """Start the workload, shut its node down, check the pod's own fate, cancel, wait for a new pod.

    Returns the pods' observer, the first pod as last seen, the pod that ran afterwards (None if none: the
    harness's successor, harness/core/identity.py, of the same controller, created after the shutdown, not known
    deleted, Running and Ready), and when the shutdown was announced (before it, the pod ran Ready: no gap then can
    hide its fate).
    """
    pods = probe.watch_pods()
    probe.create(probe.manifest(manifest_name))
    pods.wait_for(
        "the workload's pod to run on the shutdown node", lambda o: on_worker(o) is not None, POD_START_BUDGET_S
    )
    first = on_worker(pods)
    assert first is not None and first.node_name is not None
    node = first.node_name

    with probe.node_shut_down(node) as signal:  # cancelled on leaving the block, also when it fails
        shutdown_at = signal["signalled_at"]
        answer = Basis.direct("the node's answer to the shutdown signal")
        probe.check("shutdown.kubelet-listening", signal.get("kubelet_inhibitor"), answer)
        pods.observe_until(lambda o: o.is_deleted(first) or stopped(last_state(o, first)), within=SHUTDOWN_BUDGET_S)
        shut = last_state(pods, first)
        left = pods.final_state(first)  # the state the kubelet left it in (or the last before it was deleted)
        probe.check("shutdown.pod-phase", shut.phase, left)
        probe.check("shutdown.pod-reason", {"reason": shut.reason, "message": shut.message}, left)
        disrupted = pods.condition_sighting(first, "DisruptionTarget")
        probe.check(
            "shutdown.disruption-target",
            pods.first_condition(first, "DisruptionTarget"),
            pods.sighted(disrupted, shutdown_at, first),
        )
        stop = ended(pods, first)
        # Only a DELETED event says no report came before the pod went; a deletion learned from a re-list's diff
        # may have hidden one in its gap, and the check below is then undecided.
        deleted = pods.first_sighting(lambda type_, view: view.uid == first.uid and type_ == "DELETED")
        if stop is None and deleted is not None:
            # Seen live on 1.26.6 (kind): the DaemonSet controller deleted the Failed pod 20 ms after the kubelet
            # marked it, before the kubelet reported how its container ended; nothing is left to read it from.
            probe.check_not_observable(
                "shutdown.container-exit", "the pod was deleted before the kubelet reported how its container ended"
            )
        else:
            exit_state = None if stop is None else stop.view.container("main").exit
            probe.check("shutdown.container-exit", exit_state, pods.sighted(stop, shutdown_at, first))

    owner, act = controller_uid(first), probe.act(shutdown_at)
    pods.observe_until(lambda o: successor(o, owner, act, serving) is not None, within=RECOVERY_BUDGET_S)
    after = successor(pods, owner, act, serving)
    return pods, shut, None if after is None else pods.states[key_of(after.view)], shutdown_at


def check_successor(probe: Probe, claim: str, pods: PodObserver, after: PodView | None, shutdown_at: float) -> None:
    """Whether a new pod ran Ready: certain once seen so (by uid); never seen, any gap since the shutdown could
    have hidden one that came and went."""
    seen = None
    if after is not None:
        seen = pods.first_sighting(lambda _, view: view.uid == after.uid and view.phase == "Running" and view.ready)
    probe.check(claim, after is not None, pods.sighted(seen, shutdown_at))


def check_fate(probe: Probe, claim: str, pods: PodObserver, first: PodView) -> None:
    """What became of the stopped pod (by uid): 'deleted' (certain once seen, whenever it happened; a name
    taken again by a new pod is not the old one), or its phase as last seen."""
    gone = pods.first_sighting(lambda type_, view: view.uid == first.uid and type_ in ("DELETED", "GONE"))
    if gone is not None:
        probe.check(claim, "deleted", pods.reading(first, at=gone.t))
    else:
        probe.check(claim, str(last_state(pods, first).phase), pods.final_state(first))


def test_daemonset_pod_after_graceful_node_shutdown(probe: Probe) -> None:
    """The document / k/k#117018: a DaemonSet pod stopped by a node shutdown is replaced once the node is back."""
    pods, first, after, shutdown_at = shut_down_and_recover(probe, "daemonset-on-shutdown-node.yaml")
    check_successor(probe, "daemonset.pod-replaced", pods, after, shutdown_at)
    check_fate(probe, "daemonset.stopped-pod", pods, first)
    probe.conclude()


def test_statefulset_pod_after_graceful_node_shutdown(probe: Probe) -> None:
    """The document / k/k#118310: a StatefulSet pod stopped by a node shutdown is recreated once the node is back."""
    pods, first, after, shutdown_at = shut_down_and_recover(probe, "statefulset-on-shutdown-node.yaml")
    check_successor(probe, "statefulset.pod-recreated", pods, after, shutdown_at)
    check_fate(probe, "statefulset.stopped-pod", pods, first)
    probe.conclude()
