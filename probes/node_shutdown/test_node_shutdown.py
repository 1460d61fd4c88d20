"""Pods of a DaemonSet and of a StatefulSet through a graceful node shutdown.

"[Kubernetes 1.27] Pod 停止時のフェーズ遷移の変更" (pod-phase-on-stop-1.27): since 1.27 (k/k#115331) a pod the
kubelet stops can end Succeeded instead of Failed, and a graceful node shutdown stops pods without deleting
them. The DaemonSet controller handled only Failed pods and left a Succeeded one in place (k/k#117018, fixed by
k/k#117073); the StatefulSet controller did the same (k/k#118310, fixed by k/k#120398, reverted, re-landed as
k/k#121389). Each probe also checks what the shutdown does to the pod itself: phase, reason, message, the
DisruptionTarget condition, the container's exit.

How (harness/node_shutdown.py): a cluster of a control-plane and one labelled worker, from a node image
derived from the pinned one that adds D-Bus and logind (for the suite's own plp-node images: built beside
them), with the kubelets' shutdownGracePeriod 30 s (20 s
for regular pods). The probe starts the pod on the worker, announces a shutdown there by emitting logind's
PrepareForShutdown(true) on the node's system bus (as the kubelet's node e2e test does), observes the pod,
cancels the shutdown (PrepareForShutdown(false): the kubelet takes its lock again, the node turns Ready),
and waits for the controller to run a pod on the node again.

Verified: read in the sources, the kubelet's signal match (interface, member, path, no sender), the e2e
test's use of the signal and of `false` to recover, the kubelet's shutdown status and messages, kind's cluster
config fields (node labels, cluster-level KubeletConfiguration patch) — see the expectations' sources. Seen
live on kind v0.20.0 with node images built from Go modules (recordings `*-live-kind.json`):
v1.27.0-rc.0 (DaemonSet and StatefulSet pods left Succeeded), v1.27.3 and v1.27.4 (DaemonSet pod replaced,
StatefulSet pod left Succeeded: before k/k#121389, v1.27.9) and v1.26.6 (both Failed, deleted and replaced).
The shutdown-capable image brings up D-Bus and logind, the kubelet holds its delay lock
(`shutdown.kubelet-listening`), and `busctl emit` is heard. Where a pod's controller deletes it before the
kubelet reports its container's end, that claim is not observable (1.26.6 DaemonSet, once).
"""

from __future__ import annotations

import pytest

from harness.observe import Observer, PodObserver
from harness.probe import POD_START_BUDGET_S, Probe
from harness.transport import JsonDict
from harness.views import PodView

pytestmark = [pytest.mark.probe("node_shutdown"), pytest.mark.node_shutdown]

# The kubelet's shutdown grace (30 s) bounds how long stopping the pods takes, plus its status update.
SHUTDOWN_BUDGET_S = 45.0
# After the shutdown is cancelled: node Ready again, the controller's back-off for failed daemon pods
# (1 s doubling, pkg/controller/daemon/daemon_controller.go failedPodsBackoff), the pod's start.
RECOVERY_BUDGET_S = 150.0


def on_worker(pods: Observer[PodView]) -> PodView | None:
    """A pod of the namespace that runs, Ready, on a node and is not being deleted."""
    return next(
        (
            p
            for p in pods.states.values()
            if p.phase == "Running" and p.ready and p.node_name and not p.deletion_timestamp
        ),
        None,
    )


def stopped(pod: PodView) -> bool:
    """Terminal in the API and its containers stopped (the kubelet writes the phase first, then the exits)."""
    return pod.phase in ("Failed", "Succeeded") and pod.all_containers_terminated


def last_state(pods: Observer[PodView], pod: PodView) -> PodView:
    """The pod as last seen, by uid (a StatefulSet's replacement takes the same name)."""
    return next((v for _, v in reversed(pods.history) if v.uid == pod.uid), pod)


