"""What an observation rests on, and which watch gaps could hide it: the first verdict rule, kept by the harness.

A watch gap (`Gap`: from the last event a watch delivered to the re-list that ended it) can hide states; it does
not add or reorder them. A claim is undecided exactly when a gap could hide a state that decides it, so a gap
must be given only to the claims whose deciding states it could hide. That choice is made here, once, for every
probe: a probe never passes gap lists. It says what each observation rests on (`Basis`):
- the watches it read, the objects it is about (by uid: harness/core/observe.py knows objects by uid, never by name),
  and the stretch of time its deciding states lie in (`during`); a state read at one instant (`reading`: what
  the watch showed then) or the state an object was left in (`final_state`), a sighting (`sighted`: the first
  state that showed an event, dated to a gap's whole stretch when only a re-list showed it), two sightings
  in order (`order`), or a sequence of states (`sequence`), whose mismatch a gap explains only where it lies;
- or something read outside every watch (`direct`: the node, a log, the events, an API answer), which no watch
  gap can hide.

`Basis.doubt()` chooses the gaps: a gap of one of the watches whose hidden stretch overlaps the stretch and whose
re-list showed one of the objects changed (new, gone, or at another resourceVersion: a re-list that showed them
as they were hid nothing about them); with no objects named (something that did or did not appear), every gap
of the stretch. The evaluator (harness/core/expectations.py) then judges: no gap, pass or fail as observed; a gap,
undecided, but for a sequence whose mismatch no states hidden where its gaps lie could turn into the expected
one (a fail), or whose match no hidden state could spoil.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol


class Gap(NamedTuple):
    """A stretch a watch may have missed: after the last event it delivered, up to the re-list that ended it.

    A gap hides states; it does not add or reorder them. What it may have hidden happened after `since`
    (when the last event before it arrived; on the server, after `since_version`) and before `until`.
    """

    since: float  # arrival of the last event delivered before the gap (or when the observer started)
    since_version: int | None  # that event's resourceVersion, when an integer (None: not known)
    until: float  # arrival of the re-list that closed the gap
    why: str
    changed: frozenset[str]  # uids of the objects the re-list showed changed: new, missing, or at another version


class Moment(NamedTuple):
    """An instant on the transport's clock, with the server's resourceVersion of what was seen then, if known."""

    t: float
    version: int | None = None


START = Moment(0.0)  # the transport clock's zero: a Basis's default bounds


class Watched(Protocol):
    """What a basis needs of a watch (harness/core/observe.py's Observer): its kind and its gaps so far."""

    kind: str
    gaps: list[Gap]


class Step(NamedTuple):
    """One state of a sequence: when it was seen and the value the sequence takes from it."""

    t: float
    value: Any


def began_before(gap: Gap, moment: Moment) -> bool:
    """Whether the gap began before the moment: by resourceVersion when both are known (two watches' arrivals
    are not in the server's order), else by arrival."""
    if gap.since_version is not None and moment.version is not None:
        return gap.since_version < moment.version
    return gap.since < moment.t


@dataclass(frozen=True)
class Basis:
    """What an observation rests on (see the module's docstring); build it with the constructors."""

    watches: tuple[Watched, ...] = ()
    objects: frozenset[str] | None = None  # uids; None: any object of the watches
    since: Moment = START
    until: Moment = START
    steps: tuple[Step, ...] = ()  # a sequence: its states in order (the first is the state at `since`)
    parts: tuple[Basis, ...] = ()  # an observation resting on several bases: each chooses its own gaps
    ordered: tuple[Any, Any] | None = None  # two sightings (harness/core/timeline.py Sighting) in the order claimed
    read: str = ""  # read outside every watch: what

    # ------------------------------------------------------------------------------ constructors

    @classmethod
    def direct(cls, what: str) -> Basis:
        """Read outside every watch (the node, a log, the events, an API answer): no watch gap hides it."""
        return cls(read=what)

    @classmethod
    def during(
        cls, watch: Watched, since: float | Moment, until: float | Moment, objects: Iterable[str] | None = None
    ) -> Basis:
        """Any state of `objects` (uids; None: of any object) between `since` and `until` may decide."""
        return cls(
            watches=(watch,),
            objects=None if objects is None else frozenset(objects),
            since=since if isinstance(since, Moment) else Moment(since),
            until=until if isinstance(until, Moment) else Moment(until),
        )

    @classmethod
    def sequence(cls, watch: Watched, uid: str, since: float, until: float, steps: Iterable[Step]) -> Basis:
        """A sequence of one object's states from `since` to `until`: a gap explains a mismatch only if states
        hidden where it lies could make the sequence the expected one."""
        return cls(
            watches=(watch,), objects=frozenset({uid}), since=Moment(since), until=Moment(until), steps=tuple(steps)
        )

    @classmethod
    def order(cls, first: Any, then: Any, watch: Watched) -> Basis:
        """Two sightings (harness/core/timeline.py Sighting) in the order claimed: open only where the stretch a gap
        gives one of them overlaps the other."""
        return cls(watches=(watch,), ordered=(first, then))

    @classmethod
    def of(cls, *parts: Basis) -> Basis:
        """An observation that rests on several bases (two watches, two objects' stretches)."""
        return cls(parts=tuple(parts))

    # --------------------------------------------------------------------------------- choosing

    def hiding(self) -> list[Gap]:
        """The gaps that could hide a state this observation rests on, each once, in order."""
        chosen: list[Gap] = []
        for part in self.parts:
            chosen.extend(part.hiding())
        if self.ordered is not None:
            first, then = self.ordered
            if not (first.t < then.not_before or then.t < first.not_before):  # the stretches overlap
                chosen.extend(g for g in (first.gap, then.gap) if g is not None)
        elif self.watches:
            chosen.extend(
                gap
                for watch in self.watches
                for gap in watch.gaps
                if began_before(gap, self.until)
                and gap.until > self.since.t
                and (self.objects is None or gap.changed & self.objects)
            )
        return list(dict.fromkeys(chosen))

    def doubt(self) -> Doubt:
        """The gaps this observation must be judged with, and what states hidden in them could do to it."""
        gaps = self.hiding()
        sequence = _slots(self, gaps) if self.steps and not self.parts else None
        return Doubt(tuple(dict.fromkeys(gap.why for gap in gaps)), sequence)

    def describe(self, rel: Callable[[float], float] = lambda t: t) -> str:
        """A short account of what the observation rests on (`rel`: the timeline's relative clock)."""
        if self.read:
            return f"read directly: {self.read}"
        if self.parts:
            return "; ".join(part.describe(rel) for part in self.parts)
        kinds = "/".join(sorted({watch.kind for watch in self.watches}))
        if self.ordered is not None:
            return f"the order of two {kinds} sightings"
        objects = "any object" if self.objects is None else f"{len(self.objects)} object(s)"
        return f"{kinds} watch, {objects}, {rel(self.since.t):+.2f}s to {rel(self.until.t):+.2f}s"


@dataclass(frozen=True)
class Slots:
    """Where states may be missing from a sequence: after which of its steps (-1: before the first), and whether
    the first step may not be the state at the stretch's start (a gap spans that start)."""

    steps: tuple[Step, ...]
    open_after: frozenset[int]
    first_optional: bool

    @property
    def any_open(self) -> bool:
        return bool(self.open_after) or self.first_optional

    def could_become(self, expected: list[Any]) -> bool:
        """Whether states hidden in the open slots could make the sequence (repeats collapsed) `expected`."""
        m = len(expected)
        positions = set(range(m + 1)) if -1 in self.open_after else {0}
        for index, step in enumerate(self.steps):
            moved = set()
            for j in positions:
                if j >= 1 and step.value == expected[j - 1]:
                    moved.add(j)
                elif j < m and step.value == expected[j]:
                    moved.add(j + 1)
            if index == 0 and self.first_optional:
                moved |= positions
            positions = moved
            if index in self.open_after and positions:
                positions = set(range(min(positions), m + 1))
        return m in positions


def _slots(basis: Basis, gaps: list[Gap]) -> Slots:
    """Which slots of the basis's sequence the chosen gaps open: each lies after the last step seen by its start."""
    steps = basis.steps
    open_after: set[int] = set()
    first_optional = False
    for gap in gaps:
        before = [i for i, step in enumerate(steps) if step.t <= gap.since]
        open_after.add(before[-1] if before else -1)
        if gap.since < basis.since.t:  # the state at the stretch's start may be one the gap hid
            first_optional = True
    return Slots(steps, frozenset(open_after), first_optional)


@dataclass(frozen=True)
class Doubt:
    """The gaps an observation is judged with (their reasons), and for a sequence where they lie.

    `legacy`: judged again from a record written before the harness chose gaps from what an observation rests on
    (its gaps were every gap after the action): a match passes, and a sequence's mismatch is explained when it is
    a subsequence of the expected one, as then.
    """

    gaps: tuple[str, ...] = ()
    sequence: Slots | None = field(default=None)
    legacy: bool = False

    def could_differ(self) -> bool:
        """Whether hidden states could make the observation other than it was seen."""
        if not self.gaps or self.legacy:
            return False
        return self.sequence is None or self.sequence.any_open

    def could_become(self, wanted: Any, observed: Any = None) -> bool:
        """Whether hidden states could make the observation `wanted` (a sequence: only where its gaps lie)."""
        if not self.gaps:
            return False
        if self.legacy and isinstance(wanted, list) and isinstance(observed, list):
            remaining = iter(wanted)
            return all(any(state == w for w in remaining) for state in observed)
        if self.sequence is not None and isinstance(wanted, list):
            return self.sequence.could_become(wanted)
        return True

    def record(self) -> dict[str, Any]:
        """What a verdict's record keeps of it, so that a report can judge the observation again (`from_record`)."""
        if not self.gaps:
            return {}
        slots = None  # not a sequence (the key says the gaps were chosen from what the observation rests on)
        if self.sequence is not None:
            slots = {
                "steps": [step.value for step in self.sequence.steps],
                "open_after": sorted(self.sequence.open_after),
                "first_optional": self.sequence.first_optional,
            }
        return {"watch_gaps": list(self.gaps), "gap_slots": slots}

    @classmethod
    def from_record(cls, detail: dict[str, Any] | None) -> Doubt:
        """The doubt a verdict's record kept (`record`); a record without `gap_slots` but with gaps is a legacy one."""
        detail = detail or {}
        gaps = tuple(detail.get("watch_gaps") or ())
        slots = detail.get("gap_slots")
        if slots is None:
            return cls(gaps, None, legacy="gap_slots" not in detail)
        steps = tuple(Step(float(i), value) for i, value in enumerate(slots["steps"]))
        return cls(gaps, Slots(steps, frozenset(slots["open_after"]), bool(slots["first_optional"])))
