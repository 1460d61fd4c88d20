"""Which pod is "the new one" is the harness's to decide (harness/core/identity.py), tested on live recordings.

Every recording here is a live one, altered in memory only (tests/mutations.py says how): a pod of the same
controller rejected at admission before the act, a uid swapped at a re-list, a deletion learned only from a
re-list, a re-list diff with a GONE beside status writes seen whole. No alteration may make a verdict pass that the
unaltered recording did not pass with the same observation; three of them are also rows of their own below.
"""

from __future__ import annotations

import collections
import time

import pytest

from harness.base.families import families
from harness.base.run import Run
from harness.core.expectations import PASS, UNDECIDED
from harness.core.observe_readings import Change, in_server_order
from harness.core.probe import Probe
from harness.core.transport_recording import Recording
from probes.statefulset_status.test_statefulset_status import replicas_below_pods
from tests.live import live
from tests.live_replays import recordings_of, replayed_live
from tests.mutations import (
    MUTATED,
    MUTATIONS,
    deletion_only_in_relist,
    gone_beside_status_writes,
    mutated,
    passes,
    pod_watch,
    rejected_sibling,
    replay,
)


@pytest.fixture(scope="session")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """One run for every replay here, as tests/test_verdict_rules.py has (starting one asks git for the suite's
    commit: 12 ms of CPU): a test already replays several recordings in one run, and the replays shared with that
    module (tests/live_replays.py) were made in whichever module's run came first."""
    return Run.start(tmp_path_factory.mktemp("runs"))


def outcomes(probe: Probe) -> list[tuple[str, str, str]]:
    return [(v.claim.id, v.status, repr(v.observed)) for v in probe.verdicts]


def family_of(relative: str) -> str:
    return relative.split("/", 1)[0]


# ------------------------------------------------------------------------------------ a rejected sibling


@pytest.mark.parametrize(
    "relative",
    [
        "termination_order/replicaset_replaces_a_pod_while_it_terminates--v1.28.4-live-kind.json",
        "termination_order/replicaset_replaces_a_pod_while_it_terminates--v1.26.6-live-local.json",
        "job_replacement/job_without_policies_replaces_a_deleted_pod--v1.27.3-live-kind.json",
        "node_shutdown/daemonset_pod_after_graceful_node_shutdown--v1.26.6-live-kind.json",
    ],
)
def test_a_sibling_rejected_before_the_act_is_not_taken_for_the_new_pod(relative: str, run: Run) -> None:
    """A pod of the same controller, created before the act and rejected at admission (Failed, OutOfcpu), is not
    the replacement: every verdict and observation stays as recorded (the ReplicaSet probe once took it for the
    replacement, 1 s before the delete by its creationTimestamp, and passed on it)."""
    recording = live(relative)
    assert rejected_sibling(recording)
    probe, stopped = replay(recording, family_of(relative), run)
    assert stopped is None
    assert any(pod.name.endswith("rejected") for pod in probe.pods.values()), "the sibling was never seen"
    unaltered, _ = replay(live(relative), family_of(relative), run)
    assert outcomes(probe) == outcomes(unaltered)


# ---------------------------------------------------------------------------- a deletion only a re-list showed


@pytest.mark.parametrize(
    ("relative", "successor_claim"),
    [
        ("node_shutdown/daemonset_pod_after_graceful_node_shutdown--v1.26.6-live-kind.json", "daemonset.pod-replaced"),
        (
            "node_shutdown/statefulset_pod_after_graceful_node_shutdown--v1.26.6-live-kind.json",
            "statefulset.pod-recreated",
        ),
        ("node_shutdown/daemonset_pod_after_graceful_node_shutdown--v1.28.4-live-kind.json", "daemonset.pod-replaced"),
    ],
)
def test_a_pod_deleted_in_a_gap_is_not_found_running_and_its_successor_is_seen(
    relative: str, successor_claim: str, run: Run
) -> None:
    """The watch lost the shut-down pod's events from its last Running state through its DELETED and re-listed: the
    pod keeps its last state (Running, Ready) but is known gone, so it is not the pod "on the worker"; its successor,
    seen whole after the re-list, decides the successor claim (it was undecided after the full wait). What the gap
    could hide of the stopped pod itself is undecided, never passed."""
    recording = live(relative)
    assert deletion_only_in_relist(recording)
    probe, stopped = replay(recording, family_of(relative), run)
    assert stopped is None, stopped  # no wait ran past the recording
    verdicts = {v.claim.id: v for v in probe.verdicts}
    assert (verdicts[successor_claim].status, verdicts[successor_claim].observed) == (PASS, True)
    for claim in ("shutdown.pod-phase", "shutdown.pod-reason", "shutdown.disruption-target", "shutdown.container-exit"):
        assert verdicts[claim].status == UNDECIDED, claim
        assert MUTATED in verdicts[claim].detail["watch_gaps"], claim


