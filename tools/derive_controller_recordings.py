"""Recordings for issue 8's controller probes, derived from document 000 and the Kubernetes sources it cites.

Not recorded: no cluster ran. Each scenario plays what document 000 and the cited PRs say the controllers
do on that version (which status a StatefulSet writes, which pods a Job or DaemonSet creates and when,
what a node shutdown does to a pod); object fields the sources do not show are filled with plausible
values. Called by tools/derive_recordings.py.
"""

from __future__ import annotations

import copy
from typing import Any

from derive_deadline_recordings import DOC_000, NAMESPACE, PodStates, Script, condition, job_object, manifest, ts

JsonDict = dict[str, Any]
REV_1, REV_2 = "parallel-web-5d9c7b8f6d", "parallel-web-7b4f9d6c58"


# ------------------------------------------------------------------------------ StatefulSet status


class StatefulSetStates:
    """A StatefulSet's object as the controller writes its status."""

    def __init__(self, m: JsonDict) -> None:
        self.obj: JsonDict = copy.deepcopy(m)
        self.obj["metadata"].update(namespace=NAMESPACE, uid="uid-parallel-web", generation=1)
        self.obj["status"] = {}

    def status(self, **values: Any) -> JsonDict:
        self.obj["status"].update(values)
        return self.obj


def stateful_pod(name: str, m: JsonDict, revision: str, created: float) -> PodStates:
    pod = PodStates(name, m["spec"]["template"]["spec"], created)
    pod.obj["metadata"]["labels"] = {
        **m["spec"]["template"]["metadata"]["labels"],
        "controller-revision-hash": revision,
        "statefulset.kubernetes.io/pod-name": name,
    }
    pod.obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "parallel-web", "uid": "uid-parallel-web"}
    ]
    return pod


def deleting(pod: PodStates, t: float, grace: int) -> JsonDict:
    pod.obj["metadata"].update(deletionTimestamp=ts(t + grace), deletionGracePeriodSeconds=grace)
    return pod.obj


