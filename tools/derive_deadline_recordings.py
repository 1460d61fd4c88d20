"""Recordings for probes/active_deadline/test_active_deadline.py derived from document 001 (and, for 1.31+, k/k#125510).

Not recorded: no cluster ran. Each scenario replays what document 001 reports for kind v1.21.1 (phases,
reasons, messages, exit codes, which pods and containers remain, the job controller's events), on the
probes' shorter deadlines; object fields the document does not show are filled with plausible values.
Called by tools/derive_recordings.py.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from harness.manifests import load_manifest
from harness.probe import labelled
from harness.transport import RECORDING_FORMAT

JsonDict = dict[str, Any]
DOC_001 = "shared/seeds/001_626b127e201bb90e.txt"
DOC_000 = "shared/seeds/000_c1d4d88888778485.txt"
NAMESPACE = "plp-derived"
NODE = "kind-control-plane"
EPOCH = datetime(2021, 6, 11, 14, 0, 0, tzinfo=UTC)  # the document's experiments ran on 2021-06-11
POD_DEADLINE_MESSAGE = "Pod was active on the node longer than the specified deadline"
GRACE = 5.0
UPTIME_AT_0 = 1000.0  # the node's /proc/uptime at t=0, for the instants the deadline pods write down


def ts(t: float) -> str:
    return (EPOCH + timedelta(seconds=int(t))).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Script:
    """The calls a probe makes, with the watch events as they would arrive, on one clock."""

    probe: str
    git_version: str
    basis: str
    steps: list[JsonDict] = field(default_factory=list)
    probe_module: str = "test_active_deadline.py"
    watches: dict[str, JsonDict] = field(default_factory=dict)
    rv: int = 100
    document: str = DOC_001
    watch_until: float = 0.0  # the probe keeps watching at least until then (a settle window)

    def call(self, call: str, request: JsonDict, t: float, response: Any) -> None:
        self.steps.append(
            {
                "call": call,
                "request": request,
                "t_start": round(t, 3),
                "t_end": round(t + 0.02, 3),
                "response": response,
            }
        )

    def watch(self, kind: str, t: float) -> None:
        self.call(
            "list_objects",
            {"kind": kind, "namespace": NAMESPACE},
            t,
            {"metadata": {"resourceVersion": str(self.rv)}, "items": []},
        )
        step = {
            "call": "watch",
            "request": {"kind": kind, "namespace": NAMESPACE, "name": None, "resource_version": str(self.rv)},
            "t_start": round(t + 0.03, 3),
            "events": [],
        }
        self.steps.append(step)
        self.watches[kind] = step

    def event(self, kind: str, t: float, type_: str, obj: JsonDict) -> None:
        self.rv += 1
        snapshot = copy.deepcopy(obj)
        snapshot["metadata"]["resourceVersion"] = str(self.rv)
        self.watches[kind]["events"].append({"t": round(t, 3), "type": type_, "object": snapshot})

    def recording(self) -> JsonDict:
        end = max([s.get("t_end", 0.0) for s in self.steps] + [self.watch_until]) + 0.5
        for step in self.watches.values():
            step["events"].sort(key=lambda e: e["t"])
            step["closed_at"] = round(max([end] + [e["t"] for e in step["events"]]), 3)
        version = {
            "major": "1",
            "minor": self.git_version.split(".")[1],
            "gitVersion": self.git_version,
            "platform": "linux/amd64",
        }
        return {
            "format": RECORDING_FORMAT,
            "probe": f"{self.probe_module}::{self.probe}",
            "origin": {
                "kind": "derived",
                "note": "Derived, not recorded: no cluster ran. States and timings are what the basis reports; "
                "object fields not shown by the basis are filled with plausible values.",
                "basis": self.basis,
                "document": self.document,
                "namespace": NAMESPACE,
                "run_id": "derived",
                "node_access": True,
            },
            "interactions": [
                {"call": "server_version", "request": {}, "t_start": 0.0, "t_end": 0.02, "response": version},
                *self.steps,
            ],
        }


def manifest(name: str) -> JsonDict:
    """A manifest of a family (or an overlay of one) as the probe applies it."""
    return labelled(load_manifest(name), "derived")


def container_id(seed: str) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()


class PodStates:
    """One pod through its life, as the API server would serialise it."""

    def __init__(self, name: str, spec: JsonDict, created: float, owner: str | None = None) -> None:
        self.id = container_id(name)
        meta: JsonDict = {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}", "creationTimestamp": ts(created)}
        if owner:
            meta["labels"] = {"controller-uid": f"uid-{owner}", "job-name": owner}
            meta["ownerReferences"] = [
                {"apiVersion": "batch/v1", "kind": "Job", "name": owner, "uid": f"uid-{owner}", "controller": True}
            ]
        self.obj: JsonDict = {
            "metadata": meta,
            "spec": {**copy.deepcopy(spec), "nodeName": NODE},
            "status": {"phase": "Pending"},
        }

    def container(self, state: JsonDict, ready: bool) -> None:
        image = self.obj["spec"]["containers"][0]["image"]
        self.obj["status"]["containerStatuses"] = [
            {
                "name": "main",
                "image": image,
                "imageID": image,
                "ready": ready,
                "restartCount": 0,
                "containerID": f"containerd://{self.id}",
                "state": state,
            }
        ]

    def conditions(self, ready: bool) -> None:
        value = "True" if ready else "False"
        self.obj["status"]["conditions"] = [{"type": t, "status": value} for t in ("Ready", "ContainersReady")]

    def running(self, started: float) -> JsonDict:
        self.obj["status"].update(phase="Running", startTime=ts(started), podIP="10.244.0.36")
        self.container({"running": {"startedAt": ts(started)}}, ready=True)
        self.conditions(True)
        return self.obj

    def deadline_failed(self) -> JsonDict:
        self.obj["status"].update(phase="Failed", reason="DeadlineExceeded", message=POD_DEADLINE_MESSAGE)
        self.conditions(False)
        return self.obj

    def exited(self, code: int, started: float, finished: float) -> JsonDict:
        terminated = {"exitCode": code, "reason": "Error", "startedAt": ts(started), "finishedAt": ts(finished)}
        self.container({"terminated": {**terminated, "containerID": f"containerd://{self.id}"}}, ready=False)
        self.obj["status"]["phase"] = "Failed"
        self.conditions(False)
        return self.obj

    def killed(self, started: float, finished: float, sigterm: float | None = None) -> JsonDict:
        """SIGKILLed at `finished`; with `sigterm`, the termination message the deadline pods write: their
        SIGTERM instant and a heartbeat every 0.1 s (and a little) until the kill, on the node's uptime."""
        terminated: JsonDict = {
            "exitCode": 137,
            "reason": "Error",
            "startedAt": ts(started),
            "finishedAt": ts(finished),
            "containerID": f"containerd://{self.id}",
        }
        if sigterm is not None:
            beats = [sigterm + 0.11 * (i + 1) for i in range(int((finished - sigterm) / 0.11))]
            lines = [f"sigterm {UPTIME_AT_0 + sigterm:.2f}", *(f"alive {UPTIME_AT_0 + b:.2f}" for b in beats)]
            terminated["message"] = "".join(f"{line}\n" for line in lines)
        self.container({"terminated": terminated}, ready=False)
        self.conditions(False)
        return self.obj

    def deleting(self, t: float) -> JsonDict:
        self.obj["metadata"].update(deletionTimestamp=ts(t + GRACE), deletionGracePeriodSeconds=int(GRACE))
        return self.obj


