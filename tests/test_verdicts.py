"""Verdicts that cannot be fooled: live recordings, altered in memory, replayed through the probes.

Each test takes a live recording (never edited on disk), changes a copy the way a real cluster or a lost
watch could, and replays it through the probe function, Probe, the replay transport and the evaluator.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.base.families import recording_path
from harness.base.run import Run
from harness.core.expectations import FAIL, PASS, UNDECIDED
from harness.core.probe import ClaimsFailed, ClaimsUndecided, Probe
from harness.core.transport import JsonDict
from harness.core.transport_recording import Recording
from probes.job_replacement import test_job_replacement as job_probes
from probes.node_shutdown import test_node_shutdown as shutdown_probes
from probes.phase_after_deletion import test_phase_after_deletion as phase_probes
from probes.statefulset_status import test_statefulset_status as statefulset_probes
from probes.termination_order import test_termination_order as termination_probes
from tests.live import as_version

STS_LIVE = (
    "statefulset_status/statefulset_status_through_parallel_scale_up_and_partitioned_update--v1.27.3-live-kind.json"
)
RS_LIVE = "termination_order/replicaset_replaces_a_pod_while_it_terminates--v1.27.3-live-kind.json"
JOB_LIVE = "job_replacement/job_without_policies_replaces_a_deleted_pod--v1.27.3-live-kind.json"
# Live runs on v1.32.11 with etcd compacted and the API server restarted 12 s into each probe
# (RESTART_APISERVER_AFTER=12, harness/clusters/local/disruption.py): real watch gaps, not altered copies.
REAL_GAPS = {
    "phase_after_deletion/always_pod_ignoring_sigterm_default_grace": "phase_after_deletion",
    "job_replacement/job_replacing_terminating_or_failed_pods": "job_replacement",
    "termination_order/replicaset_replaces_a_pod_while_it_terminates": "termination_order",
}


def live(relative: str) -> Recording:
    """A fresh in-memory copy of a live recording."""
    assert "-live-" in relative
    return copy.deepcopy(Recording.load(recording_path(relative)))


def watch_of(recording: Recording, kind: str) -> JsonDict:
    return next(s for s in recording.interactions if s["call"] == "watch" and s["request"]["kind"] == kind)


def events_of(recording: Recording, kind: str) -> Iterator[JsonDict]:
    yield from watch_of(recording, kind)["events"]


def latest_objects(events: list[JsonDict], before: float) -> list[JsonDict]:
    """What a re-list at time `before` would return: each object's latest state, deleted ones left out."""
    objects: dict[str, JsonDict] = {}
    for event in events:
        if event["t"] < before:
            name = event["object"]["metadata"]["name"]
            if event["type"] == "DELETED":
                objects.pop(name, None)
            else:
                objects[name] = event["object"]
    return [copy.deepcopy(o) for o in objects.values()]


def lose_events(recording: Recording, kind: str, start: float, relist_at: float, why: str) -> None:
    """The watch of `kind` lost every event in [start, relist_at) and re-listed at `relist_at` (what
    ReplayTransport's live counterpart does after a 410 or a dropped connection)."""
    watch = watch_of(recording, kind)
    events: list[JsonDict] = watch["events"]
    relist = {"t": relist_at, "type": "RELISTED", "object": {"items": latest_objects(events, relist_at)}, "gap": why}
    kept = [e for e in events if not start <= e["t"] < relist_at]
    watch["events"] = sorted([*kept, relist], key=lambda e: float(e["t"]))


def replay(recording: Recording, family: str, module: Any, tmp_path: Path) -> tuple[Probe, BaseException | None]:
    """Run the recording's probe; return it and what it raised (None: it passed)."""
    probe = Probe.replaying(recording, family, Run.start(tmp_path))
    try:
        getattr(module, recording.probe.split("::")[1])(probe)
    except ClaimsFailed as err:
        return probe, err
    return probe, None


def verdict(probe: Probe, claim: str) -> Any:
    return next(v for v in probe.verdicts if v.claim.id == claim)


# ------------------------------------------------------------- 1. a gap makes undecided only what it can hide


def statefulset_with_replicas_below_pods(rv: str, replicas: int) -> Recording:
    """The live 1.27.3 StatefulSet recording with the status write at `rv` claiming `replicas`."""
    recording = live(STS_LIVE)
    written = next(e for e in events_of(recording, "StatefulSet") if e["object"]["metadata"]["resourceVersion"] == rv)
    written["object"]["status"]["replicas"] = replicas
    return recording


