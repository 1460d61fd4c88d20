"""Altered copies of live recordings that test which pod the harness takes for "the new one" (in memory only).

Each mutation alters the one Pod watch of a recording and says whether it applied (a recording without what it
needs is left alone): a sibling pod of the same controller rejected at admission before the act, a uid swapped at a
re-list, a deletion learned only from a re-list, and a re-list diff with a GONE beside another watch's status
writes seen whole. An injected event takes the resourceVersion of the event before it (its place in the server's
order); the files under recordings/ are never touched.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable

from harness.base.run import Run
from harness.core.probe import ClaimsFailed, Probe
from harness.core.transport import JsonDict
from harness.core.transport_recording import Recording

MUTATED = "mutation (test)"
ACT_CALLS = ("delete", "evict", "node_shutdown")
REJECTED_STATUS: JsonDict = {
    "phase": "Failed",
    "reason": "OutOfcpu",
    "message": "Pod was rejected: Node didn't have enough resource: cpu, requested: 100, used: 1950, capacity: 2000",
}


def replay(recording: Recording, family: str, run: Run) -> tuple[Probe, str | None]:
    """Run the recording's probe; return it (its verdicts so far) and how it stopped early (None: it ran through).

    An altered recording may end a wait elsewhere than recorded: the replay then stops at a call the recording does
    not have, which is not a pass of anything."""
    module_name, function = recording.probe.split("::")
    module = importlib.import_module(f"probes.{family}.{module_name.removesuffix('.py')}")
    probe = Probe.replaying(recording, family, run)
    try:
        with contextlib.suppress(ClaimsFailed):  # the verdicts say what happened
            getattr(module, function)(probe)
    except Exception as err:  # a replay that left the recording's path, or a wait that gave up
        return probe, type(err).__name__
    return probe, None


def pod_watch(recording: Recording) -> JsonDict:
    (step,) = [s for s in recording.interactions if s["call"] == "watch" and s["request"]["kind"] == "Pod"]
    return step


def other_watches(recording: Recording) -> list[JsonDict]:
    return [s for s in recording.interactions if s["call"] == "watch" and s["request"]["kind"] != "Pod"]


def act(recording: Recording) -> JsonDict | None:
    """The probe's first act on the cluster (a delete, an eviction, a node shutdown), or None."""
    return next(
        (
            step
            for step in recording.interactions
            if step["call"] in ACT_CALLS and step["request"].get("starting", True) is not False
        ),
        None,
    )


def acted_on(recording: Recording) -> str | None:
    """The name of the pod the first act was about (a node shutdown names none)."""
    step = act(recording)
    return None if step is None else step["request"].get("name") or step["request"].get("pod")


def _version_before(events: list[JsonDict], t: float) -> str:
    """The resourceVersion of the last event delivered at or before `t` (an injected event's place)."""
    version = "0"
    for event in events:
        if event["t"] > t:
            break
        items = event["object"]["items"] if event["type"] == "RELISTED" else [event["object"]]
        versions = [int(v) for i in items if str(v := i["metadata"].get("resourceVersion", "")).isdigit()]
        version = str(max(versions, default=int(version)))
    return version


def _insert(events: list[JsonDict], event: JsonDict) -> None:
    index = next((i for i, e in enumerate(events) if e["t"] > event["t"]), len(events))
    event["object"]["metadata"]["resourceVersion"] = _version_before(events, event["t"])
    events.insert(index, event)


def latest_objects(events: list[JsonDict], upto: int) -> list[JsonDict]:
    """What a re-list after event number `upto` shows: each object's (by uid) latest state, deleted ones not."""
    objects: dict[str, JsonDict] = {}
    for event in events[: upto + 1]:
        if event["type"] == "RELISTED":
            objects = {item["metadata"]["uid"]: item for item in event["object"]["items"]}
            continue
        uid = event["object"]["metadata"]["uid"]
        if event["type"] == "DELETED":
            objects.pop(uid, None)
        else:
            objects[uid] = event["object"]
    return list(objects.values())  # shared with the events: a replay only reads them


def _relist(events: list[JsonDict], index: int) -> JsonDict:
    """A re-list arriving when event number `index` did, showing what existed after it (that event lost)."""
    return {
        "t": events[index]["t"],
        "type": "RELISTED",
        "object": {"items": latest_objects(events, index)},
        "gap": MUTATED,
    }


def rejected_sibling(recording: Recording) -> bool:
    """A pod of the same controller as the first owned pod, created before the act (just before it, or just after
    that pod when there is no act) and rejected at admission (Failed, OutOfcpu) just after."""
    watch = pod_watch(recording)
    events = watch["events"]
    if watch["request"]["name"] is not None:
        return False  # a watch of one named pod: a sibling would not be in it
    template = next((e for e in events if e["type"] == "ADDED" and _controller(e["object"])), None)
    if template is None:
        return False
    step = act(recording)
    created_at = template["t"] + 0.0005
    if step is not None:
        created_at = max(created_at, float(step["t_start"]) - 0.002)
    failed_at = created_at + 0.003
    # Its own metadata and status, the rest shared with the template (a replay only reads it): a copy of the whole pod
    # for each recording cost more than its replays
    sibling = {**template["object"], "metadata": dict(template["object"]["metadata"])}
    meta = sibling["metadata"]
    meta["name"] = f"{meta.get('generateName') or meta['name'] + '-'}rejected"
    meta["uid"] = "sibling-" + meta["uid"][8:]
    for key in ("deletionTimestamp", "deletionGracePeriodSeconds"):
        meta.pop(key, None)
    sibling["status"] = {"phase": "Pending"}
    _insert(events, {"t": round(created_at, 4), "type": "ADDED", "object": sibling})
    failed = {**sibling, "metadata": dict(meta), "status": dict(REJECTED_STATUS)}
    _insert(events, {"t": round(failed_at, 4), "type": "MODIFIED", "object": failed})
    return True


