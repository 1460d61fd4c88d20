"""Recordings for probes/termination_order/test_termination_order.py derived from document 002 and the kubelet's source.

Not recorded: no cluster ran. Document 002 describes the order (it measures nothing), so the instants here
follow it and kubernetes/kubernetes pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer: preStop
for at most the grace, SIGTERM, then SIGKILL after what remains of the grace (at least 2 s). Called by
tools/derive_recordings.py.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from harness.families import manifest_path
from harness.manifests import load_manifest
from harness.probe import labelled
from harness.transport import RECORDING_FORMAT

JsonDict = dict[str, Any]
REPO = Path(__file__).resolve().parent.parent
DOC_002 = "shared/seeds/002_a881ba7d7f4b4973.txt"
NAMESPACE = "plp-derived"
WALL_EPOCH = 1_700_000_000.0  # this machine's clock at t=0 of the recording
EPOCH = datetime.fromtimestamp(WALL_EPOCH, UTC)
UPTIME_AT_0 = 1000.0  # the node's /proc/uptime at t=0
STARTED, DELETED = 2.0, 2.32


def ts(t: float) -> str:
    return (EPOCH + timedelta(seconds=int(t))).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Scenario:
    probe: str
    manifest: str  # the manifest the probe applies; grace and prestop are what it says
    grace: int
    prestop: int | None  # None: the manifest has no preStop hook
    override: int | None = None
    handles_sigterm: bool = False


def timeline(s: Scenario) -> tuple[float, list[tuple[str, float]], int]:
    """When the container finished, the instants it logs, and its exit code."""
    grace = s.override if s.override is not None else s.grace
    if s.prestop is None:  # the SIGTERM-trapping pod: exits within a second of SIGTERM
        return DELETED + 1.0, [("started", STARTED)], 0
    hook_start = DELETED + 0.08
    hook_end = hook_start + s.prestop
    instants = [("started", STARTED), ("prestop-start", hook_start)]
    if s.prestop < grace:
        instants.append(("prestop-end", hook_end + 0.02))
        sigterm = hook_end + 0.1
        remaining = max(grace - int(hook_end - hook_start), 2)
    else:  # cut off at the grace; then the fixed minimum of 2 s
        sigterm = DELETED + grace + 0.03
        remaining = 2
    instants.append(("sigterm", sigterm))
    if s.handles_sigterm:
        instants.append(("exiting", sigterm + 1.02))
        return sigterm + 1.05, instants, 0
    end = sigterm - 0.1 + remaining
    # The timeline pod's heartbeat from SIGTERM on, every 0.1 s (and a little) until SIGKILL.
    beats = int((end - sigterm) / 0.11)
    instants.extend(("alive", round(sigterm + 0.11 * (i + 1), 2)) for i in range(beats))
    return end, instants, 137


def derive(s: Scenario, git_version: str) -> JsonDict:
    manifest: JsonDict = labelled(load_manifest(s.manifest), "derived")  # as the probe applies it
    assert manifest["spec"]["terminationGracePeriodSeconds"] == s.grace, f"{s.manifest}: not the grace of {s}"
    if s.prestop is not None:
        hook = manifest["spec"]["containers"][0]["lifecycle"]["preStop"]["exec"]["command"][-1]
        assert f"sleep {s.prestop}\n" in hook, f"{s.manifest}: not the preStop of {s}"
    name = manifest["metadata"]["name"]
    grace = s.override if s.override is not None else manifest["spec"]["terminationGracePeriodSeconds"]
    finished, instants, exit_code = timeline(s)
    cid = "containerd://" + hashlib.sha256(f"{s.probe}/{git_version}".encode()).hexdigest()

    pod = copy.deepcopy(manifest)
    pod["metadata"].update(namespace=NAMESPACE, uid=f"uid-{name}", resourceVersion="500", creationTimestamp=ts(0))
    pod["spec"]["nodeName"] = "kind-control-plane"
    pod["status"] = {"phase": "Pending"}
    rv = 500

    def snapshot() -> JsonDict:
        nonlocal rv
        rv += 1
        pod["metadata"]["resourceVersion"] = str(rv)
        return copy.deepcopy(pod)

    def container(state: JsonDict, ready: bool) -> None:
        pod["status"]["containerStatuses"] = [
            {"name": "main", "ready": ready, "restartCount": 0, "containerID": cid, "state": state}
        ]
        pod["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]

    created = snapshot()
    pod["status"].update(phase="Running", startTime=ts(0.2))
    container({"running": {"startedAt": ts(STARTED)}}, ready=True)
    events = [{"t": STARTED + 0.3, "type": "MODIFIED", "object": snapshot()}]
    pod["metadata"].update(deletionTimestamp=ts(DELETED + grace), deletionGracePeriodSeconds=grace)
    deleting = snapshot()
    events.append({"t": DELETED + 0.03, "type": "MODIFIED", "object": copy.deepcopy(deleting)})
    reason = "Completed" if exit_code == 0 else "Error"
    # The timeline pods append each instant to /dev/termination-log, which the kubelet copies into the
    # terminated state's message (the container and its log are removed as soon as it dies).
    log = "".join(f"{label} {UPTIME_AT_0 + t:.2f}\n" for label, t in sorted(instants, key=lambda i: i[1]))
    terminated: JsonDict = {
        "exitCode": exit_code,
        "reason": reason,
        "startedAt": ts(STARTED),
        "finishedAt": ts(finished),
        "containerID": cid,
    }
    if s.prestop is not None:
        terminated["message"] = log
    container({"terminated": terminated}, ready=False)
    events.append({"t": round(finished + 0.4, 3), "type": "MODIFIED", "object": snapshot()})
    steps: list[JsonDict] = [
        {
            "call": "server_version",
            "request": {},
            "t_start": 0.0,
            "t_end": 0.02,
            "response": {"major": "1", "minor": git_version.split(".")[1], "gitVersion": git_version},
        },
        {
            "call": "create",
            "request": {"namespace": NAMESPACE, "manifest": manifest},
            "t_start": 0.03,
            "t_end": 0.06,
            "response": created,
        },
        {
            "call": "watch",
            "request": {
                "kind": "Pod",
                "namespace": NAMESPACE,
                "name": name,
                "resource_version": created["metadata"]["resourceVersion"],
            },
            "t_start": 0.07,
            "events": events,
            "closed_at": round(finished + 0.4, 3),
        },
        {
            "call": "wall_clock",
            "request": {},
            "t_start": STARTED + 0.3,
            "t_end": STARTED + 0.31,
            "response": WALL_EPOCH + DELETED - 0.01,
        },
        {
            "call": "delete",
            "request": {"kind": "Pod", "namespace": NAMESPACE, "name": name, "grace_period_seconds": s.override},
            "t_start": DELETED,
            "t_end": DELETED + 0.02,
            "response": deleting,
        },
    ]
    return {
        "format": RECORDING_FORMAT,
        "probe": f"test_termination_order.py::{s.probe}",
        "origin": {
            "kind": "derived",
            "note": "Derived, not recorded: no cluster ran. Instants follow the basis; object fields it does not show "
            "are filled with plausible values.",
            "basis": f"{DOC_002} §1 and §2-a (an account of the order, no measurements); kubernetes/kubernetes "
            "pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer",
            "document": DOC_002,
            "namespace": NAMESPACE,
            "run_id": "derived",
            "node_access": True,
        },
        "interactions": steps,
    }


SCENARIOS = [
    Scenario("test_deletion_fields_from_the_spec", "pod-finalizer-traps-sigterm.grace-7s.yaml", 7, None),
    Scenario(
        "test_deletion_fields_with_a_grace_period_override",
        "pod-finalizer-traps-sigterm.grace-7s.yaml",
        7,
        None,
        override=3,
    ),
    Scenario("test_prestop_within_the_grace_period", "pod-prestop-timeline.within-grace.yaml", 10, 3),
    Scenario("test_prestop_overrunning_the_grace_period", "pod-prestop-timeline.overrunning-grace.yaml", 5, 30),
    Scenario(
        "test_sigterm_handled_after_prestop",
        "pod-graceful-exit-after-prestop.prestop-2s.yaml",
        10,
        2,
        handles_sigterm=True,
    ),
]


def derive_replacement(git_version: str) -> JsonDict:
    """Deployment of one replica whose container ignores SIGTERM (grace 10 s): the old pod is deleted at
    t=3.31, the ReplicaSet's replacement appears at t=3.4, the old container is SIGKILLed at t=13.3."""
    deployment: JsonDict = labelled(
        yaml.safe_load(manifest_path("deployment-slow-to-stop.yaml").read_text()), "derived"
    )
    template = deployment["spec"]["template"]
    rv = 700

    def pod_obj(name: str, created: float) -> JsonDict:
        return {
            "metadata": {
                "name": name,
                "namespace": NAMESPACE,
                "uid": f"uid-{name}",
                "creationTimestamp": ts(created),
                "labels": template["metadata"]["labels"],
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f7c9b6", "controller": True}
                ],
            },
            "spec": {**copy.deepcopy(template["spec"]), "nodeName": "kind-control-plane"},
            "status": {"phase": "Pending"},
        }

    def event(t: float, type_: str, obj: JsonDict) -> JsonDict:
        nonlocal rv
        rv += 1
        snapshot = copy.deepcopy(obj)
        snapshot["metadata"]["resourceVersion"] = str(rv)
        return {"t": round(t, 3), "type": type_, "object": snapshot}

    def running(obj: JsonDict, started: float, cid: str) -> JsonDict:
        obj["status"] = {
            "phase": "Running",
            "startTime": ts(started),
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {
                    "name": "main",
                    "ready": True,
                    "restartCount": 0,
                    "containerID": cid,
                    "state": {"running": {"startedAt": ts(started)}},
                }
            ],
        }
        return obj

    old, new = pod_obj("web-5d8f7c9b6-q2x7k", 0.3), pod_obj("web-5d8f7c9b6-m4r8t", 3.4)
    old_cid, new_cid = (f"containerd://{hashlib.sha256(n.encode()).hexdigest()}" for n in ("old", "new"))
    deleted, grace = 3.31, 10
    events = [event(0.35, "ADDED", old), event(2.3, "MODIFIED", running(old, 2.0, old_cid))]
    old["metadata"].update(deletionTimestamp=ts(deleted + grace), deletionGracePeriodSeconds=grace)
    deleting = copy.deepcopy(old)
    events += [
        event(deleted + 0.03, "MODIFIED", old),
        event(3.45, "ADDED", new),
        event(5.1, "MODIFIED", running(new, 4.8, new_cid)),
    ]
    old["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    old["status"]["containerStatuses"][0].update(
        ready=False,
        state={
            "terminated": {
                "exitCode": 137,
                "reason": "Error",
                "startedAt": ts(2.0),
                "finishedAt": ts(deleted + grace),
                "containerID": old_cid,
            }
        },
    )
    events += [event(deleted + grace + 0.4, "MODIFIED", old), event(deleted + grace + 0.7, "DELETED", old)]
    steps: list[JsonDict] = [
        {
            "call": "server_version",
            "request": {},
            "t_start": 0.0,
            "t_end": 0.02,
            "response": {"major": "1", "minor": git_version.split(".")[1], "gitVersion": git_version},
        },
        {
            "call": "list_objects",
            "request": {"kind": "Pod", "namespace": NAMESPACE},
            "t_start": 0.03,
            "t_end": 0.05,
            "response": {"metadata": {"resourceVersion": "700"}, "items": []},
        },
        {
            "call": "watch",
            "request": {"kind": "Pod", "namespace": NAMESPACE, "name": None, "resource_version": "700"},
            "t_start": 0.06,
            "events": events,
            "closed_at": round(deleted + grace + 1.0, 3),
        },
        {
            "call": "create",
            "request": {"namespace": NAMESPACE, "manifest": deployment},
            "t_start": 0.1,
            "t_end": 0.14,
            "response": {
                **deployment,
                "metadata": {**deployment["metadata"], "namespace": NAMESPACE, "resourceVersion": "701"},
            },
        },
        {
            "call": "delete",
            "request": {
                "kind": "Pod",
                "namespace": NAMESPACE,
                "name": old["metadata"]["name"],
                "grace_period_seconds": None,
            },
            "t_start": deleted,
            "t_end": deleted + 0.02,
            "response": deleting,
        },
    ]
    return {
        "format": RECORDING_FORMAT,
        "probe": "test_termination_order.py::test_replicaset_replaces_a_pod_while_it_terminates",
        "origin": {
            "kind": "derived",
            "note": "Derived, not recorded: no cluster ran. Instants follow the basis; object fields it does not show "
            "are filled with plausible values.",
            "basis": f"{DOC_002} §2-c; kubernetes/kubernetes pkg/controller/controller_utils.go FilterActivePods",
            "document": DOC_002,
            "namespace": NAMESPACE,
            "run_id": "derived",
            "node_access": True,
        },
        "interactions": steps,
    }