def test_a_violation_seen_whole_fails_despite_a_later_relist_that_lost_nothing(tmp_path: Path) -> None:
    """status.replicas 2 while web-0..2 existed, seen in full at 168.35 s; the pods' watch re-lists at 173.0 s
    and finds every pod as it was. The old probe passed that gap to the claim and called the violation
    undecided; no hidden state can explain it, so it fails."""
    recording = statefulset_with_replicas_below_pods("1431", replicas=2)
    lose_events(recording, "Pod", 173.0, 173.0, "watch expired (410 Gone)")
    probe, raised = replay(recording, "statefulset_status", statefulset_probes, tmp_path)
    covered = verdict(probe, "statefulset.scale-up.replicas-cover-pods")
    assert covered.status == FAIL, covered.message
    assert type(raised) is ClaimsFailed
    assert "status.replicas 2 while 3 pods existed (parallel-web-0, parallel-web-1, parallel-web-2)" in covered.message
    assert verdict(probe, "statefulset.partition.current-revision-holds").status == PASS
    assert set(probe.timeline.gaps) == {"watch expired (410 Gone)"}  # the gap is on record, only not blamed


def test_a_violation_a_gap_could_explain_stays_undecided(tmp_path: Path) -> None:
    """The other side of the rule: the pods' watch lost 167.33-169.35 s, in which parallel-web-2 was deleted
    and recreated; a write in that stretch counting 2 replicas may have come while web-2 was gone."""
    recording = statefulset_with_replicas_below_pods("1417", replicas=2)
    lose_events(recording, "Pod", 167.3, 169.35, "watch connection lost")
    probe, raised = replay(recording, "statefulset_status", statefulset_probes, tmp_path)
    covered = verdict(probe, "statefulset.scale-up.replicas-cover-pods")
    assert covered.status == UNDECIDED, covered.message
    assert isinstance(raised, ClaimsUndecided)
    assert "watch connection lost" in covered.message


def test_a_moved_current_revision_seen_is_not_excused_by_a_gap_in_the_pods_watch(tmp_path: Path) -> None:
    recording = live(STS_LIVE)
    for event in events_of(recording, "StatefulSet"):
        if event["t"] >= 170.4:  # after the first deletion, seen before the second (so it is deleted twice)
            event["object"]["status"]["currentRevision"] = event["object"]["status"]["updateRevision"]
    lose_events(recording, "Pod", 165.0, 165.3, "watch expired (410 Gone)")
    probe, _ = replay(recording, "statefulset_status", statefulset_probes, tmp_path)
    holds = verdict(probe, "statefulset.partition.current-revision-holds")
    assert holds.status == FAIL, holds.message
    assert "currentRevision moved to" in holds.message


# ------------------------------------------------------------- 2. an instant from the first sight of its event


def test_the_delete_instant_comes_from_the_first_deletion_view_not_a_rewritten_one(tmp_path: Path) -> None:
    """A newer server's final grace-0 delete rewrites deletionTimestamp (to 15:35:17, grace 0). The old pod
    is gone before the replacement (created 15:35:18) appears: 11 s after the delete at 15:35:07, not the
    ~1 s the latest state gives."""
    recording = live(RS_LIVE)
    watch = watch_of(recording, "Pod")
    old, new = "web-c45bdff56-j9h29", "web-c45bdff56-svkd9"
    events = [e for e in watch["events"] if e["object"]["metadata"]["name"] != new]
    final = copy.deepcopy(events[-1])
    final["object"]["metadata"].update(deletionTimestamp="2026-11-23T15:35:17Z", deletionGracePeriodSeconds=0)
    assert final["object"]["metadata"]["name"] == old and final["object"]["status"]["phase"] == "Failed"
    gone = {**copy.deepcopy(final), "t": 211.72, "type": "DELETED"}
    replacement = copy.deepcopy(next(e for e in watch["events"] if e["object"]["metadata"]["name"] == new))
    replacement["t"] = 211.8
    replacement["object"]["metadata"]["creationTimestamp"] = "2026-11-23T15:35:18Z"
    watch["events"] = [*events[:-1], final, gone, replacement]
    watch["closed_at"] = 211.9
    probe, _ = replay(recording, "termination_order", termination_probes, tmp_path)
    after_delete = verdict(probe, "replacement.created-right-after-delete")
    assert after_delete.observed == pytest.approx(11.0)
    assert after_delete.status == FAIL


# ------------------------------------------------------------- 3. objects known only from a re-list are seen


def test_a_replacement_seen_only_in_a_relist_counts(tmp_path: Path) -> None:
    """The Job's replacement (ADDED at 47.84 s) came while the pods' watch was down; the re-list at 49.0 s
    shows it, and the old pod turns Failed at 58.06 s: replaced first, whatever the exact instant in the gap.
    The old probe read only ADDED events and called it never replaced (undecided, for the gap). How long after
    the delete it came is another matter: somewhere in the gap's 2 s, so that measurement alone is undecided."""
    recording = live(JOB_LIVE)
    lose_events(recording, "Pod", 47.0, 49.0, "watch connection lost")
    for kind in ("Pod", "Job"):  # the old probe waited out its whole budget: let the recording cover it
        watch_of(recording, kind)["closed_at"] = 98.0
    probe, raised = replay(recording, "job_replacement", job_probes, tmp_path)
    before = verdict(probe, "default.before-old-pod-terminal")
    assert before.observed is True and before.status == PASS, before.message
    assert isinstance(raised, ClaimsUndecided)
    assert "1 of 3 claims undecided" in str(raised)
    assert verdict(probe, "default.replacement-after-delete").status == UNDECIDED