def was_deleted(pods: Observer[PodView], pod: PodView) -> bool:
    return any(type_ in ("DELETED", "GONE") and v.uid == pod.uid for _, type_, v in pods.changes)


def container_exit(pods: Observer[PodView], pod: PodView) -> JsonDict | None:
    """How the pod's (by uid) container ended, from the first state that shows it; None if it never stopped."""
    ended = next((v for _, v in pods.history if v.uid == pod.uid and v.all_containers_terminated), None)
    return None if ended is None else ended.container("main").exit


def shut_down_and_recover(probe: Probe, manifest_name: str) -> tuple[PodObserver, PodView, PodView | None, list[str]]:
    """Start the workload, shut its node down, check the pod's own fate, cancel, wait for a new pod.

    Returns the pods' observer, the first pod as last seen, the pod that ran afterwards (None if none), and
    the watch gaps since the shutdown (before it, the pod ran Ready: no gap then can hide its fate).
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
        shutdown_at = probe.transport.last_call_started()
        probe.check("shutdown.kubelet-listening", signal.get("kubelet_inhibitor"))
        pods.observe_until(lambda o: was_deleted(o, first) or stopped(last_state(o, first)), within=SHUTDOWN_BUDGET_S)
        shut = last_state(pods, first)
        gaps = pods.gaps_since(shutdown_at)  # the pod ran Ready before: only a gap after the shutdown hides its fate
        probe.check("shutdown.pod-phase", shut.phase, gaps)
        probe.check("shutdown.pod-reason", {"reason": shut.reason, "message": shut.message}, gaps)
        probe.check("shutdown.disruption-target", pods.first_condition(first, "DisruptionTarget"), gaps)
        exit_state = container_exit(pods, first)
        if exit_state is None and was_deleted(pods, first):
            # Seen live on 1.26.6 (kind): the DaemonSet controller deleted the Failed pod 20 ms after the kubelet
            # marked it, before the kubelet reported how its container ended; nothing is left to read it from.
            probe.check_not_observable(
                "shutdown.container-exit", "the pod was deleted before the kubelet reported how its container ended"
            )
        else:
            probe.check("shutdown.container-exit", exit_state, gaps)

    pods.observe_until(lambda o: successor(o, shut) is not None, within=RECOVERY_BUDGET_S)
    return pods, shut, successor(pods, shut), pods.gaps_since(shutdown_at)


def successor(pods: Observer[PodView], stopped_pod: PodView) -> PodView | None:
    """A pod other than the stopped one (another uid; a StatefulSet reuses the name) running Ready again."""
    pod = on_worker(pods)
    return pod if pod is not None and pod.uid != stopped_pod.uid else None


def fate(pods: PodObserver, first: PodView) -> str:
    """What became of the stopped pod (by uid): 'deleted', or its phase as last seen."""
    return "deleted" if was_deleted(pods, first) else str(last_state(pods, first).phase)


def test_daemonset_pod_after_graceful_node_shutdown(probe: Probe) -> None:
    """The document / k/k#117018: a DaemonSet pod stopped by a node shutdown is replaced once the node is back."""
    pods, first, after, gaps = shut_down_and_recover(probe, "daemonset-on-shutdown-node.yaml")
    probe.check("daemonset.pod-replaced", after is not None, gaps)
    probe.check("daemonset.stopped-pod", fate(pods, first), gaps)
    probe.conclude()


def test_statefulset_pod_after_graceful_node_shutdown(probe: Probe) -> None:
    """The document / k/k#118310: a StatefulSet pod stopped by a node shutdown is recreated once the node is back."""
    pods, first, after, gaps = shut_down_and_recover(probe, "statefulset-on-shutdown-node.yaml")
    probe.check("statefulset.pod-recreated", after is not None, gaps)
    probe.check("statefulset.stopped-pod", fate(pods, first), gaps)
    probe.conclude()
