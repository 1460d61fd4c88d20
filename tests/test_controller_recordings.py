"""Issue 8's controller probes on edited copies of their derived recordings: a contradiction fails them clearly.

Stood in: the cluster (a derived recording, edited). Real: the probe functions, Probe, the replayed
transport and the evaluator, as in `make test`'s --replay run.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from harness import families
from harness.probe import ClaimsFailed, Probe
from harness.run import Run
from harness.transport import Recording
from probes.job_replacement import test_job_replacement as replacement_probes
from probes.node_shutdown import test_node_shutdown as shutdown_probes
from probes.statefulset_status import test_statefulset_status as statefulset_probes
from tests.derived import derived


def replay(family: str, module: object, name: str, tmp_path: Path, recording: Recording | None = None) -> Probe:
    recording = recording or derived(f"{family}/{name}")
    probe = Probe.replaying(recording, family, Run.start(tmp_path))
    getattr(module, recording.probe.split("::")[1])(probe)
    return probe


STS_129 = "statefulset_status_through_parallel_scale_up_and_partitioned_update--v1.29.14-derived.json"


def test_a_fixed_statefulset_controller_that_moves_current_revision_early_fails_with_the_offending_update(
    tmp_path: Path,
) -> None:
    recording = derived(f"statefulset_status/{STS_129}")
    for step in recording.interactions:
        if step["call"] == "watch" and step["request"]["kind"] == "StatefulSet":
            for event in step["events"]:
                status = event["object"]["status"]
                if event["t"] >= 11.3:  # after parallel-web-0 came back: the update judged complete
                    status["currentRevision"] = status["updateRevision"]
    with pytest.raises(ClaimsFailed) as failed:
        replay("statefulset_status", statefulset_probes, STS_129, tmp_path, recording)
    message = str(failed.value)
    assert "1 of 3 claims failed on Kubernetes v1.29.14" in message
    assert "statefulset.partition.current-revision-holds" in message
    assert "the v1.29.14 cluster behaved like >=1.25.12,<1.26.0-alpha.0 / >=1.26.7,<1.27.0-alpha.0" in message
    assert "evidence: currentRevision moved to parallel-web-7b4f9d6c58 with updatedReplicas 2 of 3" in message
    assert "rv=" in message and "partition=1" in message  # the offending status update itself


def test_a_statefulset_that_recreates_the_pod_below_the_partition_at_the_new_revision_fails(tmp_path: Path) -> None:
    recording = derived(f"statefulset_status/{STS_129}")
    for step in recording.interactions:
        if step["call"] == "watch" and step["request"]["kind"] == "Pod":
            for event in step["events"]:
                labels = event["object"]["metadata"]["labels"]
                if event["object"]["metadata"]["name"] == "parallel-web-0" and event["t"] >= 15.2:
                    labels["controller-revision-hash"] = "parallel-web-7b4f9d6c58"
    with pytest.raises(ClaimsFailed, match=r"recreated-pod-revision: .* was 'update', expected 'current'"):
        replay("statefulset_status", statefulset_probes, STS_129, tmp_path, recording)


def test_the_regression_recording_passes_on_its_own_version_with_all_three_violations_seen(tmp_path: Path) -> None:
    name = "statefulset_status_through_parallel_scale_up_and_partitioned_update--v1.28.0-derived.json"
    probe = replay("statefulset_status", statefulset_probes, name, tmp_path)
    observed = {v.claim.id: v.observed for v in probe.verdicts}
    assert observed == {
        "statefulset.scale-up.replicas-cover-pods": False,
        "statefulset.partition.recreated-pod-revision": "update",
        "statefulset.partition.current-revision-holds": False,
    }
    assert all(v.status == "pass" for v in probe.verdicts)


def drop_events_after(recording: Recording, kind: str, t: float) -> Recording:
    """A copy in which the watch of `kind` saw nothing after time t (the controller did nothing more)."""
    edited = copy.deepcopy(recording)
    for step in edited.interactions:
        if step["call"] == "watch" and step["request"]["kind"] == kind:
            step["events"] = [e for e in step["events"] if e["t"] <= t]
            step["closed_at"] = max(step["closed_at"], 6.4 + 150.0 + 1.0)  # the probe waits its recovery budget
    return edited


def test_a_1_28_5_statefulset_that_leaves_its_succeeded_pod_behaves_like_the_regression(tmp_path: Path) -> None:
    name = "statefulset_pod_after_graceful_node_shutdown--v1.28.15-derived.json"
    stuck = drop_events_after(Recording.load(families.family("node_shutdown").recordings / name), "Pod", 6.3)
    with pytest.raises(ClaimsFailed) as failed:
        replay("node_shutdown", shutdown_probes, name, tmp_path, stuck)
    message = str(failed.value)
    assert "2 of 7 claims failed on Kubernetes v1.28.15" in message
    assert "statefulset.pod-recreated" in message and "statefulset.stopped-pod" in message
    assert "the v1.28.15 cluster behaved like >=1.27.0-rc.0,<1.27.9 / >=1.28.0-alpha.0,<1.28.5" in message
    assert "node shutdown cancelled" in message  # the timeline shows the actions


def test_a_1_29_job_that_replaces_a_terminating_pod_despite_podreplacementpolicy_failed_fails(tmp_path: Path) -> None:
    name = "job_replacing_failed_pods_only--v1.29.14-derived.json"
    recording = copy.deepcopy(Recording.load(families.family("job_replacement").recordings / name))
    for step in recording.interactions:
        if step["call"] == "watch" and step["request"]["kind"] == "Pod":
            for event in step["events"]:
                if event["type"] == "ADDED" and event["object"]["metadata"]["name"].endswith("m2d9q"):
                    event["t"] = 5.1  # created right after the delete, while the old pod still terminates
            step["events"].sort(key=lambda e: e["t"])
    with pytest.raises(ClaimsFailed, match=r"failed\.before-old-pod-terminal: .* was True, expected False"):
        replay("job_replacement", replacement_probes, name, tmp_path, recording)
