"""StatefulSet status through a Parallel scale-up and a partitioned rolling update.

"[Kubernetes 1.27] Pod 停止時のフェーズ遷移の変更" (pod-phase-on-stop-1.27), its section "StatefulSet の
Conformance テストの破壊": k/k#117865 made Parallel pod management create pods in parallel, and with it
`status.replicas` was first written smaller than the pods just created, corrected on the next sync. The
controller judged a rolling update complete from status.replicas, so a partitioned update could be taken as
finished early: currentRevision moved to the update revision, and a pod below the partition that was deleted
came back at the new revision (k/k#119684, k/k#119685). k/k#120731 judges completion from spec.replicas instead.
k/k#117865 was cherry-picked into patch lines that did not all get k/k#120731: the expectations list which.

The probe records every StatefulSet and pod change from before it creates anything, orders them as the
API server made them (resourceVersion, see harness.core.observe_readings.in_server_order) and checks three invariants
over the whole stream; a violation is reported with the offending status update and the pods then.

Its variant runs the same scenario with pods whose container exits 1 on SIGTERM: from 1.27 (k/k#115331) the
deleted pod ends Failed before it is gone, and the controller's recreation of a Failed pod moved currentRevision
on releases before k/k#120731 even without k/k#117865 (1.27.0-rc.0 to 1.27.3); the base's pods exit 0 and end
Succeeded, which that controller leaves alone.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from harness.core.basis import Basis, Moment
from harness.core.identity import controller_uid, successor
from harness.core.observe import Observer, key_of
from harness.core.observe_readings import Change, PodObserver, in_server_order
from harness.core.probe import POD_START_BUDGET_S, Probe
from harness.core.views import PodView, StatefulSetView

pytestmark = pytest.mark.probe("statefulset_status")

REPLICAS = 3
# Ordinals 1 and 2 are updated; parallel-web-0 alone stays below the partition. The geometry matters: before
# k/k#120731 a rolling update counted as complete when updatedReplicas == status.replicas (and ready ==
# status.replicas; completeRollingUpdate in pkg/controller/statefulset/stateful_set_utils.go at v1.28.0),
# and the sync that recreates a deleted pod does not count it (its local copy has no phase yet: isCreated,
# computeReplicaStatus). With web-0 the only pod below the partition, that sync sees 2 pods, both updated:
# the update "completes" and currentRevision moves. With partition 2 (web-0 and web-1 below it) the old-revision
# web-1 is still counted, updated (1) never equals replicas (2), and the bug cannot show.
PARTITION = 1
BELOW_PARTITION = "parallel-web-0"
# Deletions of that pod at most: two, and two more where a stale sync wrote a moved currentRevision back.
MAX_DELETIONS = 4
# Three small pods on one node: scheduling, the pinned image's pull and start.
# After the last expected change, keep recording this long: a late status write is part of the stream.
SETTLE_S = 10.0


def existing_pods(changes: list[Change], upto: int) -> dict[str, str]:
    """The pods that existed just before change number `upto` of the ordered stream: uid -> name (by uid: a pod
    recreated under the same name is another pod)."""
    alive: dict[str, str] = {}
    for _, kind, type_, view in changes[:upto]:
        if kind != "Pod":
            continue
        if type_ in ("DELETED", "GONE"):
            alive.pop(key_of(view), None)
        else:
            alive[key_of(view)] = view.name
    return alive


def status_updates(changes: list[Change]) -> list[tuple[int, StatefulSetView]]:
    """(position in the stream, StatefulSet as written) for every change of the StatefulSet."""
    return [(i, view) for i, (_, kind, type_, view) in enumerate(changes) if kind == "StatefulSet" and type_ != "GONE"]


class Violation(NamedTuple):
    """A status write that broke an invariant: where it stands in the stream and what it says."""

    change: Change
    pods: dict[str, str]  # the pods that existed just before it: uid -> name
    evidence: str


def replicas_below_pods(changes: list[Change]) -> Violation | None:
    """The first status write whose status.replicas is below the number of pods that existed, or None."""
    for position, view in status_updates(changes):
        pods = existing_pods(changes, position)
        if view.observed_generation and view.replicas < len(pods):
            names = ", ".join(sorted(pods.values()))
            evidence = f"status.replicas {view.replicas} while {len(pods)} pods existed ({names}): {view.summary()}"
            return Violation(changes[position], pods, evidence)
    return None


def what_replicas_below_pods_rests_on(
    below: Violation | None, sets: Observer[StatefulSetView], pods: PodObserver
) -> Basis:
    """What this verdict rests on (a gap hides states, it cannot add or reorder them).

    No violation seen: a hidden status write (or hidden pods) could be one: every state of both watches. A
    violation seen: the status write itself was seen; only the pods then existing, at that write (in the server's
    order, by resourceVersion): a deletion of one of them before it that a gap hid, learned of after it, could
    have made them fewer than counted.
    """
    if below is None:
        return Basis.of(sets.during(0.0), pods.during(0.0))
    version = str(below.change.view.resource_version)
    at = Moment(below.change.t, int(version) if version.isdigit() else None)
    return pods.during(at, at, below.pods)


def current_revision_moved_early(changes: list[Change], original: str | None) -> str | None:
    """The first status write that moved currentRevision away from `original` before every pod was updated.

    With the partition above 0 not every pod is ever updated here, so any move is early.
    """
    for _, view in status_updates(changes):
        if original and view.current_revision and view.current_revision != original:
            moved = f"currentRevision moved to {view.current_revision}"
            return f"{moved} with updatedReplicas {view.updated_replicas} of {view.spec_replicas}: {view.summary()}"
    return None


def revision_name(pod: PodView, current: str | None, update: str | None) -> str:
    """'current' or 'update' for the pod's controller-revision-hash (currentRevision ends with it)."""
    revision = pod.revision or ""
    if current and revision and current.endswith(revision):
        return "current"
    if update and revision and update.endswith(revision):
        return "update"
    return f"unknown ({revision or 'no label'})"


