"""The controller probes (Job, StatefulSet, DaemonSet) on altered copies of their live recordings: a
contradiction fails them clearly.

Stood in: the cluster (a live recording, altered in memory). Real: the probe functions, Probe, the replayed
transport and the evaluator, as in `make test`'s --replay run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.base.run import Run
from harness.core.probe import ClaimsFailed, Probe
from harness.core.transport_recording import Recording
from probes.job_replacement import test_job_replacement as replacement_probes
from probes.node_shutdown import test_node_shutdown as shutdown_probes
from probes.statefulset_status import test_statefulset_status as statefulset_probes
from tests.live import as_version, live


def replay(family: str, module: object, recording: Recording, tmp_path: Path) -> Probe:
    probe = Probe.replaying(recording, family, Run.start(tmp_path))
    getattr(module, recording.probe.split("::")[1])(probe)
    return probe


STS = "statefulset_status/statefulset_status_through_parallel_scale_up_and_partitioned_update--v1.{}-live-local.json"
STS_FIXED = STS.format("37.2")  # the partition holds: currentRevision stays, parallel-web-0 comes back at it
WEB_0_BACK = 170.83  # when parallel-web-0, below the partition, came back there (after the probe deleted it)
UPDATE_REVISION = "parallel-web-74cdcc9564"


def test_a_fixed_statefulset_controller_that_moves_current_revision_early_fails_with_the_offending_update(
    tmp_path: Path,
) -> None:
    """The live local v1.37.2 run, its status updates from parallel-web-0's return on at the update revision."""
    recording = live(STS_FIXED)
    for step in recording.interactions:
        if step["call"] == "watch" and step["request"]["kind"] == "StatefulSet":
            for event in step["events"]:
                status = event["object"]["status"]
                if event["t"] >= WEB_0_BACK:  # the update judged complete
                    assert status["updateRevision"] == UPDATE_REVISION
                    status["currentRevision"] = status["updateRevision"]
    with pytest.raises(ClaimsFailed) as failed:
        replay("statefulset_status", statefulset_probes, recording, tmp_path)
    message = str(failed.value)
    assert "1 of 3 claims failed on Kubernetes v1.37.2" in message
    assert "statefulset.partition.current-revision-holds" in message
    assert "the v1.37.2 cluster behaved like >=1.25.12,<1.26.0-alpha.0 / >=1.26.7,<1.27.0-alpha.0" in message
    assert f"evidence: currentRevision moved to {UPDATE_REVISION} with updatedReplicas 2 of 3" in message
    assert "rv=" in message and "partition=1" in message  # the offending status update itself


def test_a_statefulset_that_recreates_the_pod_below_the_partition_at_the_new_revision_fails(tmp_path: Path) -> None:
    """The live local v1.37.2 run, parallel-web-0 labelled with the update revision once it came back."""
    recording = live(STS_FIXED)
    relabelled = 0
    for step in recording.interactions:
        if step["call"] == "watch" and step["request"]["kind"] == "Pod":
            for event in step["events"]:
                labels = event["object"]["metadata"]["labels"]
                if event["object"]["metadata"]["name"] == "parallel-web-0" and event["t"] >= WEB_0_BACK:
                    labels["controller-revision-hash"] = UPDATE_REVISION
                    relabelled += 1
    assert relabelled
    with pytest.raises(ClaimsFailed, match=r"recreated-pod-revision: .* was 'update', expected 'current'"):
        replay("statefulset_status", statefulset_probes, recording, tmp_path)


def test_the_regression_recording_passes_on_its_own_version_with_all_three_violations_seen(tmp_path: Path) -> None:
    """The live local v1.28.0 run, as recorded: k/k#117865 and the partition bug, both seen."""
    probe = replay("statefulset_status", statefulset_probes, live(STS.format("28.0")), tmp_path)
    observed = {v.claim.id: v.observed for v in probe.verdicts}
    assert observed == {
        "statefulset.scale-up.replicas-cover-pods": False,
        "statefulset.partition.recreated-pod-revision": "update",
        "statefulset.partition.current-revision-holds": False,
    }
    assert all(v.status == "pass" for v in probe.verdicts)


VARIANT = "test_statefulset_status.py::test_statefulset_partition_with_pods_failing_on_sigterm"


def as_failing_on_sigterm(recording: Recording) -> Recording:
    """The base probe's recording as its variant would make it: the manifest's trap exits 1, and every terminal
    state of the deleted pods says Failed (exit 1, Error) where the base's said Succeeded (exit 0, Completed)."""
    recording.probe = VARIANT
    failed = 0
    for step in recording.interactions:
        if step["call"] == "create":
            container = step["request"]["manifest"]["spec"]["template"]["spec"]["containers"][0]
            container["command"] = [c.replace("exit 0", "exit 1") for c in container["command"]]
        for event in step.get("events", []):
            status = (event.get("object") or {}).get("status") or {}
            if status.get("phase") == "Succeeded":
                status["phase"] = "Failed"
                for container in status.get("containerStatuses", []):
                    container["state"]["terminated"].update(exitCode=1, reason="Error")
                failed += 1
    assert failed
    return recording