def derive_endpoints(git_version: str) -> JsonDict:
    """The replacement scenario plus a Service: the old pod leaves v1 Endpoints at t=3.4 and its EndpointSlice
    entry changes at t=3.38 (removed before 1.22, terminating from 1.22), while its container runs to t=13.3."""
    base = derive_replacement(git_version)
    steps = base["interactions"]
    pod_watch = steps[2]
    old = pod_watch["events"][0]["object"]["metadata"]["name"]
    new = next(e["object"]["metadata"]["name"] for e in pod_watch["events"] if e["object"]["metadata"]["name"] != old)
    service: JsonDict = labelled(yaml.safe_load(manifest_path("service-web.yaml").read_text()), "derived")
    terminating_kept = git_version >= "v1.22"

    def legacy(t: float, ready: list[str], rv: int) -> JsonDict:
        obj = {
            "metadata": {"name": "web", "namespace": NAMESPACE, "resourceVersion": str(rv)},
            "subsets": [
                {
                    "addresses": [{"ip": "10.244.0.9", "targetRef": {"kind": "Pod", "name": p}} for p in ready],
                    "ports": [{"port": 8080}],
                }
            ]
            if ready
            else [],
        }
        return {"t": t, "type": "MODIFIED" if rv > 801 else "ADDED", "object": obj}

    def endpoint_slice(t: float, entries: dict[str, JsonDict], rv: int) -> JsonDict:
        obj = {
            "metadata": {
                "name": "web-abcde",
                "namespace": NAMESPACE,
                "resourceVersion": str(rv),
                "labels": {"kubernetes.io/service-name": "web"},
            },
            "addressType": "IPv4",
            "endpoints": [
                {"addresses": ["10.244.0.9"], "targetRef": {"kind": "Pod", "name": p}, "conditions": c}
                for p, c in entries.items()
            ],
        }
        return {"t": t, "type": "MODIFIED" if rv > 901 else "ADDED", "object": obj}

    ready = {"ready": True, "serving": True, "terminating": False}
    after_delete = {old: {"ready": False, "serving": True, "terminating": True}} if terminating_kept else {}
    legacy_events = [legacy(2.5, [old], 801), legacy(3.4, [], 802), legacy(5.3, [new], 803)]
    slice_events = [
        endpoint_slice(2.45, {old: ready}, 901),
        endpoint_slice(3.38, after_delete, 902),
        endpoint_slice(5.25, {**after_delete, new: ready}, 903),
    ]
    watches = [
        {
            "call": "list_objects",
            "request": {"kind": "Endpoints", "namespace": NAMESPACE},
            "t_start": 0.055,
            "t_end": 0.056,
            "response": {"metadata": {"resourceVersion": "800"}, "items": []},
        },
        {
            "call": "watch",
            "request": {"kind": "Endpoints", "namespace": NAMESPACE, "name": None, "resource_version": "800"},
            "t_start": 0.057,
            "events": legacy_events,
            "closed_at": pod_watch["closed_at"],
        },
        {
            "call": "list_objects",
            "request": {"kind": "EndpointSlice", "namespace": NAMESPACE},
            "t_start": 0.058,
            "t_end": 0.059,
            "response": {"metadata": {"resourceVersion": "900"}, "items": []},
        },
        {
            "call": "watch",
            "request": {"kind": "EndpointSlice", "namespace": NAMESPACE, "name": None, "resource_version": "900"},
            "t_start": 0.06,
            "events": slice_events,
            "closed_at": pod_watch["closed_at"],
        },
        {
            "call": "create",
            "request": {"namespace": NAMESPACE, "manifest": service},
            "t_start": 0.07,
            "t_end": 0.09,
            "response": {
                **service,
                "metadata": {**service["metadata"], "namespace": NAMESPACE, "resourceVersion": "799"},
            },
        },
    ]
    base["interactions"] = steps[:3] + watches + steps[3:]
    base["probe"] = "test_termination_order.py::test_endpoint_removal_while_the_container_still_runs"
    base["origin"]["basis"] = (
        f"{DOC_002} §2-b; EndpointSlice conditions per KEP-1672 (terminating endpoints kept from 1.22); "
        "pkg/api/v1/endpoints ShouldPodBeInEndpoints"
    )
    return base


def recordings() -> dict[str, JsonDict]:
    version = "v1.33.12"
    out = {f"{s.probe.removeprefix('test_')}--{version}-derived.json": derive(s, version) for s in SCENARIOS}
    out[f"replicaset_replaces_a_pod_while_it_terminates--{version}-derived.json"] = derive_replacement(version)
    for endpoints_version in ("v1.21.14", version):
        name = f"endpoint_removal_while_the_container_still_runs--{endpoints_version}-derived.json"
        out[name] = derive_endpoints(endpoints_version)
    return out
