"""Graceful node shutdown in kind: the cluster for it and the shutdown signal (its node image:
harness/nodeimage/shutdown.py).

Stock kind nodes cannot shut down gracefully: they run neither D-Bus nor systemd-logind, so the kubelet's
shutdown manager cannot take its inhibitor lock and never hears of a shutdown (kubernetes/kubernetes
pkg/kubelet/nodeshutdown; kind#3135, kind#3648). The suite therefore derives an image from the pinned node
image that adds D-Bus and starts logind, builds it with `docker build` the first time it is needed and keeps
it (tagged by the base digest, so it is rebuilt only for a new base), and runs the shutdown probes on a cluster of a
control-plane and one worker whose kubelets have `shutdownGracePeriod` set.

A shutdown is announced the way upstream's node e2e test does it (test/e2e_node/node_shutdown_linux_test.go
emits org.freedesktop.login1.Manager.PrepareForShutdown on the system bus): the kubelet subscribes to that
signal with a match on interface, member and path but not on the sender
(pkg/kubelet/nodeshutdown/systemd/inhibit_linux.go), so `busctl emit` inside the node is heard as logind's
own; `true` starts the shutdown, `false` cancels it and the node becomes Ready again.

What is verified and what is only reasoned, and the versions this ran on live (kind v0.20.0, node images built
from Go modules), is listed in the module docstring of probes/node_shutdown/test_node_shutdown.py.
"""

from __future__ import annotations

import json
import time
from typing import Any

from harness.base.process import Completed, Runner, run_command
from harness.base.versions import KubeVersion
from harness.clusters.kind.config import cluster_config as kind_cluster_config

JsonDict = dict[str, Any]

# Pods of the shutdown probes are pinned to the worker by this node label (kind's per-node `labels`).
SHUTDOWN_NODE_LABEL = "pod-lifecycle-probes.test/shutdown-target"
# The kubelet's budget for a shutdown: pods get SHUTDOWN_GRACE - CRITICAL_PODS_GRACE (20 s), critical pods
# the last 10 s (the values upstream's node e2e test uses: ShutdownGracePeriod 20s / critical 10s; ours
# leave the regular pods 20 s for their 5 s grace).
SHUTDOWN_GRACE = "30s"
CRITICAL_PODS_GRACE = "10s"
# GracefulNodeShutdown: alpha (off) in 1.20, beta (on) from v1.21.0-beta.1 (k/k#99735, CHANGELOG-1.21 v1.21.0-beta.1,
# Changelog since v1.21.0-beta.0; the first tag the module proxy serves, beta.1, has it on): the 1.21 pre-releases
# before it run the gate off, whose kubelet refuses a grace period as 1.20's does.
GRACEFUL_NODE_SHUTDOWN_ON = ">=1.21.0-beta.1"
# How long a restarted kubelet may take to hold its inhibitor lock again.
LOCK_WAIT_S = 60.0
LOCK_POLL_S = 1.0  # and how often it is asked meanwhile


def cluster_config(version: KubeVersion, host_kubelet: JsonDict | None = None) -> str:
    """kind config: a control-plane and a labelled worker; from 1.21 every kubelet has a shutdown grace period,
    beside what the host asks of every kubelet (harness/clusters/kubelet_host.py).

    shutdownGracePeriod needs the GracefulNodeShutdown gate, beta and on by default from 1.21.0-beta.1
    (kubernetes/kubernetes#99735); before, the kubelet's config validation refuses a grace period while the gate
    is off, so older clusters get none and show the default: a kubelet that does not listen for shutdowns.
    """
    nodes: list[JsonDict] = [
        {"role": "control-plane"},
        {"role": "worker", "labels": {SHUTDOWN_NODE_LABEL: "true"}},
    ]
    kubelet: JsonDict = {}
    if version.satisfies(GRACEFUL_NODE_SHUTDOWN_ON):
        kubelet = {"shutdownGracePeriod": SHUTDOWN_GRACE, "shutdownGracePeriodCriticalPods": CRITICAL_PODS_GRACE}
    return kind_cluster_config(nodes, {**kubelet, **(host_kubelet or {})})


def prepare_for_shutdown_argv(node: str, starting: bool) -> list[str]:
    """`busctl emit OBJECT INTERFACE SIGNAL SIGNATURE ARGS`: logind's PrepareForShutdown(b) on the system bus."""
    return [
        "docker",
        "exec",
        node,
        "busctl",
        "emit",
        "/org/freedesktop/login1",
        "org.freedesktop.login1.Manager",
        "PrepareForShutdown",
        "b",
        "true" if starting else "false",
    ]


def kubelet_inhibitor_argv(node: str) -> list[str]:
    """The node's inhibitor locks; the kubelet's ('kubelet', mode 'delay') shows its shutdown manager is active."""
    return ["docker", "exec", node, "systemd-inhibit", "--list", "--no-pager"]


class NodeShutdownUnavailable(RuntimeError):
    """The shutdown signal could not be sent into the node (busctl failed, node gone)."""