def test_the_variant_on_its_base_run_made_to_fail_holds_where_k_k_120731_is_and_not_on_1_27_3(tmp_path: Path) -> None:
    """No live run of the variant yet: the live local v1.27.8 run of the base, its pods made to end Failed, replayed
    through the variant's probe. It makes the base's calls; on v1.27.8 every claim passes (currentRevision held,
    k/k#120731); the same copy as if from v1.27.3 fails current-revision-holds and recreated-pod-revision, which a
    Failed pod's recreation must break there, and shows the pod ending Failed as 1.27 does."""
    probe = replay("statefulset_status", statefulset_probes, as_failing_on_sigterm(live(STS.format("27.8"))), tmp_path)
    assert {v.claim.id: (v.observed, v.status) for v in probe.verdicts} == {
        "statefulset.failing-pod.deleted-pod-phases": (["Running", "Failed"], "pass"),
        "statefulset.failing-pod.current-revision-holds": (True, "pass"),
        "statefulset.failing-pod.recreated-pod-revision": ("current", "pass"),
    }
    as_1_27_3 = as_version(as_failing_on_sigterm(live(STS.format("27.8"))), "v1.27.3")
    with pytest.raises(ClaimsFailed) as failed:
        replay("statefulset_status", statefulset_probes, as_1_27_3, tmp_path / "as-1.27.3")
    message = str(failed.value)
    assert "2 of 3 claims failed on Kubernetes v1.27.3" in message
    assert "statefulset.failing-pod.current-revision-holds" in message
    assert "statefulset.failing-pod.recreated-pod-revision" in message


def test_a_1_28_5_statefulset_that_leaves_its_succeeded_pod_behaves_like_the_regression(tmp_path: Path) -> None:
    """A synthetic alteration of the live kind v1.27.3 run (k/k#118310: its Succeeded pod is left, not replaced),
    reported as v1.28.5, the first 1.28 patch with the fix (k/k#121389)."""
    name = "node_shutdown/statefulset_pod_after_graceful_node_shutdown--v1.27.3-live-kind.json"
    stuck = as_version(live(name), "v1.28.5")
    with pytest.raises(ClaimsFailed) as failed:
        replay("node_shutdown", shutdown_probes, stuck, tmp_path)
    message = str(failed.value)
    assert "2 of 7 claims failed on Kubernetes v1.28.5" in message
    assert "statefulset.pod-recreated" in message and "statefulset.stopped-pod" in message
    assert "the v1.28.5 cluster behaved like >=1.27.0-rc.0,<1.27.9 / >=1.28.0-alpha.0,<1.28.5" in message
    assert "node shutdown cancelled" in message  # the timeline shows the actions


def test_a_job_that_replaces_a_terminating_pod_despite_podreplacementpolicy_failed_fails(tmp_path: Path) -> None:
    """The live local v1.37.2 run, its replacement pod created right after the delete, while the old pod still
    terminates (it came 30 s later, once the old pod was Failed and the Job's back-off had passed)."""
    recording = live("job_replacement/job_replacing_failed_pods_only--v1.37.2-live-local.json")
    delete = next(s for s in recording.interactions if s["call"] == "delete")
    moved = 0
    for step in recording.interactions:
        if step["call"] == "watch" and step["request"]["kind"] == "Pod":
            for event in step["events"]:
                if event["type"] == "ADDED" and event["object"]["metadata"]["name"].endswith("bzt6w"):
                    event["t"] = round(delete["t_end"] + 0.05, 3)
                    moved += 1
            step["events"].sort(key=lambda e: e["t"])
    assert moved == 1
    with pytest.raises(ClaimsFailed, match=r"failed\.before-old-pod-terminal: .* was True, expected False"):
        replay("job_replacement", replacement_probes, recording, tmp_path)


def test_a_1_27_job_that_replaces_a_deleted_pod_at_once_fails_the_back_off_claim(tmp_path: Path) -> None:
    """A synthetic alteration of the live local v1.26.6 run (its replacement came 0.24 s after the delete, before
    k/k#114768), reported as v1.27.3, where the Job waits its 10 s pod-failure back-off first."""
    name = "job_replacement/job_without_policies_replaces_a_deleted_pod--v1.26.6-live-local.json"
    at_once = as_version(live(name), "v1.27.3")
    with pytest.raises(ClaimsFailed) as failed:
        replay("job_replacement", replacement_probes, at_once, tmp_path)
    message = str(failed.value)
    assert "1 of 3 claims failed on Kubernetes v1.27.3" in message
    assert "default.replacement-after-delete" in message
    assert "the v1.27.3 cluster behaved like <1.27.0-beta.0" in message
