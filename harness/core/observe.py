"""Observation: a timeline of everything a probe saw, and bounded, event-driven waits over watches."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic, NamedTuple, Self, TypeVar

from harness.core.basis import Basis, Gap, Moment, Step
from harness.core.transport import WatchEvent, WatchHandle
from harness.core.views import (
    CountersView,
    EndpointsView,
    JobView,
    PodView,
    StatefulSetView,
    daemonset_view,
    deployment_view,
    parse_time,
)

JsonDict = dict[str, Any]
V = TypeVar("V", PodView, JobView, CountersView, EndpointsView, StatefulSetView)


@dataclass
class TimelineEntry:
    t: float  # seconds on the transport's clock
    source: str  # "pod/<name>", "probe", "node/<name>"
    what: str  # ADDED, MODIFIED, DELETED, RELISTED, or an action such as "delete"
    detail: JsonDict = field(default_factory=dict)
    gap: str | None = None
    uid: str | None = None  # the observed object's uid: a name can be taken again by a new object


@dataclass
class Timeline:
    """Everything the probe did and saw, in order; times are shown relative to the anchor action."""

    entries: list[TimelineEntry] = field(default_factory=list)
    anchor_t: float | None = None
    anchor_label: str | None = None

    def action(self, t: float, label: str, detail: JsonDict | None = None, anchor: bool = False) -> None:
        self.entries.append(TimelineEntry(t, "probe", label, detail or {}))
        if anchor:
            self.anchor_t, self.anchor_label = t, label

    def observed(
        self, t: float, source: str, what: str, detail: JsonDict, gap: str | None = None, uid: str | None = None
    ) -> None:
        self.entries.append(TimelineEntry(t, source, what, detail, gap, uid))

    def rel(self, t: float) -> float:
        return t - (self.anchor_t if self.anchor_t is not None else 0.0)

    @property
    def gaps(self) -> list[str]:
        return [e.gap for e in self.entries if e.gap]

    def in_order(self) -> list[TimelineEntry]:
        """Entries by time: events of several watches are taken in as each is read, not as they arrived."""
        return sorted(self.entries, key=lambda e: e.t)

    def to_json(self) -> JsonDict:
        return {
            "anchor": self.anchor_label,
            "entries": [
                {
                    "t": round(self.rel(e.t), 3),
                    "source": e.source,
                    "what": e.what,
                    **({"uid": e.uid} if e.uid else {}),
                    **({"gap": e.gap} if e.gap else {}),
                    "detail": e.detail,
                }
                for e in self.in_order()
            ],
        }

    def render(self, last: int | None = None) -> str:
        """Human-readable lines; an observed state shows only what changed since the previous state of the same object
        (by uid), and an object that takes a name another had says so (`new uid ...`)."""
        lines: list[str] = []
        previous: dict[tuple[str, str | None], JsonDict] = {}
        holder: dict[str, str] = {}  # source -> the uid last shown under it
        for entry in self.in_order():
            shown = entry.detail
            new_uid = ""
            if entry.source != "probe":
                before = previous.get((entry.source, entry.uid), {})
                shown = {k: v for k, v in entry.detail.items() if before.get(k) != v}
                previous[(entry.source, entry.uid)] = entry.detail
                if entry.uid:
                    if holder.get(entry.source, entry.uid) != entry.uid:
                        new_uid = f"(new uid {entry.uid[:8]}) "
                    holder[entry.source] = entry.uid
            text = new_uid + " ".join(f"{k}={_compact(v)}" for k, v in shown.items() if v not in (None, {}, []))
            gap = f" [gap: {entry.gap}]" if entry.gap else ""
            lines.append(f"{self.rel(entry.t):+8.2f}s {entry.source:<24} {entry.what:<10}{gap} {text}".rstrip())
        if last is not None and len(lines) > last:
            lines = [f"... {len(lines) - last} earlier entries", *lines[-last:]]
        return "\n".join(lines)


def _compact(value: Any) -> str:
    """Timeline values on one short line: containers as 'main:terminated(137,Error,finishedAt)'."""
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, list) and all(isinstance(v, dict) and "state" in v for v in value):
        parts = []
        for c in value:
            detail = [str(c[k]) for k in ("exitCode", "reason", "finishedAt") if c.get(k) is not None]
            parts.append(f"{c.get('name')}:{c['state']}" + (f"({','.join(detail)})" if detail else ""))
        return ";".join(parts)
    return str(value)


@dataclass(frozen=True)
class Sighting(Generic[V]):
    """The first time a watch showed something, and since when it may already have been so.

    Seen through the watch, it happened when it arrived (`not_before` == `t`); seen only in the re-list after
    a gap, it happened somewhere in the gap: `not_before` is the gap's start and `gap` is that gap.
    """

    t: float
    not_before: float
    type: str
    view: V
    gap: Gap | None = None

    @property
    def why(self) -> str | None:
        """Why its instant is not known exactly (the gap's reason), or None when it was seen as it happened."""
        return self.gap.why if self.gap is not None else None


def order_of(first: Sighting[Any], then: Sighting[Any]) -> bool:
    """Whether `first` came before `then`, as far as the watch shows: for certain unless the stretch a gap gives
    one of them overlaps the other (`Basis.order` says which gaps leave it open), else by arrival."""
    if first.t < then.not_before:
        return True
    if then.t < first.not_before:
        return False
    return first.t < then.t


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
    ) -> None:
        self._handle = handle
        self._timeline = timeline
        self._now = now
        self.kind = kind
        self.focus = focus
        self._view: Callable[[JsonDict], V] = VIEWS[kind]
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
        for obj in initial:
            self._record(self._last_t, view := self._view(obj))
            self.listed.add(key_of(view))
            self._last_version = _later_version(self._last_version, obj)

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

    def _record(self, t: float, view: V) -> None:
        uid = key_of(view)
        self.states[uid] = view
        self._holders[view.name] = uid
        self.history.append((t, view))

    def _observed(self, t: float, what: str, view: V, detail: JsonDict, gap: str | None) -> None:
        uid = getattr(view, "uid", "") or None
        self._timeline.observed(t, self.source(view.name), what, detail, gap, uid)

    def _apply(self, event: WatchEvent) -> None:
        if event.type == "ERROR":
            self._timeline.observed(event.t, f"{self.kind.lower()}s", event.type, {}, event.gap)
            raise ProbeImpossible(f"the watch on {self.kind}s failed: {event.gap}\n{self._state_text()}")
        assert event.object is not None
        items = event.object.get("items", []) if event.type == "RELISTED" else [event.object]
        if event.gap:
            self.gaps.append(self._gap(event, items))
        self._last_t = event.t
        for item in items:
            self._last_version = _later_version(self._last_version, item)
        if event.type == "RELISTED":  # after a gap: what exists now; a uid missing was deleted meanwhile
            present = {key_of(view): view for view in map(self._view, items)}
            for uid in [uid for uid in self.states if uid not in present and uid not in self.deleted]:
                self.deleted.add(uid)
                self.changes.append((event.t, "GONE", self.states[uid]))
                self._observed(event.t, "GONE", self.states[uid], {}, event.gap)
            for uid, view in present.items():
                self.deleted.discard(uid)
                self._record(event.t, view)
                self.changes.append((event.t, event.type, view))
                self._observed(event.t, event.type, view, view.timeline_fields(), event.gap)
            return
        view = self._view(event.object)
        self._record(event.t, view)
        self.changes.append((event.t, event.type, view))
        if event.type == "DELETED":
            self.deleted.add(key_of(view))
        self._observed(event.t, event.type, view, view.timeline_fields(), event.gap)

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