# -------------------------------------------------------------------------- a GONE beside status writes


def dip_first(recording: Recording, run: Run) -> str:
    """The StatefulSet watch delivers the status write with the scale-up's dip before the Pod watch delivers the pods'
    ADDED events (two watches interleave by arrival; the resourceVersion is the server's order); returns its
    resourceVersion."""
    probe, _ = replay(recording, "statefulset_status", run)
    sets, pods = probe.watches
    violation = replicas_below_pods(in_server_order(sets, pods))
    assert violation is not None, "the recording shows no dip"
    version = str(violation.change.view.resource_version)
    first_added = min(e["t"] for e in pod_watch(recording)["events"] if e["type"] == "ADDED")
    (step,) = [s for s in recording.interactions if s["call"] == "watch" and s["request"]["kind"] == "StatefulSet"]
    for event in step["events"]:
        if event["object"]["metadata"]["resourceVersion"] == version:
            event["t"] = round(first_added - 0.001, 4)
    assert [e["t"] for e in step["events"]] == sorted(e["t"] for e in step["events"])
    return version


def test_a_gone_in_a_relist_leaves_the_server_order_and_the_dip_seen(run: Run) -> None:
    """A re-list of the pods whose diff holds a GONE (the last deletion, learned only there) does not make the stream
    fall back to arrival order: the status write with the scale-up's dip, delivered before the pods' ADDED events,
    still comes after them by resourceVersion, and the verdict rests on that write (by arrival the dip went unseen
    and only a later write, during the deletions, was found; where there is none, the claim was left undecided)."""
    relative = (
        "statefulset_status/statefulset_status_through_parallel_scale_up_and_partitioned_update--v1.28.4-live-kind.json"
    )
    recording = live(relative)
    dip = dip_first(recording, run)
    assert gone_beside_status_writes(recording)
    probe, stopped = replay(recording, "statefulset_status", run)
    assert stopped is None
    sets, pods = probe.watches
    assert any(type_ == "GONE" for _, type_, _ in pods.changes)
    by_arrival = sorted((Change(t, o.kind, ty, v) for o in (sets, pods) for t, ty, v in o.changes), key=lambda c: c.t)
    found_by_arrival = replicas_below_pods(by_arrival)
    assert found_by_arrival is None or found_by_arrival.change.view.resource_version != dip, "the row proves nothing"
    found = replicas_below_pods(in_server_order(sets, pods))
    assert found is not None and found.change.view.resource_version == dip
    verdict = next(v for v in probe.verdicts if v.claim.id == "statefulset.scale-up.replicas-cover-pods")
    assert (verdict.status, verdict.observed) == (PASS, False)
    assert f"rv={dip} " in verdict.detail["evidence"]


# --------------------------------------------------------------------------- every recording, every mutation


# A family whose probes are not recorded yet (tests/test_recordings.py names them) has nothing to alter.
@pytest.mark.parametrize("family", [f.name for f in families() if recordings_of(f.name)])
def test_no_alteration_makes_a_pass_the_recording_did_not_have(family: str, run: Run) -> None:
    """Each mutation on its own, on every live recording of the family: a pass after it must be a pass of the
    unaltered recording with the same observation. Prints the counts (applied, replays that ran through or stopped
    at a call the altered recording did not have, passes kept and lost)."""
    started = time.monotonic()
    counts: dict[str, collections.Counter[str]] = {name: collections.Counter() for name in MUTATIONS}
    new_passes: list[str] = []
    for replayed in replayed_live(family, run):  # as recorded: shared with tests/test_verdict_rules.py
        path, recording, unaltered = replayed.path, replayed.recording, replayed.probe
        assert replayed.stopped is None, f"{path.name}: the unaltered recording stopped early ({replayed.stopped})"
        before = passes(unaltered)
        for name, mutation in MUTATIONS.items():
            altered = mutated(recording, mutation)
            if altered is None:
                counts[name]["not applicable"] += 1
                continue
            probe, stopped = replay(altered, family, run)
            after = passes(probe)
            counts[name].update(
                applied=1,
                **{"stopped early" if stopped else "ran through": 1},
                **{"passes kept": len(after & before), "passes lost": len(before - after)},
            )
            new_passes.extend(f"{path.name} ({name}): {claim} = {observed}" for claim, observed in after - before)
    print(f"\n{family}: {len(recordings_of(family))} recordings, {time.monotonic() - started:.1f} s")
    for name, counted in counts.items():
        print(f"  {name:<28} " + ", ".join(f"{key} {value}" for key, value in sorted(counted.items())))
    assert not new_passes, "passes the unaltered recordings did not have:\n" + "\n".join(new_passes)
    assert sum(counted["applied"] for counted in counts.values()) > 0, "no mutation applied to this family"
    assert sum(counted["passes kept"] for counted in counts.values()) > 0, "no altered replay judged anything"