def node_listing(present: dict[str, str]) -> list[JsonDict]:
    return [{"id": cid, "metadata": {"name": "main", "attempt": 0}, "state": state} for cid, state in present.items()]


def job_object(spec: JsonDict, name: str, start: float) -> JsonDict:
    return {
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}"},
        "spec": spec,
        "status": {"startTime": ts(start), "active": 1},
    }


def condition(type_: str, reason: str, message: str, t: float) -> JsonDict:
    return {
        "type": type_,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastProbeTime": ts(t),
        "lastTransitionTime": ts(t),
    }


def events_for(job: str, *entries: tuple[str, str, str, float]) -> list[JsonDict]:
    return [
        {
            "metadata": {"name": f"{job}.{i}", "namespace": NAMESPACE},
            "involvedObject": {"kind": "Job", "name": job, "namespace": NAMESPACE},
            "type": type_,
            "reason": reason,
            "message": message,
            "firstTimestamp": ts(t),
            "source": {"component": "job-controller"},
        }
        for i, (type_, reason, message, t) in enumerate(entries)
    ]


# ------------------------------------------------------------------------------------------ scenarios


def pod_deadline(git_version: str) -> JsonDict:
    """pod-01: deadline 10 s, grace 5 s: Failed at ~10 s, SIGTERM then, SIGKILLed 5 s later, everything stays."""
    s = Script("test_pod_deadline", git_version, f"{DOC_001}, pod-01 (kind v1.21.1)")
    m = manifest("pod-active-deadline.yaml")
    s.watch("Pod", 0.05)
    pod = PodStates("pod-01", m["spec"], 0.2)
    s.call(
        "create",
        {"namespace": NAMESPACE, "manifest": m},
        0.2,
        copy.deepcopy({**pod.obj, "metadata": {**pod.obj["metadata"], "labels": m["metadata"]["labels"]}}),
    )
    pod.obj["metadata"]["labels"] = m["metadata"]["labels"]
    s.event("Pod", 0.25, "ADDED", pod.obj)
    s.event("Pod", 2.1, "MODIFIED", pod.running(2.0))
    s.event("Pod", 13.0, "MODIFIED", pod.deadline_failed())
    s.event("Pod", 17.6, "MODIFIED", pod.killed(2.0, 17.05, sigterm=12.05))
    s.call("read_log", {"namespace": NAMESPACE, "pod": "pod-01", "container": "main"}, 17.7, "1\n2\n3\n4\n5\n6\n")
    s.call("node_containers", {"node": NODE}, 22.7, node_listing({pod.id: "CONTAINER_EXITED"}))
    return s.recording()