def all_ready(sets: Observer[StatefulSetView]) -> bool:
    latest = sets.latest
    return latest.observed_generation >= latest.generation and latest.ready_replicas == REPLICAS


def recreated(pods: Observer[PodView], below: PodView, act: Moment, ready: bool = True) -> PodView | None:
    """The pod that took the name of `below` after the delete `act`: the harness's successor (harness/core/identity.py,
    of the same StatefulSet, created after the delete, not known deleted) under that name, as last seen; with
    `ready`, only once it is Ready and not being deleted."""

    def came_back(pod: PodView) -> bool:
        return pod.name == below.name and (not ready or (pod.ready and pod.deletion_timestamp is None))

    back = successor(pods, controller_uid(below), act, came_back)
    return None if back is None else pods.states[key_of(back.view)]


def delete_and_await_recreation(probe: Probe, pods: PodObserver, deletion: int) -> tuple[float, str | None]:
    """Delete the pod below the partition and wait until the controller recreated it and it is Ready: when the
    delete was sent, and None (else what was awaited and last seen)."""
    below = pods.named(BELOW_PARTITION)
    assert below is not None, f"pod {BELOW_PARTITION} was never seen"
    deleted_at = probe.delete_pod(below)
    act = probe.act(deleted_at)
    time = {1: "", 2: " a second time"}.get(deletion, f" after deletion {deletion}")
    not_recreated = pods.await_outcome(
        f"pod {BELOW_PARTITION} to be recreated and Ready{time}",
        lambda o: recreated(o, below, act) is not None,
        within=POD_START_BUDGET_S,
    )
    pods.catch_up()
    return deleted_at, not_recreated


class PartitionedUpdate(NamedTuple):
    """A StatefulSet through its Parallel scale-up and its partitioned update: what the probe watches of it."""

    name: str
    sets: Observer[StatefulSetView]
    pods: PodObserver
    original: str | None  # currentRevision before the update