def _later_version(current: int | None, obj: JsonDict) -> int | None:
    """The larger of `current` and the object's resourceVersion (when that is an integer)."""
    version = str((obj.get("metadata") or {}).get("resourceVersion", ""))
    if not version.isdigit():
        return current
    return int(version) if current is None else max(current, int(version))


class PodObserver(Observer[PodView]):
    """An observer of Pods: one pod (focus) or every pod of the namespace."""

    def deletion_sighting(self, pod: PodView) -> Sighting[PodView] | None:
        """The first state of the pod (by uid) with a deletionTimestamp, with when it was seen."""
        return self.first_sighting(lambda _, view: view.uid == pod.uid and view.deletion_timestamp is not None)

    def as_deleted(self, pod: PodView) -> PodView | None:
        """The pod (by uid) as its deletion first showed it: the first state with a deletionTimestamp.

        The API server sets deletionTimestamp = time of the delete + grace. Later deletes rewrite it: once the
        containers stopped, the kubelet deletes the pod again with grace 0, and the server moves
        deletionTimestamp and deletionGracePeriodSeconds (staging/src/k8s.io/apiserver/pkg/registry/rest/
        delete.go BeforeDelete). Read from a later state, the end of the grace moved 5 s early (live, 1.27.3).
        A first state seen only in a re-list may already be a rewritten one: `deletion_sighting` says so.
        """
        sighting = self.deletion_sighting(pod)
        return None if sighting is None else sighting.view

    def first_condition(self, pod: PodView, type_: str) -> JsonDict | None:
        """A condition the pod (by uid) was given, as first seen (status, reason, message); None if never.

        By uid, because a StatefulSet's replacement takes the same name; first seen, because a later state
        (or the pod's deletion) may drop what the writer of the condition said.
        """
        for _, view in self.history:
            condition = view.condition(type_) if view.uid == pod.uid else None
            if condition is not None:
                return {k: condition.get(k) for k in ("status", "reason", "message")}
        return None

    def condition_sighting(self, pod: PodView, type_: str) -> Sighting[PodView] | None:
        """When the pod (by uid) was first seen with the condition."""
        return self.first_sighting(lambda _, view: view.uid == pod.uid and view.condition(type_) is not None)

    def phases(self, pod: PodView, since: float) -> tuple[list[str | None], Basis]:
        """The phases the pod (by uid) was in from `since` on: the phase then, then each change (repeats
        collapsed), with what they rest on (`Observer.sequence`)."""
        return self.sequence(pod, since, lambda view: view.phase)