@dataclass
class JobRun:
    probe: str
    manifest: str
    pods: list[str]
    final: Callable[[Script, JsonDict, list[PodStates]], None]


def job_run(run: JobRun, git_version: str, basis: str) -> JsonDict:
    s = Script(run.probe, git_version, basis)
    m = manifest(run.manifest)
    s.watch("Job", 0.05)
    s.watch("Pod", 0.1)
    name = m["metadata"]["name"]
    job = job_object(m["spec"], name, 0.0)
    job["metadata"]["labels"] = m["metadata"]["labels"]
    s.call("create", {"namespace": NAMESPACE, "manifest": m}, 0.2, {**copy.deepcopy(job), "status": {}})
    s.event("Job", 0.3, "ADDED", job)
    pods = [PodStates(p, m["spec"]["template"]["spec"], 0.3, owner=name) for p in run.pods]
    run.final(s, job, pods)
    return s.recording()


def job_01(s: Script, job: JsonDict, pods: list[PodStates]) -> None:
    """Job deadline 10 s: the active pod is deleted (grace 5 s, SIGKILL), then removed from the node by GC."""
    (pod,) = pods
    delayed = s.git_version >= "v1.31"
    s.event("Pod", 0.35, "ADDED", pod.obj)
    s.event("Pod", 2.1, "MODIFIED", pod.running(2.0))
    message = "Job was active longer than specified deadline"
    if delayed:  # k/k#125510: FailureTarget at the deadline, Failed once the pod is terminal
        job["status"].update(
            active=0, terminating=1, conditions=[condition("FailureTarget", "DeadlineExceeded", message, 10.0)]
        )
        s.event("Job", 10.3, "MODIFIED", job)
    s.event("Pod", 10.4, "MODIFIED", pod.deleting(10.3))
    s.event("Pod", 15.8, "MODIFIED", pod.killed(2.0, 15.3))
    s.event("Pod", 16.1, "DELETED", pod.obj)
    failed_t = 16.0 if delayed else 10.0
    conditions = [*job["status"].get("conditions", []), condition("Failed", "DeadlineExceeded", message, failed_t)]
    job["status"].update(active=0, failed=1, terminating=0 if delayed else None, conditions=conditions)
    job["status"] = {k: v for k, v in job["status"].items() if v is not None}
    s.event("Job", failed_t + 0.3, "MODIFIED", job)
    after = max(16.1, failed_t + 0.3)
    s.call(
        "list_events",
        {"namespace": NAMESPACE},
        after + 0.1,
        events_for(
            job["metadata"]["name"],
            ("Normal", "SuccessfulCreate", f"Created pod: {pod.obj['metadata']['name']}", 0.3),
            ("Normal", "SuccessfulDelete", f"Deleted pod: {pod.obj['metadata']['name']}", 10.3),
            ("Warning", "DeadlineExceeded", message, failed_t),
        ),
    )
    s.call("node_containers", {"node": NODE}, after + 0.2, node_listing({pod.id: "CONTAINER_EXITED"}))
    s.call("node_containers", {"node": NODE}, after + 3.3, node_listing({}))