def test_a_replacement_whose_relist_stretch_spans_the_old_pods_end_is_undecided(tmp_path: Path) -> None:
    """If the gap that hid the replacement also spans the old pod's end, the order is not known."""
    recording = live(JOB_LIVE)
    lose_events(recording, "Pod", 47.0, 59.0, "watch expired (410 Gone)")
    for kind in ("Pod", "Job"):
        watch_of(recording, kind)["closed_at"] = 98.0
    probe, raised = replay(recording, "job_replacement", job_probes, tmp_path)
    before = verdict(probe, "default.before-old-pod-terminal")
    assert before.status == UNDECIDED and before.observed is False, before.message
    assert isinstance(raised, ClaimsUndecided)
    assert before.detail.get("watch_gaps") == ["watch expired (410 Gone)"]


def test_a_container_the_kubelet_reported_without_an_id_is_not_blamed_on_node_access(tmp_path: Path) -> None:
    """Seen live on v1.22.17 (local, node access on): the kubelet removed a deleted pod's exited container before
    reporting it, so its status was ContainerStatusUnknown with no containerID. The claim on the node is then not
    observable for that reason, not for 'no access to the nodes'."""
    from harness.base.run import Run
    from harness.core.probe import Probe
    from harness.core.views import PodView
    from tests.live import live

    recording = live("phase_after_deletion/always_pod_trapping_sigterm--v1.27.3-live-local.json")
    probe = Probe.replaying(recording, "phase_after_deletion", Run.start(tmp_path))
    lost = {
        "metadata": {"name": "running-pod", "namespace": "ns", "uid": "u1"},
        "spec": {"nodeName": "plp-local-node", "containers": [{"name": "main"}]},
        "status": {
            "containerStatuses": [
                {"name": "main", "state": {"waiting": {"reason": "ContainerCreating"}}, "lastState": {}}
            ]
        },
    }
    why = probe.why_not_on_node(PodView.from_object(lost), "main")
    assert "names no container id for main" in why and "no access" not in why
    assert probe.node_container_state(PodView.from_object(lost), "main") is None


# ------------------------------------------------------------- real gaps, recorded live


@pytest.mark.parametrize("name", sorted(REAL_GAPS))
def test_a_real_gap_from_an_api_server_restart_is_on_record_and_judged(name: str, tmp_path: Path) -> None:
    """The watch really lost its connection when the API server stopped, and re-listed when it was back; the
    probe's timeline holds that gap, the origin says what was done, and every claim is still decided: the
    gap came before or after what decides each one (the verdict rules in docs/verdicts.md), so none was excused."""
    recording = live(f"{name}--v1.32.11-live-local-apiserver-restarted.json")
    (restart,) = recording.origin["disruptions"]
    assert restart["after_s"] == 12.0 and restart["apiserver_pid_after"] != restart["apiserver_pid_before"]
    watches = [s for s in recording.interactions if s["call"] == "watch"]
    relists = [e for watch in watches for e in watch["events"] if e["type"] == "RELISTED"]
    assert relists and all(e["gap"] == "watch connection lost (ProtocolError)" for e in relists)
    module = {"phase_after_deletion": phase_probes, "job_replacement": job_probes}.get(
        REAL_GAPS[name], termination_probes
    )
    probe, raised = replay(recording, REAL_GAPS[name], module, tmp_path)
    assert raised is None
    assert probe.timeline.gaps and set(probe.timeline.gaps) == {"watch connection lost (ProtocolError)"}
    assert probe.verdicts and all(v.status != UNDECIDED for v in probe.verdicts)


# ------------------------------------------------------------- 4. the rules are the harness's

ALWAYS_128 = "phase_after_deletion/always_pod_ignoring_sigterm--v1.28.0-live-local.json"
STS_SHUTDOWN = "node_shutdown/statefulset_pod_after_graceful_node_shutdown--v1.27.9-live-kind.json"


