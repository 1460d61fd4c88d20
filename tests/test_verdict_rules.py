"""The verdict rules are the harness's, checked on every live recording of every family.

Each recording is replayed through its probe (in memory: the files are never edited), and every verdict keeps what
its observation rests on (harness/core/basis.py). Then:
- a synthetic gap placed outside each claim's deciding stretch leaves its verdict as it was: judged again with
  such a gap on its watches (just before the stretch, just after it), and, through the probe itself, on a copy of
  the recording whose watches lost their events before every claim's stretch and re-listed;
- the same gap placed across the stretch makes a passing claim undecided, never failed or passed; a claim read
  outside every watch (the node, a log, the events) is judged alike whatever the watches missed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from harness.base.run import Run
from harness.core.basis import Basis, Gap
from harness.core.expectations import FAIL, NOT_OBSERVABLE, PASS, UNDECIDED, Verdict
from harness.core.probe import ClaimsFailed, Probe
from harness.core.timeline import Sighting
from harness.core.transport import ACTIONS, JsonDict
from harness.core.transport_recording import Recording
from tests.live_replays import Replayed, live_recordings, replayed_live

RECORDINGS = live_recordings()
SYNTHETIC = "synthetic gap (test)"
# The re-list that ends a synthetic gap in a recording comes this long after the last event it lost.
RELIST_AFTER_S = 0.0005


@pytest.fixture(scope="session")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """One run for every replay here (starting one asks git for the suite's commit): for the session, not the module,
    as the module's tests of a family go out with tests/test_identity.py's of that family (tests/conftest.py), and
    a worker's turn to a test of the other module ended a module's fixtures."""
    return Run.start(tmp_path_factory.mktemp("runs"))


def replay(recording: Recording, family: str, run: Run) -> Probe:
    """Run the recording's probe (its module in probes/<family>/) and return it, whatever its claims said."""
    module_name, function = recording.probe.split("::")
    module = importlib.import_module(f"probes.{family}.{module_name.removesuffix('.py')}")
    probe = Probe.replaying(recording, family, run)
    with contextlib.suppress(ClaimsFailed):
        getattr(module, function)(probe)
    return probe


def judged(probe: Probe, verdict: Verdict, rests_on: Basis) -> str:
    """The verdict's claim judged again on the same observation, resting on `rests_on`."""
    evidence = verdict.detail.get("evidence")
    return probe.judge(verdict.claim.id, verdict.observed, rests_on, evidence).status


def leaves(basis: Basis) -> Iterator[Basis]:
    """The bases an observation rests on, its parts taken apart."""
    if basis.parts:
        for part in basis.parts:
            yield from leaves(part)
    else:
        yield basis


def with_gap(basis: Basis, placed: str) -> Basis:
    """The basis with a synthetic gap on its watches, `placed` "before" or "after" its stretch (outside it), or
    "across" it; a sighting of an order is dated to a gap across it, as a re-list would have shown it."""
    if basis.parts:
        return Basis.of(*(with_gap(part, placed) for part in basis.parts))
    if basis.ordered is not None:
        if placed != "across":
            return basis
        first, then = basis.ordered  # one gap across both: a re-list shows both
        start, end = min(first.not_before, then.not_before) - 1.0, max(first.t, then.t) + 1.0
        gap = Gap(start, None, end, SYNTHETIC, frozenset({"any"}))
        dated = [Sighting(end, start, "RELISTED", sighting.view, gap) for sighting in basis.ordered]
        return dataclasses.replace(basis, ordered=(dated[0], dated[1]))
    if not basis.watches:
        return basis
    since, until = basis.since.t, basis.until.t
    stretch = {"before": (since - 2.0, since), "after": (until, until + 2.0), "across": (since - 1.0, until + 1.0)}
    start, end = stretch[placed]
    changed = frozenset(basis.objects or {"any"})
    gap = Gap(start, None, end, SYNTHETIC, changed)
    watches = tuple(SimpleNamespace(kind=w.kind, gaps=[*w.gaps, gap]) for w in basis.watches)
    return dataclasses.replace(basis, watches=watches)


# ------------------------------------------------------------------------- losing events outside every stretch


def stretches(probe: Probe) -> dict[int, list[tuple[float, float]]]:
    """Every deciding stretch the probe's verdicts rest on, by the watch (observer id) they are on."""
    found: dict[int, list[tuple[float, float]]] = {}
    for verdict in probe.verdicts:
        if verdict.rests_on is None:
            continue
        for leaf in leaves(verdict.rests_on):
            if leaf.ordered is not None:
                for sighting in leaf.ordered:
                    found.setdefault(id(leaf.watches[0]), []).append((sighting.not_before, sighting.t))
            for watch in leaf.watches:
                found.setdefault(id(watch), []).append((leaf.since.t, leaf.until.t))
    return found


def latest_objects(events: list[JsonDict], upto: int) -> list[JsonDict]:
    """What a re-list after event number `upto` would show: each object's (by uid) latest state, deleted ones not
    (the events' own objects: a replay only reads them, and a copy of each cost more than the replay)."""
    objects: dict[str, JsonDict] = {}
    for event in events[: upto + 1]:
        items = event["object"]["items"] if event["type"] == "RELISTED" else [event["object"]]
        if event["type"] == "RELISTED":
            objects = {}
        for item in items:
            uid = item["metadata"].get("uid") or item["metadata"]["name"]
            if event["type"] == "DELETED":
                objects.pop(uid, None)
            else:
                objects[uid] = item
    return list(objects.values())


def with_its_own_watches(recording: Recording) -> Recording:
    """A copy of the recording whose watch steps are its own (lose_before_every_stretch gives a step a new list of
    events, never changes an event): the rest is shared, a replay only reads it. Parsing the file again, or a deep
    copy, cost more than the replay."""
    steps = [{**step} if step["call"] == "watch" else step for step in recording.interactions]
    return Recording(recording.probe, recording.origin, steps, recording.views)


def lose_before_every_stretch(recording: Recording, probe: Probe) -> int:
    """On each watch of the recording, lose the events that come before every stretch its claims rest on, and
    re-list just after the last one lost; returns how many events were lost in all.

    The lost events and their re-list also come before the probe's next action (a create, delete, patch ...): a
    wait that ended on them ends on the re-list instead, and the probe goes on as recorded.
    """
    actions = sorted(float(step["t_start"]) for step in recording.interactions if step["call"] in ACTIONS)
    on_watch = stretches(probe)
    kinds = [o.kind for o in probe.watches]
    lost = 0
    watches = [step for step in recording.interactions if step["call"] == "watch"]
    for step, observer in zip(watches, probe.watches, strict=True):
        if kinds.count(observer.kind) != 1 or step["request"]["kind"] != observer.kind:
            continue  # two watches of one kind: which one a stretch is on is not told apart here
        events: list[JsonDict] = step["events"]
        first_stretch = min((since for since, _ in on_watch.get(id(observer), [])), default=None)
        if first_stretch is None or not events:
            continue
        next_action = min((t for t in actions if t > events[0]["t"]), default=float("inf"))
        last = -1  # the last event that can be lost: its re-list still ends before the first stretch begins
        for index, event in enumerate(events):
            relist_at = event["t"] + RELIST_AFTER_S
            following = events[index + 1]["t"] if index + 1 < len(events) else float("inf")
            ends_too_late = relist_at > first_stretch or relist_at >= next_action
            if event["type"] == "RELISTED" or ends_too_late or relist_at >= following:
                break
            last = index
        if last < 0:
            continue
        relist = {
            "t": round(events[last]["t"] + RELIST_AFTER_S, 4),
            "type": "RELISTED",
            "object": {"items": latest_objects(events, last)},
            "gap": SYNTHETIC,
        }
        step["events"] = [relist, *events[last + 1 :]]
        lost += last + 1
    return lost


def outcome(verdict: Verdict) -> tuple[str, str]:
    return verdict.claim.id, verdict.status


# One test per family, its recordings checked in turn and every one that breaks a rule listed: a test per recording
# (2,385) cost pytest's own work for each, about as much CPU as the replays of half of them.
@pytest.mark.parametrize("family", sorted({path.parent.parent.name for path in RECORDINGS}))
def test_a_gap_outside_a_claims_stretch_changes_nothing_and_one_across_it_leaves_it_undecided(
    family: str, run: Run
) -> None:
    replays = replayed_live(family, run)  # as recorded: shared with tests/test_identity.py
    broken = []
    for replayed in replays:
        try:
            gaps_outside_change_nothing_and_across_leave_undecided(replayed, run)
        except AssertionError as err:
            broken.append(f"{replayed.path.name}: {err}")
    assert replays, f"no live recording of {family}"
    assert not broken, f"{len(broken)} of {len(replays)} recordings:\n" + "\n".join(broken)


def gaps_outside_change_nothing_and_across_leave_undecided(replayed: Replayed, run: Run) -> None:
    """The rules on one recording (the module's docstring says them); AssertionError names the one it breaks."""
    family, recording, probe = replayed.path.parent.parent.name, replayed.recording, replayed.probe
    if replayed.stopped is not None:
        replay(recording, family, run)  # raises what stopped it, as a replay here raises it
    judged_claims = [v for v in probe.verdicts if v.status != NOT_OBSERVABLE]
    assert judged_claims, "the probe judged no claim"
    for verdict in judged_claims:
        basis = verdict.rests_on
        assert isinstance(basis, Basis), f"{verdict.claim.id}: judged without saying what it rests on"
        for placed in ("before", "after"):
            status = judged(probe, verdict, with_gap(basis, placed))
            assert status == verdict.status, f"{verdict.claim.id}: a gap {placed} its stretch made it {status}"
        across = judged(probe, verdict, with_gap(basis, "across"))
        if all(leaf.read for leaf in leaves(basis)):  # read outside every watch: no watch gap hides it
            assert across == verdict.status, verdict.claim.id
        elif verdict.status == PASS:
            assert across == UNDECIDED, f"{verdict.claim.id}: a gap across what decides it left it {across}"
        else:
            assert across in (UNDECIDED, FAIL), verdict.claim.id  # a gap never makes a pass

    # The same through the probe itself: a copy whose watches lost what came before every claim's stretch.
    altered = with_its_own_watches(recording)
    if lose_before_every_stretch(altered, probe) == 0:
        return  # every watch's first event already lies in a stretch (a claim rests on the whole stream)
    again = replay(altered, family, run)
    assert SYNTHETIC in again.timeline.gaps, "the altered recording's gap was not seen"
    assert [outcome(v) for v in again.verdicts] == [outcome(v) for v in probe.verdicts]
    assert [v.observed for v in again.verdicts] == [v.observed for v in probe.verdicts]
    assert all(SYNTHETIC not in v.detail.get("watch_gaps", ()) for v in again.verdicts)


def test_most_recordings_lose_events_outside_every_stretch(run: Run) -> None:
    """The replayed check above is not vacuous: in most recordings some events come before every stretch."""
    sample = RECORDINGS[:: max(1, len(RECORDINGS) // 60)]
    altered = 0
    for path in sample:
        recording = Recording.load(path)
        probe = replay(recording, path.parent.parent.name, run)
        altered += lose_before_every_stretch(with_its_own_watches(recording), probe) > 0
    assert altered >= 0.6 * len(sample), f"{altered} of {len(sample)}"
