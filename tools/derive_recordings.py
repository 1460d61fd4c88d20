"""Write the recordings under probes/<family>/recordings/ that are derived from the documents, not from a live cluster.

No cluster could be run where this suite was written, so its offline tests replay recordings built
here from what the documents report (phases, exit codes, reasons, timings of their kubectl output) and,
where a document is silent, from the Kubernetes source named in each scenario's `basis`. Every file
says so in its `origin`. A live run writes recordings in the same format (runs/<id>/recordings/); drop
one into probes/<family>/recordings/ (tools/adopt_recordings.py) and it becomes an offline test of its own.

    python tools/derive_recordings.py            # rewrite the derived recordings (tests check they are current)
"""

from __future__ import annotations

import copy
import hashlib
import json
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.families import recording_path  # noqa: E402
from harness.manifests import load_manifest  # noqa: E402
from harness.probe import labelled  # noqa: E402
from harness.transport import RECORDING_FORMAT  # noqa: E402
from harness.versions import resolve_image  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import derive_controller_recordings  # noqa: E402
import derive_deadline_recordings  # noqa: E402
import derive_termination_recordings  # noqa: E402

JsonDict = dict[str, Any]
DOC_000 = "shared/seeds/000_c1d4d88888778485.txt"
NAMESPACE = "plp-derived"
RUN_ID = "derived"
NODE = "kind-control-plane"
EPOCH = datetime(2023, 12, 11, 0, 0, 0, tzinfo=UTC)  # the document's experiments ran on 2023-12-11


@dataclass(frozen=True)
class Scenario:
    probe: str  # test function in probes/phase_after_deletion/test_phase_after_deletion.py
    manifest: str  # the manifest it applies (probes/<family>/manifests/)
    git_version: str
    handles_sigterm: bool
    phase_after_stop: str  # what the document (or basis) says the phase is once the container stopped
    basis: str
    node_check: bool = True
    label: str = ""


def _ts(seconds: float) -> str:
    return (EPOCH + timedelta(seconds=int(seconds))).strftime("%Y-%m-%dT%H:%M:%SZ")