def _controller(obj: JsonDict) -> bool:
    return any(ref.get("controller") for ref in obj["metadata"].get("ownerReferences") or ())


def uid_swap_at_relist(recording: Recording) -> bool:
    """The watch loses the first event after the act (the middle one without an act) and re-lists: the pod acted
    on (else the first listed) shows there with another uid, and keeps it in every later event."""
    watch = pod_watch(recording)
    events = watch["events"]
    step = act(recording)
    if step is None:
        index = len(events) // 2
    else:
        index = next((i for i, e in enumerate(events) if e["t"] > float(step["t_start"])), len(events))
    if index >= len(events) or events[index]["type"] == "RELISTED":
        return False
    relist = _relist(events, index)
    items = relist["object"]["items"]
    name = acted_on(recording)
    chosen = next((item for item in items if item["metadata"]["name"] == name), items[0] if items else None)
    if chosen is None:
        return False
    old = chosen["metadata"]["uid"]
    new = "swapped-" + old[8:]

    def swapped(obj: JsonDict) -> JsonDict:
        if obj["metadata"]["uid"] == old:
            return {**obj, "metadata": {**obj["metadata"], "uid": new}}
        return obj

    relist["object"]["items"] = [swapped(item) for item in items]
    later = [
        {**e, "object": {"items": [swapped(item) for item in e["object"]["items"]]}}
        if e["type"] == "RELISTED"
        else {**e, "object": swapped(e["object"])}
        for e in events[index + 1 :]
    ]
    watch["events"] = [*events[:index], relist, *later]
    return True


def deletion_only_in_relist(recording: Recording) -> bool:
    """The watch loses a deleted pod's events from its last Running state on through its DELETED, and re-lists
    where the DELETED came: the pod keeps its last Running state and is known gone only from the re-list's diff."""
    events = pod_watch(recording)["events"]
    deleted = next((i for i, e in enumerate(events) if e["type"] == "DELETED"), None)
    if deleted is None:
        return False
    uid = events[deleted]["object"]["metadata"]["uid"]
    running = [
        i
        for i, e in enumerate(events[:deleted])
        if e["type"] != "RELISTED"
        and e["object"]["metadata"]["uid"] == uid
        and (e["object"].get("status") or {}).get("phase") == "Running"
        and not e["object"]["metadata"].get("deletionTimestamp")
    ]
    first_lost = running[-1] + 1 if running else deleted
    if any(e["type"] == "RELISTED" for e in events[first_lost : deleted + 1]):
        return False
    events[first_lost : deleted + 1] = [_relist(events, deleted)]
    return True


def gone_beside_status_writes(recording: Recording) -> bool:
    """Where another watch sees status writes whole, the Pod watch loses its last DELETED alone and re-lists then:
    its diff holds a GONE, and the other watch's writes around it are all seen."""
    if not other_watches(recording):
        return False
    events = pod_watch(recording)["events"]
    deleted = [i for i, e in enumerate(events) if e["type"] == "DELETED"]
    if not deleted:
        return False
    events[deleted[-1]] = _relist(events, deleted[-1])
    return True


MUTATIONS: dict[str, Callable[[Recording], bool]] = {
    "rejected sibling": rejected_sibling,
    "uid swap at a re-list": uid_swap_at_relist,
    "deletion only in a re-list": deletion_only_in_relist,
    "GONE beside status writes": gone_beside_status_writes,
}


def passes(probe: Probe) -> set[tuple[str, str]]:
    """Every passing verdict as (claim, what was observed)."""
    return {(v.claim.id, repr(v.observed)) for v in probe.verdicts if v.status == "pass"}


def mutated(recording: Recording, mutation: Callable[[Recording], bool]) -> Recording | None:
    """A copy of the recording, altered; None when the mutation does not apply to it.

    Only the Pod watch's list of events is copied (a mutation replaces events, never changes one in place, and a
    replay only reads them): a deep copy of every recording for every mutation would cost more than the replays. So
    the copy shares the views the recording's replays made of its objects (Recording.views).
    """
    if not any(s["call"] == "watch" and s["request"]["kind"] == "Pod" for s in recording.interactions):
        return None  # the API server refused the pod (a field before its release): no pod events to alter
    watch = pod_watch(recording)
    steps = [{**step, "events": list(step["events"])} if step is watch else step for step in recording.interactions]
    copied = Recording(recording.probe, recording.origin, steps, recording.views)
    return copied if mutation(copied) else None