def statefulset_status(git_version: str, replicas_dip: bool, regression: bool, basis: str) -> JsonDict:
    """Parallel scale-up to 3, partition 1 with a new template, delete parallel-web-0 twice, watch it come back.

    `replicas_dip`: the k/k#117865 controller — status.replicas written below the pods that exist, in the sync
    that creates pods (at the scale-up, and when a deleted pod is recreated).
    `regression`: and without k/k#120731 — the sync that recreates web-0 writes replicas 2 with both other pods
    updated and Ready, judges the update complete and moves currentRevision; it still creates web-0 at the old
    revision, and the second recreation comes from the moved currentRevision, at the update revision. This is
    the order the live 1.28.0 recording shows (probes/statefulset_status/recordings/*--v1.28.0-live-local.json); the
    instants are illustrative.
    """
    s = Script("test_statefulset_status_through_parallel_scale_up_and_partitioned_update", git_version, basis)
    s.probe_module, s.document = "test_statefulset_status.py", DOC_000
    m = manifest("statefulset-parallel-partitioned.yaml")
    s.watch("StatefulSet", 0.05)
    s.watch("Pod", 0.1)
    sts = StatefulSetStates(m)
    s.call("create", {"namespace": NAMESPACE, "manifest": m}, 0.2, copy.deepcopy(sts.obj))
    s.event("StatefulSet", 0.3, "ADDED", sts.obj)
    pods = {i: stateful_pod(f"parallel-web-{i}", m, REV_1, 0.35) for i in range(3)}
    for i, pod in pods.items():
        s.event("Pod", 0.35 + i * 0.01, "ADDED", pod.obj)
    revisions = {"currentRevision": REV_1, "updateRevision": REV_1}
    if replicas_dip:  # the pods just created are not counted yet (live 1.28.0: replicas 0)
        s.event("StatefulSet", 0.5, "MODIFIED", sts.status(observedGeneration=1, replicas=0, **revisions))
    s.event(
        "StatefulSet",
        0.6,
        "MODIFIED",
        sts.status(observedGeneration=1, replicas=3, currentReplicas=3, updatedReplicas=3, **revisions),
    )
    for i, pod in pods.items():
        s.event("Pod", 2.1 + i * 0.05, "MODIFIED", pod.running(2.0))
    s.event("StatefulSet", 2.4, "MODIFIED", sts.status(readyReplicas=3, availableReplicas=3))

    patch = {
        "spec": {
            "updateStrategy": {"rollingUpdate": {"partition": 1}},
            "template": {"metadata": {"annotations": {"pod-lifecycle-probes.test/revision": "2"}}},
        }
    }
    sts.obj["metadata"]["generation"] = 2
    sts.obj["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = 1
    sts.obj["spec"]["template"]["metadata"]["annotations"] = {"pod-lifecycle-probes.test/revision": "2"}
    s.call("patch", {"kind": "StatefulSet", "namespace": NAMESPACE, "name": "parallel-web", "patch": patch}, 3.0,
           copy.deepcopy(sts.obj))  # fmt: skip
    s.event("StatefulSet", 3.05, "MODIFIED", sts.obj)
    s.event("StatefulSet", 3.1, "MODIFIED", sts.status(observedGeneration=2, updateRevision=REV_2, updatedReplicas=0))
    # the update, from the highest ordinal down to the partition: web-2, then web-1
    for ordinal, t in ((2, 3.2), (1, 6.4)):
        s.event("Pod", t, "MODIFIED", deleting(pods[ordinal], t, 1))
        s.event("Pod", t + 1.1, "DELETED", pods[ordinal].obj)
        pods[ordinal] = stateful_pod(f"parallel-web-{ordinal}", m, REV_2, t + 1.2)
        s.event("Pod", t + 1.2, "ADDED", pods[ordinal].obj)
        updated = 3 - ordinal
        s.event(
            "StatefulSet",
            t + 1.3,
            "MODIFIED",
            sts.status(currentReplicas=3 - updated, updatedReplicas=updated, readyReplicas=2, availableReplicas=2),
        )
        s.event("Pod", t + 3.0, "MODIFIED", pods[ordinal].running(t + 2.9))
        s.event("StatefulSet", t + 3.1, "MODIFIED", sts.status(readyReplicas=3, availableReplicas=3))

    # web-0, the one pod below the partition, deleted twice
    at = {0: REV_1, 1: REV_2, 2: REV_2}  # each pod's revision
    delete_request = {"kind": "Pod", "namespace": NAMESPACE, "name": "parallel-web-0", "grace_period_seconds": None}
    for deleted_at in (10.0, 14.0):
        doomed = copy.deepcopy(deleting(pods[0], deleted_at, 1))
        s.call("delete", delete_request, deleted_at, doomed)
        s.event("Pod", deleted_at + 0.05, "MODIFIED", doomed)
        s.event("Pod", deleted_at + 1.1, "DELETED", doomed)
        revision = str(sts.obj["status"]["currentRevision"])  # web-0 is made from the sync's currentRevision
        if replicas_dip:  # the recreating sync does not count the pod it creates: replicas 2, both updated
            values: dict[str, Any] = {"replicas": 2, "updatedReplicas": 2, "readyReplicas": 2}
            if regression:  # updatedReplicas 2 == status.replicas 2 == readyReplicas: judged "complete"
                values.update(currentRevision=REV_2, currentReplicas=2)
            s.event("StatefulSet", deleted_at + 1.15, "MODIFIED", sts.status(**values))
        pods[0] = stateful_pod("parallel-web-0", m, revision, deleted_at + 1.2)
        at[0] = revision
        s.event("Pod", deleted_at + 1.2, "ADDED", pods[0].obj)
        current = sum(r == sts.obj["status"]["currentRevision"] for r in at.values())
        updated = sum(r == REV_2 for r in at.values())
        s.event(
            "StatefulSet",
            deleted_at + 1.3,
            "MODIFIED",
            sts.status(replicas=3, currentReplicas=current, updatedReplicas=updated, readyReplicas=2),
        )
        s.event("Pod", deleted_at + 3.1, "MODIFIED", pods[0].running(deleted_at + 3.0))
        s.event("StatefulSet", deleted_at + 3.2, "MODIFIED", sts.status(readyReplicas=3, availableReplicas=3))
    s.watch_until = 17.2 + 10.0  # the probe's settle window after the pod is back
    return s.recording()


SOURCE_STS = (
    f"{DOC_000} (StatefulSet の Conformance テストの破壊): status.replicas first written small after k/k#117865, "
    "rolling-update completion judged from it until k/k#120731"
)


def statefulset_status_recordings() -> dict[str, JsonDict]:
    return {
        "statefulset_status_through_parallel_scale_up_and_partitioned_update--v1.28.0-derived.json": (
            statefulset_status("v1.28.0", True, True, SOURCE_STS)
        ),
        "statefulset_status_through_parallel_scale_up_and_partitioned_update--v1.29.14-derived.json": (
            statefulset_status("v1.29.14", True, False, SOURCE_STS)
        ),
        "statefulset_status_through_parallel_scale_up_and_partitioned_update--v1.25.3-derived.json": (
            statefulset_status("v1.25.3", False, False, SOURCE_STS)
        ),
        # the 1.26 line got k/k#117865 (1.26.7) but never k/k#120731: still broken at its last patch
        "statefulset_status_through_parallel_scale_up_and_partitioned_update--v1.26.15-derived.json": (
            statefulset_status("v1.26.15", True, True, SOURCE_STS)
        ),
        # the 1.27 line got both (1.27.4, 1.27.8)
        "statefulset_status_through_parallel_scale_up_and_partitioned_update--v1.27.10-derived.json": (
            statefulset_status("v1.27.10", True, False, SOURCE_STS)
        ),
    }


# ---------------------------------------------------------------------------------- Job replacement

SOURCE_JOB = (
    f"{DOC_000} (why Jobs started a replacement while the old pod was terminating); the job controller's "
    "FilterActivePods and onlyReplaceFailedPods (k/k#119301, v1.28.0); KEP-3939 for podReplacementPolicy"
)


def job_pod(name: str, m: JsonDict, owner: str, created: float) -> PodStates:
    return PodStates(name, m["spec"]["template"]["spec"], created, owner=owner)


def stopped_by_sigterm(pod: PodStates, started: float, finished: float, terminal_phase: bool) -> JsonDict:
    """The container's exit 143 after its trap; the phase turns Failed only where deleted pods get one (1.27+)."""
    pod.exited(143, started, finished)
    if not terminal_phase:
        pod.obj["status"]["phase"] = "Running"
    return pod.obj


def job_replacement(
    probe: str,
    manifest_file: str,
    git_version: str,
    field: str | None,
    waits: bool,
    terminating_field: bool,
) -> JsonDict:
    """Delete the running pod at 5 s; it stops at 25 s (20 s trap). `field`: what the server does with
    spec.podReplacementPolicy ('rejected', 'dropped', 'kept', None: not in the manifest).

    A replacement that does not wait for the old pod comes at once before 1.27, and from 1.27 after the
    10 s pod-failure back-off that the deletion started (k/k#114768; seen live on 1.27.3: 10.2 s), except
    with a podFailurePolicy, where the deleted pod is not counted as failed before it is terminal.
    """
    terminal_phase = git_version >= "v1.27"
    backoff = 10.1 if git_version >= "v1.27" and "failure-policy" not in manifest_file else 0.0
    s = Script(probe, git_version, SOURCE_JOB)
    s.probe_module, s.document = "test_job_replacement.py", DOC_000
    m = manifest(manifest_file)
    name = m["metadata"]["name"]
    s.watch("Job", 0.05)
    s.watch("Pod", 0.1)
    job = job_object(copy.deepcopy(m["spec"]), name, 0.3)
    job["metadata"]["labels"] = m["metadata"]["labels"]
    if field in ("rejected",):
        s.steps.append(
            {
                "call": "create",
                "request": {"namespace": NAMESPACE, "manifest": m},
                "t_start": 0.2,
                "t_end": 0.22,
                "rejected": {"status": 400, "message": STRICT_REJECTION},
            }
        )
        without = manifest(manifest_file.replace(".yaml", ".without-policy-field.yaml"))
        del job["spec"]["podReplacementPolicy"]
        s.call("create", {"namespace": NAMESPACE, "manifest": without}, 0.25, {**copy.deepcopy(job), "status": {}})
    else:
        if field == "dropped":
            del job["spec"]["podReplacementPolicy"]
        s.call("create", {"namespace": NAMESPACE, "manifest": m}, 0.2, {**copy.deepcopy(job), "status": {}})
    s.event("Job", 0.3, "ADDED", job)
    old = job_pod(f"{name}-7xk2p", m, name, 0.35)
    s.event("Pod", 0.35, "ADDED", old.obj)
    s.event("Pod", 2.1, "MODIFIED", old.running(2.0))
    doomed = copy.deepcopy(old.deleting(5.0 + 25.0))  # grace 30 s: deletionTimestamp = 35 s
    doomed["metadata"]["deletionGracePeriodSeconds"] = 30
    s.call("delete", {"kind": "Pod", "namespace": NAMESPACE, "name": old.obj["metadata"]["name"],
                      "grace_period_seconds": None}, 5.0, doomed)  # fmt: skip
    old.obj = doomed
    s.event("Pod", 5.05, "MODIFIED", old.obj)
    created = 25.3 if waits else 5.1 + backoff
    new = job_pod(f"{name}-m2d9q", m, name, created)
    if terminating_field:
        job["status"]["terminating"] = 1
    job["status"].update(active=0)
    s.event("Job", 5.2, "MODIFIED", job)
    if not waits:
        s.event("Pod", created, "ADDED", new.obj)
        job["status"].update(active=1)
        s.event("Job", created + 0.1, "MODIFIED", job)
        s.event("Pod", created + 2.0, "MODIFIED", new.running(created + 1.9))
    s.event("Pod", 25.2, "MODIFIED", stopped_by_sigterm(old, 2.0, 25.0, terminal_phase))
    if waits:
        s.event("Pod", 25.3, "ADDED", new.obj)
    if terminating_field:
        job["status"]["terminating"] = 0
    job["status"].update(active=1, failed=1)
    s.event("Job", 25.35, "MODIFIED", job)
    s.event("Pod", 25.4, "DELETED", old.obj)
    if waits:
        s.event("Pod", 27.1, "MODIFIED", new.running(27.0))
    return s.recording()


# The API server's answer to a Strict create with a field it does not know (apiserver strict decoding).
STRICT_REJECTION = (
    'Job in version "v1" cannot be handled as a Job: strict decoding error: unknown field "spec.podReplacementPolicy"'
)


def job_replacement_recordings() -> dict[str, JsonDict]:
    scenarios: list[tuple[str, str, list[tuple[str, str | None, bool, bool]]]] = [
        ("test_job_without_policies_replaces_a_deleted_pod", "job-pod-replaced-default.yaml",
         [("v1.26.6", None, False, False), ("v1.29.14", None, False, True)]),
        ("test_job_with_pod_failure_policy_replaces_a_deleted_pod", "job-pod-replaced-with-failure-policy.yaml",
         [("v1.27.3", None, False, False), ("v1.29.14", None, True, True)]),
        ("test_job_replacing_terminating_or_failed_pods", "job-pod-replaced-terminating-or-failed.yaml",
         [("v1.27.3", "rejected", False, False), ("v1.29.14", "kept", False, True)]),
        ("test_job_replacing_failed_pods_only", "job-pod-replaced-when-failed.yaml",
         [("v1.27.3", "rejected", False, False), ("v1.28.15", "dropped", False, False),
          ("v1.29.14", "kept", True, True)]),
    ]  # fmt: skip
    out = {}
    for probe, manifest_file, versions in scenarios:
        for version, field, waits, terminating in versions:
            name = f"{probe.removeprefix('test_')}--{version}-derived.json"
            out[name] = job_replacement(probe, manifest_file, version, field, waits, terminating)
    return out


# ------------------------------------------------------------------------------ eviction and Ignore

SOURCE_EVICTION = (
    f"{DOC_000} (Pod Failure Policy: Ignore on DisruptionTarget); pkg/registry/core/pod/storage/eviction.go "
    "(DisruptionTarget/EvictionByEvictionAPI); the job controller's pod tracking per version"
)


def eviction(git_version: str) -> JsonDict:
    """Evict the Job's running pod at 5 s (its trap exits 143 at once); what the Job does with it."""
    conditions_on = git_version >= "v1.26"  # PodDisruptionConditions and JobPodFailurePolicy beta
    finalizer_tracking = git_version >= "v1.25"
    terminal_phase = git_version >= "v1.27"
    s = Script("test_evicted_pod_is_ignored_through_the_disruption_target_rule", git_version, SOURCE_EVICTION)
    s.probe_module, s.document = "test_job_failure_policy.py", DOC_000
    m = manifest("job-evicted-pod-ignored.yaml")
    name = m["metadata"]["name"]
    s.watch("Job", 0.05)
    s.watch("Pod", 0.1)
    job = job_object(copy.deepcopy(m["spec"]), name, 0.3)
    job["metadata"]["labels"] = m["metadata"]["labels"]
    s.call("create", {"namespace": NAMESPACE, "manifest": m}, 0.2, {**copy.deepcopy(job), "status": {}})
    s.event("Job", 0.3, "ADDED", job)
    first = job_pod(f"{name}-7xk2p", m, name, 0.35)
    s.event("Pod", 0.35, "ADDED", first.obj)
    s.event("Pod", 2.1, "MODIFIED", first.running(2.0))
    api_version = "policy/v1" if git_version >= "v1.22" else "policy/v1beta1"
    s.call("evict", {"namespace": NAMESPACE, "pod": first.obj["metadata"]["name"], "api_version": api_version}, 5.0,
           {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201})  # fmt: skip
    if conditions_on:
        first.obj["status"]["conditions"].append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "EvictionByEvictionAPI",
                "message": "Eviction API: evicting",
                "lastTransitionTime": ts(5.0),
            }
        )
        s.event("Pod", 5.02, "MODIFIED", first.obj)
    s.event("Pod", 5.05, "MODIFIED", deleting(first, 5.05, 5))
    if finalizer_tracking and not conditions_on:  # 1.25: the deletion counts as a failure at once
        job["status"].update(active=0, failed=1)
        job["status"]["conditions"] = [
            condition("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit", 5.1)
        ]
        s.event("Job", 5.2, "MODIFIED", job)
        s.event("Pod", 6.1, "MODIFIED", stopped_by_sigterm(first, 2.0, 6.0, terminal_phase))
        s.event("Pod", 6.3, "DELETED", first.obj)
        return s.recording()
    second = job_pod(f"{name}-m2d9q", m, name, 5.1)
    s.event("Pod", 5.1, "ADDED", second.obj)
    s.event("Pod", 6.1, "MODIFIED", stopped_by_sigterm(first, 2.0, 6.0, terminal_phase))
    s.event("Pod", 6.3, "DELETED", first.obj)
    s.event("Pod", 7.1, "MODIFIED", second.running(7.0))
    s.event("Pod", 19.2, "MODIFIED", completed(second, 7.0, 19.0))
    job["status"].update(active=0, succeeded=1, failed=0)
    job["status"]["conditions"] = [{"type": "Complete", "status": "True", "lastTransitionTime": ts(19.3)}]
    s.event("Job", 19.4, "MODIFIED", job)
    return s.recording()