def job_02(s: Script, job: JsonDict, pods: list[PodStates]) -> None:
    """Pod deadline 10 s < Job's 60 s, backoffLimit 0: BackoffLimitExceeded; the pod and container stay."""
    (pod,) = pods
    s.event("Pod", 0.35, "ADDED", pod.obj)
    s.event("Pod", 2.1, "MODIFIED", pod.running(2.0))
    s.event("Pod", 13.0, "MODIFIED", pod.deadline_failed())
    job["status"].update(
        active=0,
        failed=1,
        conditions=[condition("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit", 13.0)],
    )
    s.event("Job", 13.3, "MODIFIED", job)
    s.event("Pod", 17.6, "MODIFIED", pod.killed(2.0, 17.05, sigterm=12.05))
    s.call(
        "read_log",
        {"namespace": NAMESPACE, "pod": pod.obj["metadata"]["name"], "container": "main"},
        17.7,
        "1\n2\n3\n4\n5\n6\n",
    )
    s.call("node_containers", {"node": NODE}, 22.7, node_listing({pod.id: "CONTAINER_EXITED"}))


def job_03(s: Script, job: JsonDict, pods: list[PodStates]) -> None:
    """Job deadline 10 s < pod's 60 s: DeadlineExceeded, the pod deleted and its container removed."""
    (pod,) = pods
    s.event("Pod", 0.35, "ADDED", pod.obj)
    s.event("Pod", 2.1, "MODIFIED", pod.running(2.0))
    job["status"].update(
        active=0,
        failed=1,
        conditions=[condition("Failed", "DeadlineExceeded", "Job was active longer than specified deadline", 10.0)],
    )
    s.event("Job", 10.3, "MODIFIED", job)
    s.event("Pod", 10.4, "MODIFIED", pod.deleting(10.3))
    s.event("Pod", 15.8, "MODIFIED", pod.killed(2.0, 15.3))
    s.event("Pod", 16.1, "DELETED", pod.obj)
    s.call("node_containers", {"node": NODE}, 16.3, node_listing({pod.id: "CONTAINER_EXITED"}))
    s.call("node_containers", {"node": NODE}, 19.4, node_listing({}))


def job_04(s: Script, job: JsonDict, pods: list[PodStates]) -> None:
    """Pod deadline 15 s, Job's 37 s: the first pod fails and stays; the retry is deleted at 37 s."""
    first, retry = pods
    s.event("Pod", 0.35, "ADDED", first.obj)
    s.event("Pod", 2.1, "MODIFIED", first.running(2.0))
    s.event("Pod", 17.5, "MODIFIED", first.deadline_failed())
    job["status"].update(active=0, failed=1)
    s.event("Job", 17.7, "MODIFIED", job)
    s.event("Pod", 22.6, "MODIFIED", first.killed(2.0, 22.0))
    s.event("Pod", 27.6, "ADDED", retry.obj)
    job["status"].update(active=1)
    s.event("Job", 27.7, "MODIFIED", job)
    s.event("Pod", 29.1, "MODIFIED", retry.running(29.0))
    message = "Job was active longer than specified deadline"
    job["status"].update(active=0, failed=2, conditions=[condition("Failed", "DeadlineExceeded", message, 37.0)])
    s.event("Job", 37.3, "MODIFIED", job)
    s.event("Pod", 37.4, "MODIFIED", retry.deleting(37.3))
    s.event("Pod", 42.8, "MODIFIED", retry.killed(29.0, 42.3))
    s.event("Pod", 43.1, "DELETED", retry.obj)
    both = {first.id: "CONTAINER_EXITED", retry.id: "CONTAINER_EXITED"}
    s.call("node_containers", {"node": NODE}, 43.3, node_listing(both))
    s.call("node_containers", {"node": NODE}, 46.4, node_listing({first.id: "CONTAINER_EXITED"}))
    s.call("node_containers", {"node": NODE}, 46.5, node_listing({first.id: "CONTAINER_EXITED"}))