def delete_requested_at(deleted: PodView) -> datetime | None:
    """The delete's instant on the server's clock (deletionTimestamp - deletionGracePeriodSeconds), from the
    state `PodObserver.as_deleted` gives: in a later state both fields may have been rewritten.
    """
    grace_ends = parse_time(deleted.deletion_timestamp)
    if grace_ends is None:
        return None
    return grace_ends - timedelta(seconds=deleted.deletion_grace_period_seconds or 0)


def conditions_before_failed(jobs: Observer[JobView]) -> tuple[list[str], Basis]:
    """The condition types that were True in some state of the Job (the focus) seen before its Failed condition
    appeared, with what that rests on: every state of the Job from the start until Failed was seen (now, if never).
    """
    job = jobs.latest
    seen: list[str] = []
    failed_at: float | None = None
    for t, view in jobs.history:
        if key_of(view) != key_of(job):
            continue
        if view.condition("Failed") is not None:
            failed_at = t
            break
        seen.extend(c.type for c in view.conditions if c.status == "True" and c.type not in seen)
    return seen, jobs.during(0.0, failed_at, job)


# Waiting reasons after which a container will not start by itself (kubelet/images and CRI reasons).
UNSTARTABLE_REASONS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CreateContainerConfigError",
        "CreateContainerError",
        "CrashLoopBackOff",
        "RunContainerError",
    }
)


def cannot_start(observer: Observer[PodView]) -> str | None:
    """Veto for waits on a starting pod: gone, terminal, or a container stuck in a waiting reason."""
    pod = observer.latest
    if observer.gone:
        return "the pod was deleted"
    if pod.phase in ("Failed", "Succeeded"):
        return f"the pod reached phase {pod.phase} before it was running"
    stuck = [c for c in pod.containers if c.state == "waiting" and c.reason in UNSTARTABLE_REASONS]
    if stuck:
        return "; ".join(f"container {c.name} is waiting: {c.reason}" for c in stuck)
    return None


class Change(NamedTuple):
    """One change in the stream of several watches (in_server_order)."""

    t: float  # when it arrived (transport clock)
    kind: str  # the watched kind: Pod, StatefulSet, ...
    type: str  # ADDED / MODIFIED / DELETED, or GONE (missing from a re-list)
    view: Any  # the object as changed (PodView, StatefulSetView, ...)


def in_server_order(*observers: Observer[Any]) -> list[Change]:
    """Every change seen by several watches, as one stream in the order the API server made them.

    Each watch delivers its own kind in order, but two watches interleave by arrival. The server's order is
    the resourceVersion: in kind (one etcd) it is the etcd revision, an integer that grows with every write.
    The API asks clients to treat it as opaque; the suite uses it only to order what it already saw. A GONE (an
    object a re-list no longer showed) has no version of its own: it happened in its gap, and is placed just after
    the last change the watch delivered before that gap (the earliest it can have been: a pod counted gone too
    early can hide a violation, never make one). Arrival order only when some change has no integer version
    (another storage).
    """
    keyed: list[tuple[tuple[int, int, float], Change]] = []
    for o in observers:
        gap_start = {gap.until: gap.since_version for gap in o.gaps}
        for t, type_, view in o.changes:
            version = gap_start.get(t) if type_ == "GONE" else _later_version(None, view.raw)
            keyed.append(((-1 if version is None else version, type_ == "GONE", t), Change(t, o.kind, type_, view)))
    if any(key[0] < 0 for key, _ in keyed):
        return sorted((change for _, change in keyed), key=lambda change: change.t)
    return [change for _, change in sorted(keyed, key=lambda item: item[0])]