def completed(pod: PodStates, started: float, finished: float) -> JsonDict:
    pod.exited(0, started, finished)
    pod.obj["status"]["phase"] = "Succeeded"
    pod.obj["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] = "Completed"
    return pod.obj


def eviction_recordings() -> dict[str, JsonDict]:
    return {
        f"evicted_pod_is_ignored_through_the_disruption_target_rule--{v}-derived.json": eviction(v)
        for v in ("v1.21.14", "v1.25.16", "v1.27.3")
    }


# ------------------------------------------------------------------------------ graceful node shutdown

WORKER = "kind-worker"
SHUTDOWN_MESSAGE = "Pod was terminated in response to imminent node shutdown."
SOURCE_SHUTDOWN = (
    f"{DOC_000} (DaemonSet / StatefulSet pods after graceful node shutdown, k/k#117018, k/k#118310); the kubelet's "
    "nodeshutdown manager (reason, message, DisruptionTarget); k/k#115331 release note (Succeeded after shutdown)"
)
INHIBITORS = (
    "WHO     UID USER PID  COMM    WHAT     WHY                                        MODE\n"
    "kubelet 0   root 212  kubelet shutdown Kubelet needs time to handle node shutdown delay\n\n1 inhibitors listed."
)


def workload_pod(kind: str, workload: str, m: JsonDict, name: str, created: float) -> PodStates:
    pod = PodStates(name, m["spec"]["template"]["spec"], created)
    pod.obj["spec"]["nodeName"] = WORKER
    pod.obj["metadata"]["uid"] = f"uid-{name}-{created}"
    pod.obj["metadata"]["labels"] = dict(m["spec"]["template"]["metadata"]["labels"])
    pod.obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": kind, "name": workload, "uid": f"uid-{workload}", "controller": True}
    ]
    return pod