def scale_up_then_update_above_the_partition(probe: Probe, manifest_file: str) -> PartitionedUpdate:
    """Apply the StatefulSet (a Parallel scale-up from 0 to 3), then a partitioned rolling update; return once the
    pod above the partition runs at the new revision. Both watches start before anything is created."""
    manifest = probe.manifest(manifest_file)
    name = manifest["metadata"]["name"]
    sets: Observer[StatefulSetView] = probe.watch_all("StatefulSet", focus=name)
    pods: PodObserver = probe.watch_pods()
    probe.create(manifest, anchor=True)

    # Act 1: the Parallel scale-up from 0 to 3.
    sets.wait_for(
        f"StatefulSet {name} to have {REPLICAS} ready replicas",
        lambda o: o.named(name) is not None and all_ready(o),
        within=POD_START_BUDGET_S,
    )
    pods.catch_up()
    original = sets.latest.current_revision

    # Act 2: a partitioned rolling update; the pod above the partition moves to the new revision.
    probe.patch(
        "StatefulSet",
        name,
        {
            "spec": {
                "updateStrategy": {"rollingUpdate": {"partition": PARTITION}},
                "template": {"metadata": {"annotations": {"pod-lifecycle-probes.test/revision": "2"}}},
            }
        },
        label=f"rolling update, partition {PARTITION}",
    )
    sets.wait_for(
        f"StatefulSet {name} to update the pod above partition {PARTITION}",
        lambda o: (
            o.latest.update_revision not in (None, original)
            and o.latest.updated_replicas >= REPLICAS - PARTITION
            and o.latest.ready_replicas == REPLICAS
        ),
        within=POD_START_BUDGET_S,
    )
    pods.catch_up()
    return PartitionedUpdate(name, sets, pods, original)


class Deletions(NamedTuple):
    """The deletions of the pod below the partition: the first, the last, and whether its last recreation came."""

    first: PodView  # the pod as the first delete found it
    first_at: float
    last_at: float
    not_recreated: str | None  # None, else what was awaited and last seen


def delete_below_the_partition(probe: Probe, update: PartitionedUpdate) -> Deletions:
    """Act 3: delete the pod below the partition, twice; the controller recreates it each time.

    Where the update is wrongly judged complete, the sync that recreates the pod the first time moves
    currentRevision to the update revision, though it still creates that pod from the revision it started with
    (live 1.28.0); the second recreation then comes from the moved currentRevision: the pod below the partition
    "comes up with the updated image" (CHANGELOG-1.28 v1.28.4, k/k#120731). A sync working from a stale copy of
    the StatefulSet can write currentRevision back (live on v1.25.12 and v1.26.7 under load: moved, and back
    0.01-0.12 s later); a recreation then moves it again and comes from the revision it started with. So where
    currentRevision has moved, the pod is deleted again until one deletion is made while it is seen moved
    (MAX_DELETIONS in all); where it never moves, twice. Then SETTLE_S more of both watches.
    """
    sets, pods, original = update.sets, update.pods, update.original
    first = pods.named(BELOW_PARTITION)
    assert first is not None, f"pod {BELOW_PARTITION} was never seen"
    first_deleted_at, not_recreated = delete_and_await_recreation(probe, pods, 1)
    deleted_at, deletions, moved_at_deletion = first_deleted_at, 1, False
    while not_recreated is None and deletions < MAX_DELETIONS:
        sets.catch_up()
        ever_moved = any(t >= first_deleted_at and v.current_revision != original for t, v in sets.history)
        if deletions >= 2 and (moved_at_deletion or not ever_moved):
            break
        moved_at_deletion = sets.latest.current_revision != original
        deletions += 1
        deleted_at, not_recreated = delete_and_await_recreation(probe, pods, deletions)
    sets.observe_for(SETTLE_S)
    pods.catch_up()
    return Deletions(first, first_deleted_at, deleted_at, not_recreated)