DOC_JOB = f"{DOC_001}, %s (kind v1.21.1)"
JOB_RUNS = [
    (JobRun("test_job_deadline", "job-active-deadline.yaml", ["job-01-xntdw"], job_01), "v1.21.1", DOC_JOB % "job-01"),
    (
        JobRun("test_job_deadline", "job-active-deadline.yaml", ["job-01-xntdw"], job_01),
        "v1.31.14",
        f"{DOC_JOB % 'job-01'}; the FailureTarget condition and the Failed condition set only once the pod is terminal "
        "follow k/k#125510 (pkg/controller/job/job_controller.go newFailureCondition)",
    ),
    (
        JobRun("test_job_with_shorter_pod_deadline", "job-pod-deadline-shorter.yaml", ["job-02-d2w6v"], job_02),
        "v1.21.1",
        DOC_JOB % "job-02",
    ),
    (
        JobRun("test_job_with_shorter_job_deadline", "job-deadline-shorter.yaml", ["job-03-h66hc"], job_03),
        "v1.21.1",
        DOC_JOB % "job-03",
    ),
    (
        JobRun(
            "test_job_deadline_during_retry", "job-deadline-during-retry.yaml", ["job-04-vsw8x", "job-04-5bjnz"], job_04
        ),
        "v1.21.1",
        DOC_JOB % "job-04",
    ),
]


def failure_policy(git_version: str) -> JsonDict:
    """Document 000's Job: exit 42. With the policy (1.26+): one pod, Failed/PodFailurePolicy. Without it:
    the field is dropped, one retry after the 10 s back-off, Failed/BackoffLimitExceeded."""
    with_policy = git_version >= "v1.26"
    s = Script(
        "test_exit_code_42_fails_the_job_through_its_pod_failure_policy",
        git_version,
        f"{DOC_000} (Pod Failure Policy section); outcome per kubernetes/kubernetes pkg/controller/job "
        "pod_failure_policy.go and the JobPodFailurePolicy feature gate (beta from 1.26)",
    )
    s.probe_module = "test_job_failure_policy.py"
    s.document = DOC_000
    m = manifest("job-pod-failure-policy-exit-42.yaml")
    name = m["metadata"]["name"]
    s.watch("Job", 0.05)
    s.watch("Pod", 0.1)
    job = job_object(m["spec"], name, 0.0)
    job["metadata"]["labels"] = m["metadata"]["labels"]
    s.call("create", {"namespace": NAMESPACE, "manifest": m}, 0.2, {**copy.deepcopy(job), "status": {}})
    s.event("Job", 0.3, "ADDED", job)
    first = PodStates(f"{name}-7xk2p", m["spec"]["template"]["spec"], 0.3, owner=name)
    s.event("Pod", 0.35, "ADDED", first.obj)
    s.event("Pod", 2.1, "MODIFIED", first.running(2.0))
    s.event("Pod", 7.3, "MODIFIED", first.exited(42, 2.0, 7.0))
    if with_policy:
        pod = f"{NAMESPACE}/{first.obj['metadata']['name']}"
        message = f"Container main for pod {pod} failed with exit code 42 matching FailJob rule at index 0"
        # First the interim FailureTarget (the pod's finalizer is removed meanwhile), then Failed on the next sync.
        job["status"].update(
            active=0, failed=1, conditions=[condition("FailureTarget", "PodFailurePolicy", message, 7.0)]
        )
        s.event("Job", 7.5, "MODIFIED", job)
        job["status"]["conditions"] = [
            condition("FailureTarget", "PodFailurePolicy", message, 7.0),
            condition("Failed", "PodFailurePolicy", message, 8.0),
        ]
        s.event("Job", 8.1, "MODIFIED", job)
        return s.recording()
    job["status"].update(active=0, failed=1)
    s.event("Job", 7.4, "MODIFIED", job)
    retry = PodStates(f"{name}-m2d9q", m["spec"]["template"]["spec"], 17.4, owner=name)
    s.event("Pod", 17.45, "ADDED", retry.obj)
    s.event("Pod", 19.1, "MODIFIED", retry.running(19.0))
    s.event("Pod", 24.3, "MODIFIED", retry.exited(42, 19.0, 24.0))
    job["status"].update(
        failed=2,
        conditions=[condition("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit", 24.0)],
    )
    s.event("Job", 24.5, "MODIFIED", job)
    return s.recording()


def recordings() -> dict[str, JsonDict]:
    """File name -> recording, for every derived scenario of the active-deadline probes."""
    out = {"pod_deadline--v1.21.1-derived.json": pod_deadline("v1.21.1")}
    for run, version, basis in JOB_RUNS:
        out[f"{run.probe.removeprefix('test_')}--{version}-derived.json"] = job_run(run, version, basis)
    return out


def failure_policy_recordings() -> dict[str, JsonDict]:
    return {f"exit_code_42--{v}-derived.json": failure_policy(v) for v in ("v1.25.16", "v1.27.3")}