def relist_after(recording: Recording, kind: str, start: float, relist_at: float, why: str) -> None:
    """The watch of `kind` lost every event in [start, relist_at) and re-listed at `relist_at`: each object (by
    uid) as last seen, the deleted ones left out (a name taken again by a new pod shows that pod only)."""
    watch = watch_of(recording, kind)
    objects: dict[str, JsonDict] = {}
    for event in watch["events"]:
        if event["t"] < relist_at:
            uid = event["object"]["metadata"]["uid"]
            if event["type"] == "DELETED":
                objects.pop(uid, None)
            else:
                objects[uid] = event["object"]
    relist = {"t": relist_at, "type": "RELISTED", "object": {"items": copy.deepcopy(list(objects.values()))}}
    kept = [e for e in watch["events"] if not start <= e["t"] < relist_at]
    watch["events"] = sorted([*kept, {**relist, "gap": why}], key=lambda e: float(e["t"]))


def test_a_pod_that_never_fails_watched_whole_after_an_early_relist_fails_the_claim(tmp_path: Path) -> None:
    """The 1.28 finalizer pod never reaches Failed (its Failed updates altered to Running); the watch
    re-listed once in the first half second after the delete and saw every state from then until long after its
    container stopped. The old probe gave the claim every gap after the delete and called it undecided; states
    hidden before that re-list cannot make a sequence that was Running at the re-list and after end Failed."""
    recording = live(ALWAYS_128)
    for event in events_of(recording, "Pod"):
        if event["object"]["status"]["phase"] == "Failed":
            event["object"]["status"]["phase"] = "Running"
    relist_after(recording, "Pod", 530.64, 531.1, "watch expired (410 Gone)")
    probe, raised = replay(recording, "phase_after_deletion", phase_probes, tmp_path)
    phases = verdict(probe, "always.sigterm-ignored.phases")
    assert phases.observed == ["Running"] and phases.status == FAIL, phases.message
    assert type(raised) is ClaimsFailed
    assert phases.detail["watch_gaps"] == ["watch expired (410 Gone)"]  # on record, not blamed
    assert "cannot explain this: a gap hides states where it lies" in phases.message
    # the exit, read from the state the pod was left in, was seen whole: the early gap is nobody's business
    assert verdict(probe, "sigterm-ignored.exit").status == PASS


def test_a_statefulset_pod_recreated_under_its_name_in_a_gap_is_another_pod(tmp_path: Path) -> None:
    """While the pods' watch was down, the StatefulSet's stopped pod was deleted and recreated under its
    name with a new uid. The re-list shows the name with that uid: the old pod is gone and a new one added, both
    dated to the gap. The old probe took the name for the pod: the old one was never gone, and it read its last
    state, "left Succeeded" (undecided here, on 1.27.9, where it is deleted; a false pass where Succeeded is
    expected, below)."""
    recording = live(STS_SHUTDOWN)
    relist_after(recording, "Pod", 39.35, 56.0, "watch connection lost (ProtocolError)")
    probe, raised = replay(recording, "node_shutdown", shutdown_probes, tmp_path)
    assert raised is None, raised
    stopped = verdict(probe, "statefulset.stopped-pod")
    assert stopped.observed == "deleted" and stopped.status == PASS, stopped.message
    recreated = verdict(probe, "statefulset.pod-recreated")
    assert recreated.observed is True and recreated.status == PASS, recreated.message
    (pods,) = probe.watches
    old, new = "38bb11d2-", "dc1097b4-"
    (gone,) = [(t, type_) for t, type_, view in pods.changes if view.uid.startswith(old) and type_ == "GONE"]
    (added,) = [(t, type_) for t, type_, view in pods.changes if view.uid.startswith(new) and type_ == "RELISTED"]
    assert gone == (56.0, "GONE") and added == (56.0, "RELISTED")
    sighted = pods.first_sighting(lambda _, view: view.uid.startswith(new))
    assert sighted is not None and (sighted.not_before, sighted.t) == (39.333, 56.0)  # anywhere in the gap
    (gap,) = pods.gaps
    assert {uid[:9] for uid in gap.changed} == {old, new}
    entries = [e for e in probe.timeline.to_json()["entries"] if e["source"] == "pod/shutdown-stateful-0"]
    assert {e["uid"][:9] for e in entries} == {old, new}  # the timeline knows them apart
    assert "(new uid dc1097b4)" in probe.timeline.render()


def test_a_pod_recreated_in_a_gap_is_not_taken_for_the_old_pod_left_in_place(tmp_path: Path) -> None:
    """The same recording as if its server had said v1.27.8, where the stopped pod is expected left Succeeded: the
    old probe passed it, reading the old pod's last state under its name; it was deleted, and that fails."""
    recording = as_version(live(STS_SHUTDOWN), "v1.27.8")
    relist_after(recording, "Pod", 39.35, 56.0, "watch connection lost (ProtocolError)")
    probe, raised = replay(recording, "node_shutdown", shutdown_probes, tmp_path)
    stopped = verdict(probe, "statefulset.stopped-pod")
    assert stopped.observed == "deleted" and stopped.status == FAIL, stopped.message
    assert type(raised) is ClaimsFailed