class PodHistory:
    """Successive states of one pod as the API server would serialise them."""

    def __init__(self, scenario: Scenario, manifest: JsonDict, created_at: float) -> None:
        self.scenario = scenario
        self.rv = 1000
        self.pod = copy.deepcopy(manifest)
        meta = self.pod["metadata"]
        meta.update(
            namespace=NAMESPACE,
            uid="0d3c5e7a-derived-0000-0000-" + scenario.probe[-12:].replace("_", "0").ljust(12, "0"),
            creationTimestamp=_ts(created_at),
            resourceVersion=str(self.rv),
        )
        spec = self.pod["spec"]
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.update(dnsPolicy="ClusterFirst", schedulerName="default-scheduler", serviceAccountName="default")
        self.pod["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
        self.container_id = (
            "containerd://" + hashlib.sha256(f"{scenario.probe}/{scenario.git_version}".encode()).hexdigest()
        )

    def snapshot(self) -> JsonDict:
        self.rv += 1
        self.pod["metadata"]["resourceVersion"] = str(self.rv)
        return copy.deepcopy(self.pod)

    def conditions(self, t: float, ready: bool) -> list[JsonDict]:
        status = "True" if ready else "False"
        return [
            {"type": "Initialized", "status": "True", "lastTransitionTime": _ts(1.0)},
            {"type": "Ready", "status": status, "lastTransitionTime": _ts(t)},
            {"type": "ContainersReady", "status": status, "lastTransitionTime": _ts(t)},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": _ts(0.2)},
        ]

    def container(self, state: JsonDict, ready: bool) -> JsonDict:
        image = self.pod["spec"]["containers"][0]["image"]
        return {
            "name": "main",
            "image": image,
            "imageID": image,
            "containerID": self.container_id,
            "ready": ready,
            "restartCount": 0,
            "started": "running" in state,
            "state": state,
            "lastState": {},
        }


def derive(scenario: Scenario) -> JsonDict:
    manifest = labelled(load_manifest(scenario.manifest), RUN_ID)  # as the probe applies it
    held_by_finalizer = "finalizers" in manifest["metadata"]
    request_manifest = copy.deepcopy(manifest)

    pod = PodHistory(scenario, manifest, created_at=0.0)
    grace = pod.pod["spec"]["terminationGracePeriodSeconds"]
    steps: list[JsonDict] = [
        {
            "call": "server_version",
            "request": {},
            "t_start": 0.0,
            "t_end": 0.02,
            "response": {
                "major": "1",
                "minor": scenario.git_version.split(".")[1],
                "gitVersion": scenario.git_version,
                "platform": "linux/amd64",
            },
        },
    ]
    created = pod.snapshot()
    steps.append(
        {
            "call": "create",
            "request": {"namespace": NAMESPACE, "manifest": request_manifest},
            "t_start": 0.05,
            "t_end": 0.09,
            "response": created,
        }
    )
    events: list[JsonDict] = []

    def event(t: float, kind: str = "MODIFIED") -> None:
        events.append({"t": round(t, 3), "type": kind, "object": pod.snapshot()})

    # Scheduled, then the container starts (image already on the node: the document's run, second pod).
    pod.pod["spec"]["nodeName"] = NODE
    pod.pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": _ts(0.2)}]
    event(0.2)
    started = 2.0
    pod.pod["status"].update(
        phase="Running",
        hostIP="172.18.0.2",
        podIP="10.244.0.5",
        startTime=_ts(0.2),
        conditions=pod.conditions(started, ready=True),
        containerStatuses=[pod.container({"running": {"startedAt": _ts(started)}}, ready=True)],
    )
    event(started + 0.3)

    # The delete, right after the probe saw the pod Ready: the API server sets deletionTimestamp =
    # now + grace and deletionGracePeriodSeconds = grace.
    deleted = started + 0.31
    steps.append(
        {
            "call": "watch",
            "request": {
                "kind": "Pod",
                "namespace": NAMESPACE,
                "name": created["metadata"]["name"],
                "resource_version": created["metadata"]["resourceVersion"],
            },
            "t_start": 0.1,
            "events": events,
        }
    )
    pod.pod["metadata"]["deletionTimestamp"] = _ts(deleted + grace)
    pod.pod["metadata"]["deletionGracePeriodSeconds"] = grace
    deleting = pod.snapshot()
    events.append({"t": deleted + 0.03, "type": "MODIFIED", "object": copy.deepcopy(deleting)})
    steps.append(
        {
            "call": "delete",
            "request": {
                "kind": "Pod",
                "namespace": NAMESPACE,
                "name": created["metadata"]["name"],
                "grace_period_seconds": None,
            },
            "t_start": deleted,
            "t_end": deleted + 0.02,
            "response": deleting,
        }
    )

    # The container stops: on SIGTERM (trap, within ~1 s) or on SIGKILL when the grace runs out.
    stopped = deleted + (1.0 if scenario.handles_sigterm else grace + 0.2)
    exit_code, reason = (0, "Completed") if scenario.handles_sigterm else (137, "Error")
    terminated = {
        "exitCode": exit_code,
        "reason": reason,
        "startedAt": _ts(started),
        "finishedAt": _ts(stopped),
        "containerID": pod.container_id,
    }
    pod.pod["status"].update(
        phase=scenario.phase_after_stop,
        conditions=pod.conditions(stopped, ready=False),
        containerStatuses=[pod.container({"terminated": terminated}, ready=False)],
    )
    event(stopped + 0.4)
    if held_by_finalizer:
        closed_at = stopped + 0.4 + 5.0  # the probe's settle window: nothing more happens
    else:
        event(stopped + 0.6, "DELETED")  # the kubelet's final delete once the status is written
        closed_at = stopped + 0.6
    steps[-2]["closed_at"] = round(closed_at, 3)
    if scenario.node_check:
        steps.append(
            {
                "call": "node_containers",
                "request": {"node": NODE},
                "t_start": closed_at + 0.01,
                "t_end": closed_at + 0.3,
                "response": [
                    {
                        "id": pod.container_id.split("://")[1],
                        "podSandboxId": "5" * 64,
                        "metadata": {"name": "main", "attempt": 0},
                        "state": "CONTAINER_EXITED",
                        "labels": {
                            "io.kubernetes.container.name": "main",
                            "io.kubernetes.pod.name": created["metadata"]["name"],
                            "io.kubernetes.pod.namespace": NAMESPACE,
                        },
                    }
                ],
            }
        )
    return {
        "format": RECORDING_FORMAT,
        "probe": f"test_phase_after_deletion.py::{scenario.probe}",
        "origin": {
            "kind": "derived",
            "note": "Derived, not recorded: no cluster ran. States and timings are what the basis reports; "
            "object fields not shown by the basis are filled with plausible values.",
            "basis": scenario.basis,
            "document": DOC_000,
            "namespace": NAMESPACE,
            "run_id": RUN_ID,
            "node_access": True,
            "node_image": resolve_image(scenario.git_version).reference,
            "kind_version": "v0.20.0",
        },
        "interactions": steps,
    }


DOC_126 = f"{DOC_000}, section 'Kubernetes <= 1.26' (kind v0.20.0, kindest/node v1.26.6)"
DOC_127 = f"{DOC_000}, section 'Kubernetes >= 1.27' (kind v0.20.0, kindest/node v1.27.3)"

SOURCE_126 = (
    "document 000 says only that Always and OnFailure pods never reached Failed/Succeeded before 1.27; "
    "the phases here follow kubernetes/kubernetes v1.26.6 pkg/kubelet/kubelet_pods.go getPhase"
)
SOURCE_127 = f"{DOC_127}; OnFailure and no-finalizer variants follow k/k#115331 (kubelet_pods.go getPhase, v1.27.3)"
IGNORES, TRAPS = "pod-finalizer-ignores-sigterm", "pod-finalizer-traps-sigterm"

SCENARIOS = [
    Scenario("test_always_pod_ignoring_sigterm", f"{IGNORES}.yaml", "v1.26.6", False, "Running", DOC_126),
    Scenario("test_always_pod_ignoring_sigterm", f"{IGNORES}.yaml", "v1.27.3", False, "Failed", DOC_127),
    Scenario("test_always_pod_ignoring_sigterm_default_grace", f"{IGNORES}.default-grace.yaml", "v1.26.6", False,
             "Running", DOC_126, node_check=False),
    Scenario("test_always_pod_ignoring_sigterm_default_grace", f"{IGNORES}.default-grace.yaml", "v1.27.3", False,
             "Failed", DOC_127, node_check=False),
    Scenario("test_always_pod_trapping_sigterm", f"{TRAPS}.yaml", "v1.26.6", True, "Running", DOC_126),
    Scenario("test_always_pod_trapping_sigterm", f"{TRAPS}.yaml", "v1.27.3", True, "Succeeded", DOC_127),
    Scenario("test_onfailure_pod_ignoring_sigterm", f"{IGNORES}.onfailure.yaml", "v1.26.6", False, "Running",
             SOURCE_126),
    Scenario("test_onfailure_pod_ignoring_sigterm", f"{IGNORES}.onfailure.yaml", "v1.27.3", False, "Failed",
             SOURCE_127),
    Scenario("test_onfailure_pod_trapping_sigterm", f"{TRAPS}.onfailure.yaml", "v1.26.6", True, "Succeeded",
             SOURCE_126),
    Scenario("test_onfailure_pod_trapping_sigterm", f"{TRAPS}.onfailure.yaml", "v1.27.3", True, "Succeeded",
             SOURCE_127),
    Scenario("test_pod_without_finalizer_ignoring_sigterm", f"{IGNORES}.no-finalizer.yaml", "v1.26.6", False,
             "Running", SOURCE_126, node_check=False),
    Scenario("test_pod_without_finalizer_ignoring_sigterm", f"{IGNORES}.no-finalizer.yaml", "v1.27.3", False,
             "Failed", SOURCE_127, node_check=False),
    Scenario("test_pod_without_finalizer_trapping_sigterm", f"{TRAPS}.no-finalizer.yaml", "v1.26.6", True,
             "Running", SOURCE_126, node_check=False),
    Scenario("test_pod_without_finalizer_trapping_sigterm", f"{TRAPS}.no-finalizer.yaml", "v1.27.3", True,
             "Succeeded", SOURCE_127, node_check=False),
]  # fmt: skip


def all_recordings() -> dict[str, JsonDict]:
    """'<family>/<file>' (probes/<family>/recordings/<file>) -> derived recording, for every probe family."""
    out = {
        f"phase_after_deletion/{s.probe.removeprefix('test_')}--{s.git_version}-derived.json": derive(s)
        for s in SCENARIOS
    }
    out.update({f"active_deadline/{name}": rec for name, rec in derive_deadline_recordings.recordings().items()})
    out.update({f"termination_order/{name}": rec for name, rec in derive_termination_recordings.recordings().items()})
    out.update(
        {f"job_failure_policy/{n}": rec for n, rec in derive_deadline_recordings.failure_policy_recordings().items()}
    )
    out.update(
        {f"statefulset_status/{n}": r for n, r in derive_controller_recordings.statefulset_status_recordings().items()}
    )
    out.update(
        {f"job_replacement/{n}": r for n, r in derive_controller_recordings.job_replacement_recordings().items()}
    )
    out.update({f"job_failure_policy/{n}": r for n, r in derive_controller_recordings.eviction_recordings().items()})
    out.update({f"node_shutdown/{n}": r for n, r in derive_controller_recordings.node_shutdown_recordings().items()})
    return out


def main() -> None:
    for relative, recording in all_recordings().items():
        path = recording_path(relative)
        live = sorted(path.parent.glob(path.name.replace("-derived.json", "-live-*.json")))
        if live:  # a live recording of this probe and version replaces the derived one
            print(f"{path.relative_to(REPO)}: not written, {live[0].name} is live")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(recording, indent=1) + "\n")
        print(path.relative_to(REPO))


if __name__ == "__main__":
    main()