def node_shutdown(kind: str, git_version: str, replaced: bool) -> JsonDict:
    """Shut the worker down at 5 s; the pod's trap exits 0 at once; cancel; the controller's answer.

    `replaced`: the controller deletes the stopped pod and runs a new one once the node is back.
    """
    listening = git_version >= "v1.21"
    succeeded = git_version >= "v1.27"  # k/k#115331 (v1.27.0-rc.0): exit 0 after a shutdown is Succeeded
    conditions_on = git_version >= "v1.26"
    legacy_reason = git_version < "v1.22"
    daemon = kind == "DaemonSet"
    probe = f"test_{'daemonset' if daemon else 'statefulset'}_pod_after_graceful_node_shutdown"
    s = Script(probe, git_version, SOURCE_SHUTDOWN)
    s.probe_module, s.document = "test_node_shutdown.py", DOC_000
    m = manifest("daemonset-on-shutdown-node.yaml" if daemon else "statefulset-on-shutdown-node.yaml")
    workload = m["metadata"]["name"]
    s.watch("Pod", 0.1)
    created = copy.deepcopy(m)
    created["metadata"].update(namespace=NAMESPACE, uid=f"uid-{workload}", generation=1)
    s.call("create", {"namespace": NAMESPACE, "manifest": m}, 0.2, created)
    name = f"{workload}-x7k2p" if daemon else f"{workload}-0"
    first = workload_pod(kind, workload, m, name, 0.4)
    s.event("Pod", 0.4, "ADDED", first.obj)
    s.event("Pod", 3.1, "MODIFIED", first.running(3.0))
    s.call("node_shutdown", {"node": WORKER, "starting": True}, 5.0,
           {"kubelet_inhibitor": listening, "inhibitors": INHIBITORS if listening else "0 inhibitors listed.",
            "output": ""})  # fmt: skip
    if not listening:  # the kubelet does not act on the signal: the probe waits its 45 s, then cancels
        cancel_at = 5.0 + 45.0 + 0.1
        s.call("node_shutdown", {"node": WORKER, "starting": False}, cancel_at,
               {"kubelet_inhibitor": False, "inhibitors": "0 inhibitors listed.", "output": ""})  # fmt: skip
        s.watch_until = cancel_at + 150.0
        return s.recording()
    status = first.obj["status"]
    reason, message = (
        ("Shutdown", "Node is shutting, evicting pods") if legacy_reason else ("Terminated", SHUTDOWN_MESSAGE)
    )
    status.update(phase="Failed", reason=reason, message=message)
    if conditions_on:
        status["conditions"].append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "TerminationByKubelet",
                "message": message,
                "lastTransitionTime": ts(5.2),
            }
        )
    s.event("Pod", 5.3, "MODIFIED", first.obj)
    kept = [c for c in status["conditions"] if c["type"] == "DisruptionTarget"]
    first.exited(0, 3.0, 6.0)  # (resets the Ready conditions)
    status["conditions"].extend(kept)
    status["containerStatuses"][0]["state"]["terminated"]["reason"] = "Completed"
    status["phase"] = "Succeeded" if succeeded else "Failed"
    if succeeded:  # the kubelet carries reason and message over only while the phase is unchanged (Failed -> Succeeded)
        del status["reason"], status["message"]
    s.event("Pod", 6.3, "MODIFIED", first.obj)
    cancel_at = 6.4
    s.call("node_shutdown", {"node": WORKER, "starting": False}, cancel_at,
           {"kubelet_inhibitor": True, "inhibitors": INHIBITORS, "output": ""})  # fmt: skip
    if not replaced:  # k/k#117018 / k/k#118310: the Succeeded pod is left in place
        s.watch_until = cancel_at + 150.0
        return s.recording()
    s.event("Pod", 8.0, "MODIFIED", deleting(first, 8.0, 0))
    s.event("Pod", 8.1, "DELETED", first.obj)
    second = workload_pod(kind, workload, m, f"{workload}-p4m8z" if daemon else name, 9.0)
    s.event("Pod", 9.0, "ADDED", second.obj)
    s.event("Pod", 11.1, "MODIFIED", second.running(11.0))
    return s.recording()


def node_shutdown_recordings() -> dict[str, JsonDict]:
    runs = [
        ("DaemonSet", "v1.20.15", False), ("DaemonSet", "v1.21.14", True), ("DaemonSet", "v1.26.6", True),
        ("DaemonSet", "v1.27.0-rc.0", False), ("DaemonSet", "v1.27.3", True),
        ("StatefulSet", "v1.26.6", True), ("StatefulSet", "v1.27.3", False), ("StatefulSet", "v1.28.0", False),
        ("StatefulSet", "v1.28.15", True),
    ]  # fmt: skip
    out = {}
    for kind, version, replaced in runs:
        probe = f"{'daemonset' if kind == 'DaemonSet' else 'statefulset'}_pod_after_graceful_node_shutdown"
        out[f"{probe}--{version}-derived.json"] = node_shutdown(kind, version, replaced)
    return out