def announce_shutdown(node: str, starting: bool, runner: Runner = run_command) -> JsonDict:
    """Start (True) or cancel (False) a graceful shutdown of a node of the suite's shutdown cluster.

    Also says whether the kubelet held its delay inhibitor lock when the signal went out: without it the
    kubelet's shutdown manager is not running (gate off, no grace period, no logind) and the signal proves
    nothing about it — the probes check that premise as a claim of its own.
    """
    called = time.monotonic()
    locks = runner(kubelet_inhibitor_argv(node), 30)
    restarted = False
    readmitted: bool | None = None
    if starting and not _holds_lock(locks):
        # After a cancelled shutdown the kubelet may hold no lock at all: live, the second shutdown probe on a node
        # found none in 4 of 5 kind runs of 1.27.0-rc.0 and 1.27.3 (no inhibitor descriptor in the kubelet), in
        # 0 of 1 of 1.26.6, and in 1 of 1 of 1.27.4.
        # The mechanism, read in nodeshutdown_manager_linux.go at v1.27.4 (unchanged at v1.32.11 and v1.37.0;
        # the release came with k/k#98088), not traced live descriptor by descriptor: processShutdownEvent
        # closes the lock's descriptor when it is done; on cancel, acquireInhibitLock takes a new lock, whose
        # descriptor the kernel gives the lowest free number, the one just closed, and then "releases" the
        # old number, closing the new lock. A restarted kubelet takes its lock again, so each probe starts from
        # a kubelet that holds one; the answer says when it was restarted.
        restarted = runner(["docker", "exec", node, "systemctl", "restart", "kubelet"], 60).returncode == 0
        deadline = time.monotonic() + LOCK_WAIT_S
        while restarted and not _holds_lock(locks) and time.monotonic() < deadline:
            time.sleep(LOCK_POLL_S)
            locks = runner(kubelet_inhibitor_argv(node), 30)
        if restarted:
            # The lock can come before the restarted kubelet has taken back the pods already running on its node.
            # A shutdown then turns their admission down (seen live on 1.37.2, kind v0.33.0: "Pod admission
            # denied" reason NodeShutdown, 1 s after the kubelet started, the pod ended Succeeded with no
            # DisruptionTarget), which is not what the probes ask about: wait until the kubelet lists them.
            readmitted = _wait_kubelet_has_its_pods(node, runner, time.monotonic() + LOCK_WAIT_S)
    signalled_after = time.monotonic() - called
    emitted = runner(prepare_for_shutdown_argv(node, starting), 30)
    if emitted.returncode != 0:
        raise NodeShutdownUnavailable(f"could not signal PrepareForShutdown({starting}) on {node}:\n{emitted.output}")
    answer = {
        "kubelet_inhibitor": _holds_lock(locks),
        "kubelet_restarted_for_its_lock": restarted,
        "inhibitors": locks.output,
        "output": emitted.output,
        # how long after the call the signal went out (a restart and its waits come first): the shutdown's instant
        "signalled_after_s": round(signalled_after, 3),
    }
    return answer if readmitted is None else {**answer, "kubelet_took_back_its_pods": readmitted}


def control_plane_of(node: str) -> str:
    """kind's name for the control-plane node of a worker's cluster (`<cluster>-worker` -> `<cluster>-control-plane`;
    providers/common/namer.go)."""
    return node.rsplit("-worker", 1)[0] + "-control-plane"


def _pod_uids(argv: list[str], runner: Runner) -> set[str] | None:
    answer = runner(argv, 30)
    if answer.returncode != 0:
        return None
    try:
        listed = json.loads(answer.stdout)
    except ValueError:
        return None
    return {str(item["metadata"]["uid"]) for item in listed.get("items") or []}


def _wait_kubelet_has_its_pods(node: str, runner: Runner, deadline: float) -> bool:
    """Whether the kubelet came to list (its /pods, through the API server) every pod bound to its node and
    running, before the deadline. Asked with the admin kubeconfig in the control-plane node (kind's own).

    /pods lists the kubelet's pod manager, to which HandlePodAdditions adds a pod just before admitting it in the
    same step (pkg/kubelet/kubelet.go at v1.37.2), so a listed pod's admission is decided or being decided."""
    kubectl = ["docker", "exec", control_plane_of(node), "kubectl", "--kubeconfig", "/etc/kubernetes/admin.conf"]
    bound_argv = [
        *kubectl,
        "get",
        "pods",
        "-A",
        "-o",
        "json",
        f"--field-selector=spec.nodeName={node},status.phase=Running",
    ]
    kubelet_argv = [*kubectl, "get", "--raw", f"/api/v1/nodes/{node}/proxy/pods"]
    while True:
        bound, held = _pod_uids(bound_argv, runner), _pod_uids(kubelet_argv, runner)
        if bound is not None and held is not None and bound <= held:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(LOCK_POLL_S)


def _holds_lock(locks: Completed) -> bool:
    return locks.returncode == 0 and "kubelet" in locks.stdout
