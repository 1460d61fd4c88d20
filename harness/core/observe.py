"""Observation: bounded, event-driven waits over a watch, and what it saw (by uid), put on the timeline."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, Self

from harness.core.basis import Basis, Gap, Moment, Step
from harness.core.timeline import Sighting, Timeline, V
from harness.core.transport import ViewMemo, WatchEvent, WatchHandle
from harness.core.views import (
    EndpointsView,
    JobView,
    PodView,
    StatefulSetView,
    daemonset_view,
    deployment_view,
)

JsonDict = dict[str, Any]


class ProbeTimeout(AssertionError):
    """A bounded wait ran out: says what was awaited, what was last seen and the timeline."""


class ProbeImpossible(AssertionError):
    """What the probe waits for can no longer happen (the object is gone, the image cannot be pulled ...)."""


Condition = Callable[["Observer[V]"], bool]
Veto = Callable[["Observer[V]"], "str | None"]

VIEWS: dict[str, Callable[[JsonDict], Any]] = {
    "Pod": PodView.from_object,
    "Job": JobView.from_object,
    "Deployment": deployment_view,
    "EndpointSlice": EndpointsView.from_object,
    "Endpoints": EndpointsView.from_object,
    "StatefulSet": StatefulSetView.from_object,
    "DaemonSet": daemonset_view,
}


def key_of(view: Any) -> str:
    """An object's identity: its uid (a name can be taken again by a new object: a StatefulSet's pod); the name
    only for a view without one (a test's hand-written object)."""
    return str(getattr(view, "uid", "") or f"name:{view.name}")


class Observer(Generic[V]):
    """Consumes a watch: the latest state of every object seen, every state in order, and the timeline.

    Objects are known by uid everywhere (the second verdict rule, kept here): `states` and `deleted` are by uid, a
    re-list marks an object gone when its uid is missing (a name that came back with a new uid is the old object
    gone and a new one added, both dated to the gap), and sightings are of uids. `focus` names the object a
    single-object watch is about: `latest` and `gone` refer to the object that holds that name now.
    """

    def __init__(
        self,
        handle: WatchHandle,
        timeline: Timeline,
        now: Callable[[], float],
        kind: str,
        initial: Iterable[JsonDict] = (),
        focus: str | None = None,
        views: ViewMemo | None = None,
    ) -> None:
        """`views`: the views made of objects already (a replay's), shared; None: each object's view made anew."""
        self._handle = handle
        self._timeline = timeline
        self._now = now
        self.kind = kind
        self.focus = focus
        self._make_view: Callable[[JsonDict], V] = VIEWS[kind]
        self._views = views
        self.states: dict[str, V] = {}  # by uid: each object's latest state, in the order first seen
        self.deleted: set[str] = set()  # uids of the objects seen deleted (DELETED, or missing from a re-list)
        self.listed: set[str] = set()  # uids of the objects that existed when the watch began (its initial list)
        self._holders: dict[str, str] = {}  # name -> uid of the object last seen with it
        self.gaps: list[Gap] = []  # every stretch this watch may have missed, in order
        self.history: list[tuple[float, V]] = []
        # Every change as it arrived: (when, ADDED/MODIFIED/DELETED/RELISTED/GONE, the object as then seen).
        self.changes: list[tuple[float, str, V]] = []
        self._last_t = now()  # the last event delivered (the start of the next gap, if one comes)
        self._last_version: int | None = None
        self._first: dict[str, Sighting[V]] = {}  # first_sightings() as far as the changes were read
        self._first_read = 0
        for obj in initial:
            self._record(self._last_t, view := self._view(obj))
            self.listed.add(key_of(view))
            self._last_version = later_version(self._last_version, obj)

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------------------------- state

    @property
    def latest(self) -> V:
        """The focus: the object that holds the focused name now, as last seen."""
        view = self.named(self.focus) if self.focus is not None else None
        if view is None:
            raise KeyError(f"this observer of {self.kind}s has no state of {self.focus!r}")
        return view

    @property
    def gone(self) -> bool:
        """Whether the object holding the focused name was deleted (a new one may take the name later)."""
        uid = self._holders.get(self.focus or "")
        return uid is not None and uid in self.deleted

    def named(self, name: str) -> V | None:
        """The object that holds `name` now (the one last seen with it), as last seen; None if none was seen."""
        uid = self._holders.get(name)
        return None if uid is None else self.states[uid]

    def objects(self) -> list[V]:
        """Every object seen (by uid), as last seen, in the order first seen."""
        return list(self.states.values())

    def names(self) -> list[str]:
        """The names of the objects seen, in the order first seen (a name taken again is listed once)."""
        return list(dict.fromkeys(view.name for view in self.states.values()))

    def is_deleted(self, view: Any) -> bool:
        """Whether this object (by uid, not name) was seen deleted."""
        return key_of(view) in self.deleted

    def source(self, name: str) -> str:
        return f"{self.kind.lower()}/{name}"

    def _view(self, obj: JsonDict) -> V:
        """The view of an object as it was observed."""
        return self._seen(obj)[0] if self._views is not None else self._make_view(obj)

    def _seen(self, obj: JsonDict) -> tuple[V, JsonDict]:
        """The view of an object as it was observed and what the timeline keeps of it, made once per object in a
        replay (harness/core/transport.py ViewMemo) and only read after: the tests that replay a recording again
        and again took 2 us an event to make the timeline's fields anew."""
        if self._views is None:
            view = self._make_view(obj)
            return view, view.timeline_fields()
        made = self._views.get((self.kind, id(obj)))
        if made is not None and made[0] is obj:
            return made[1], made[2]
        view = self._make_view(obj)
        fields = view.timeline_fields()
        self._views[self.kind, id(obj)] = (obj, view, fields)
        return view, fields

    def _record(self, t: float, view: V) -> str:
        """Take in a state of an object; its uid (key_of)."""
        uid = key_of(view)
        self.states[uid] = view
        self._holders[view.name] = uid
        self.history.append((t, view))
        return uid

    def _observed(self, t: float, what: str, view: V, detail: JsonDict, gap: str | None) -> None:
        uid = getattr(view, "uid", "") or None
        self._timeline.observed(t, self.source(view.name), what, detail, gap, uid)

    def _apply(self, event: WatchEvent) -> None:
        t, type_, obj = event.t, event.type, event.object
        if type_ == "ERROR":
            self._timeline.observed(t, f"{self.kind.lower()}s", type_, {}, event.gap)
            raise ProbeImpossible(f"the watch on {self.kind}s failed: {event.gap}\n{self._state_text()}")
        assert obj is not None
        if type_ != "RELISTED":
            if event.gap:
                self.gaps.append(self._gap(event, [obj]))
            self._last_t = t
            self._last_version = later_version(self._last_version, obj)
            view, fields = self._seen(obj)
            uid = self._record(t, view)
            self.changes.append((t, type_, view))
            if type_ == "DELETED":
                self.deleted.add(uid)
            self._observed(t, type_, view, fields, event.gap)
            return
        # after a gap: what exists now; a uid missing was deleted meanwhile
        items = obj.get("items", [])
        if event.gap:
            self.gaps.append(self._gap(event, items))
        self._last_t = t
        for item in items:
            self._last_version = later_version(self._last_version, item)
        present = {key_of(seen[0]): seen for seen in map(self._seen, items)}
        for uid in [uid for uid in self.states if uid not in present and uid not in self.deleted]:
            self.deleted.add(uid)
            self.changes.append((t, "GONE", self.states[uid]))
            self._observed(t, "GONE", self.states[uid], {}, event.gap)
        for uid, (view, fields) in present.items():
            self.deleted.discard(uid)
            self._record(t, view)
            self.changes.append((t, type_, view))
            self._observed(t, type_, view, fields, event.gap)

    def _gap(self, event: WatchEvent, items: list[JsonDict]) -> Gap:
        """The gap `event` closes: from the last event delivered before it, with the uids its re-list shows changed
        (new, missing, or at another resourceVersion)."""
        views = {key_of(view): view for view in map(self._view, items)}
        known = {uid: view for uid, view in self.states.items() if uid not in self.deleted}
        changed = {uid for uid, view in views.items() if not _same_version(known.get(uid), view)}
        if event.type == "RELISTED":
            changed |= set(known) - set(views)
        return Gap(self._last_t, self._last_version, event.t, str(event.gap), frozenset(changed))

    # ----------------------------------------------------------------------------------- waits

    def wait_for(self, description: str, done: Condition[V], within: float, veto: Veto[V] | None = None) -> None:
        """Consume events until `done` holds; fail at once when `veto` names a reason, or after `within` s."""
        if not self._wait(description, done, within, veto):
            raise ProbeTimeout(f"timed out after {within:.0f}s waiting for {description}\n{self._state_text()}")

    def await_outcome(
        self, description: str, done: Condition[V], within: float, veto: Veto[V] | None = None
    ) -> str | None:
        """Wait as `wait_for` does, for an outcome a claim is about: if it does not come in time, that is the
        observation, not an error. Returns None when `done` held, else what was awaited and what was last
        seen (also put on the timeline), for the claims to carry as evidence. A veto still raises.
        """
        if self._wait(description, done, within, veto):
            return None
        said = (
            f"waited {within:.0f}s for {description}, which did not happen; {self._last_seen().replace(chr(10), '; ')}"
        )
        self._timeline.observed(self._now(), f"{self.kind.lower()}s", "TIMEOUT", {"awaited": description})
        return said

    def _wait(self, description: str, done: Condition[V], within: float, veto: Veto[V] | None) -> bool:
        """Consume events until `done` holds (True) or `within` s pass (False); raise when `veto` names a reason."""
        deadline = self._now() + within
        while True:
            if veto is not None and (reason := veto(self)):
                raise ProbeImpossible(f"gave up waiting for {description}: {reason}\n{self._state_text()}")
            if done(self):
                return True
            remaining = deadline - self._now()
            if remaining <= 0:
                return False
            event = self._handle.next_event(remaining)
            if event is not None:
                self._apply(event)

    def observe_until(self, done: Condition[V], within: float) -> bool:
        """Consume events until `done` holds (True) or `within` s pass (False): for outcomes that may not come."""
        return self._wait("an outcome that may not come", done, within, veto=None)

    def observe_for(self, seconds: float) -> None:
        """Keep recording every event for a window (to show that something did NOT happen)."""
        deadline = self._now() + seconds
        while not self.gone and (remaining := deadline - self._now()) > 0:
            event = self._handle.next_event(remaining)
            if event is not None:
                self._apply(event)

    def catch_up(self) -> None:
        """Take in every event that has already arrived (e.g. on this watch while waiting on another)."""
        while (event := self._handle.next_event(0.0)) is not None:
            self._apply(event)

    # -------------------------------------------------------------------------------- readings

    def first_sighting(self, holds: Callable[[str, V], bool]) -> Sighting[V] | None:
        """The first change (type, state) for which `holds` is true, with the time a gap leaves it.

        Every kind of change counts: an object known only from a re-list (it came while the watch was down)
        is seen there, with the gap's stretch as its time.
        """
        for t, type_, view in self.changes:
            if holds(type_, view):
                gap = next((g for g in self.gaps if g.until == t), None) if type_ in ("RELISTED", "GONE") else None
                return Sighting(t, gap.since if gap else t, type_, view, gap)
        return None

    def first_sightings(self) -> list[Sighting[V]]:
        """Each object's (by uid) first sighting, in the order seen, those listed when the watch began left out
        (harness/core/identity.py). Taken in as the changes come, never read twice: the identity rule is asked at
        each event of a wait, and reading every change again each time made its cost grow with the square of them."""
        found = self._first
        for t, type_, view in self.changes[self._first_read :]:
            uid = key_of(view)
            if uid in found or uid in self.listed or type_ == "GONE":
                continue
            # a re-list's gap is noted before its changes (_apply), so it is there to be found
            gap = next((g for g in self.gaps if g.until == t), None) if type_ == "RELISTED" else None
            found[uid] = Sighting(t, gap.since if gap else t, type_, view, gap)
        self._first_read = len(self.changes)
        return list(found.values())

    def first_state(self, holds: Callable[[V], bool]) -> V | None:
        """The first state seen for which `holds` is true: an event's instant is read where it first showed."""
        return next((view for _, view in self.history if holds(view)), None)

    def first_seen(self, view: Any, holds: Callable[[V], bool]) -> float | None:
        """When a state of this object (by uid) for which `holds` is true was first seen (transport clock)."""
        uid = key_of(view)
        return next((t for t, seen in self.history if key_of(seen) == uid and holds(seen)), None)

    def sequence(self, view: Any, since: float, value: Callable[[V], Any]) -> tuple[list[Any], Basis]:
        """The values an object (by uid) took from `since` on (the value at `since`, then each change; repeats
        collapsed), with what that sequence rests on: each state and when it was seen, so that a gap explains a
        mismatch only where it lies."""
        uid = key_of(view)
        steps: list[Step] = []
        for t, seen in self.history:
            if key_of(seen) != uid:
                continue
            if t <= since:
                steps = [Step(t, value(seen))]
            else:
                steps.append(Step(t, value(seen)))
        values = [step.value for step in steps]
        collapsed = [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]]
        return collapsed, Basis.sequence(self, uid, since, self._now(), steps)

    # ------------------------------------------------------------------------- what it rests on

    def during(self, since: float | Moment, until: float | Moment | None = None, objects: Any = None) -> Basis:
        """An observation any state of `objects` (views or uids; None: any object, as for something that did or
        did not appear) from `since` to `until` (default: now) may decide."""
        return Basis.during(self, since, self._now() if until is None else until, _uids(objects))

    def reading(self, objects: Any = None, at: float | None = None) -> Basis:
        """What the watch showed of `objects` at one instant (default: now): only a gap still open then hides it."""
        t = self._now() if at is None else at
        return Basis.during(self, t, t, _uids(objects))

    def final_state(self, *views: Any) -> Basis:
        """The state each object was left in: as last seen, or before it went. Only a gap after its last state
        seen that re-listed it changed (its deletion learned from a re-list) can have hidden its end."""
        parts = []
        for uid in _uids(views) or ():
            last = max((t for t, seen in self.history if key_of(seen) == uid), default=0.0)
            parts.append(Basis.during(self, last, self._now(), {uid}))
        return parts[0] if len(parts) == 1 else Basis.of(*parts)

    def sighted(self, sighting: Sighting[V] | None, since: float, objects: Any = None) -> Basis:
        """An event's first sighting: the instant it arrived, or the whole gap when only a re-list showed it; when
        it was never seen, any state of `objects` (None: any object) from `since` on could have hidden it."""
        if sighting is None:
            return self.during(since, None, objects)
        return Basis.during(self, sighting.not_before, sighting.t, {key_of(sighting.view)})

    # ---------------------------------------------------------------------------------- messages

    def _last_seen(self) -> str:
        """One line per object in view: 'last seen pod/x: phase=Running ...' (or gone)."""
        focused = self._holders.get(self.focus) if self.focus else None
        shown = [focused] if focused else list(self.states)
        taken = [view.name for view in self.states.values()]
        lines = []
        for uid in shown:
            view = self.states[uid]
            label = self.source(view.name) + (f" (uid {uid[:8]})" if taken.count(view.name) > 1 else "")
            lines.append(f"last seen {label}: {'gone' if uid in self.deleted else view.summary()}")
        return "\n".join(lines) or f"no {self.kind} seen yet"

    def _state_text(self) -> str:
        return f"{self._last_seen()}\ntimeline:\n{self._timeline.render(last=25)}"


def _uids(objects: Any) -> set[str] | None:
    """Uids of views, or uids as given; None stays None (any object)."""
    if objects is None:
        return None
    if isinstance(objects, str) or not isinstance(objects, Iterable):
        objects = [objects]
    return {item if isinstance(item, str) else key_of(item) for item in objects}


def _same_version(before: Any, after: Any) -> bool:
    """Whether two states of an object are at one known resourceVersion (unknown: assume it changed)."""
    version = str(getattr(before, "resource_version", "") or "")
    return bool(version) and version == str(getattr(after, "resource_version", "") or "")


def later_version(current: int | None, obj: JsonDict) -> int | None:
    """The larger of `current` and the object's resourceVersion (when that is an integer)."""
    version = str((obj.get("metadata") or {}).get("resourceVersion", ""))
    if not version.isdigit():
        return current
    value = int(version)  # (once, and no max(): this is read at every event)
    return value if current is None or value > current else current