def check_recreated_revision(probe: Probe, claim: str, update: PartitionedUpdate, deletions: Deletions) -> None:
    """The revision the pod below the partition came back at after its last deletion ('current' or 'update').

    The pod that came back (by uid: the name is the deleted pod's too); its revision is its label, which it has from
    its creation: what decides is which pod came back, seen from the deletion on.
    """
    pods = update.pods
    back = None
    if deletions.not_recreated is None:
        back = recreated(pods, deletions.first, probe.act(deletions.last_at), ready=False)
    came_back = None if back is None else pods.first_sighting(lambda _, view: view.uid == back.uid)
    probe.check(
        claim,
        # without a recreated pod there is no revision to judge
        revision_name(back, update.original, update.sets.latest.update_revision)
        if back is not None
        else "not recreated",
        pods.during(deletions.last_at, None if came_back is None else came_back.t),
        evidence=deletions.not_recreated,
    )


def check_current_revision_holds(probe: Probe, claim: str, update: PartitionedUpdate, changes: list[Change]) -> None:
    """No status write moved currentRevision away from the revision before the update.

    A move seen is a status write seen: no hidden state undoes it. None seen: a gap in the StatefulSet's watch could
    have hidden one (the pods' watch cannot).
    """
    sets, original = update.sets, update.original
    moved = current_revision_moved_early(changes, original)
    moved_at = next((t for t, v in sets.history if original and v.current_revision not in (None, original)), None)
    probe.check(
        claim,
        moved is None,
        sets.during(0.0, None, sets.latest) if moved is None else sets.reading(sets.latest, at=moved_at),
        evidence=moved,
    )


def test_statefulset_status_through_parallel_scale_up_and_partitioned_update(probe: Probe) -> None:
    """The document: status.replicas covers the pods created; a partitioned update keeps the pods below it."""
    update = scale_up_then_update_above_the_partition(probe, "statefulset-parallel-partitioned.yaml")
    deletions = delete_below_the_partition(probe, update)

    changes = in_server_order(update.sets, update.pods)
    below = replicas_below_pods(changes)
    probe.check(
        "statefulset.scale-up.replicas-cover-pods",
        below is None,
        what_replicas_below_pods_rests_on(below, update.sets, update.pods),
        evidence=below.evidence if below else None,
    )
    check_recreated_revision(probe, "statefulset.partition.recreated-pod-revision", update, deletions)
    check_current_revision_holds(probe, "statefulset.partition.current-revision-holds", update, changes)
    probe.conclude()


def test_statefulset_partition_with_pods_failing_on_sigterm(probe: Probe) -> None:
    """The partitioned update above, its pods exiting 1 on SIGTERM. Claims (statefulset.failing-pod.*): the pod
    deleted below the partition ends Failed from 1.27.0-rc.0 (k/k#115331) and the controller recreates a Failed pod
    while it still exists; from 1.27.0-rc.0 to 1.27.7 and in the 1.28 pre-releases to 1.28.3 that recreation
    (AlreadyExists, status.replicas one short, the status written anyway) moves currentRevision and the pod comes
    back at the update revision: updateStatefulSet / processReplica in stateful_set_control.go and
    completeRollingUpdate in stateful_set_utils.go at those tags, fixed by k/k#120731 (1.27.8, 1.28.4). On 1.26 the
    pod stays Running and only k/k#117865's path (1.26.7 on) moves it. expectations.yaml gives ranges and sources.
    """
    update = scale_up_then_update_above_the_partition(probe, "statefulset-parallel-partitioned.failing-on-sigterm.yaml")
    deletions = delete_below_the_partition(probe, update)

    changes = in_server_order(update.sets, update.pods)
    phases, phases_rest_on = update.pods.phases(deletions.first, deletions.first_at)
    probe.check("statefulset.failing-pod.deleted-pod-phases", phases, phases_rest_on)
    check_current_revision_holds(probe, "statefulset.failing-pod.current-revision-holds", update, changes)
    check_recreated_revision(probe, "statefulset.failing-pod.recreated-pod-revision", update, deletions)
    probe.conclude()
