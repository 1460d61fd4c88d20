"""Observation: a timeline of everything a probe saw, and bounded, event-driven waits over watches."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic, NamedTuple, Self, TypeVar

from harness.transport import WatchEvent, WatchHandle
from harness.views import (
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

    def observed(self, t: float, source: str, what: str, detail: JsonDict, gap: str | None = None) -> None:
        self.entries.append(TimelineEntry(t, source, what, detail, gap))

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
                    **({"gap": e.gap} if e.gap else {}),
                    "detail": e.detail,
                }
                for e in self.in_order()
            ],
        }

    def render(self, last: int | None = None) -> str:
        """Human-readable lines; an observed state shows only what changed since the previous one."""
        lines: list[str] = []
        previous: dict[str, JsonDict] = {}
        for entry in self.in_order():
            shown = entry.detail
            if entry.source != "probe":
                before = previous.get(entry.source, {})
                shown = {k: v for k, v in entry.detail.items() if before.get(k) != v}
                previous[entry.source] = entry.detail
            text = " ".join(f"{k}={_compact(v)}" for k, v in shown.items() if v not in (None, {}, []))
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


class Gap(NamedTuple):
    """A stretch a watch may have missed: after the last event it delivered, up to the re-list that ended it.

    A gap hides states; it does not add or reorder them. What it may have hidden happened after `since`
    (when the last event before it arrived; on the server, after `since_version`) and before `until`.
    """

    since: float  # arrival of the last event delivered before the gap (or when the observer started)
    since_version: int | None  # that event's resourceVersion, when an integer (None: not known)
    until: float  # arrival of the re-list that closed the gap
    why: str
    changed: frozenset[str]  # objects the re-list showed changed: new, missing, or at another resourceVersion


@dataclass(frozen=True)
class Sighting(Generic[V]):
    """The first time a watch showed something, and since when it may already have been so.

    Seen through the watch, it happened when it arrived (`not_before` == `t`); seen only in the re-list after
    a gap, it happened somewhere in the gap: `not_before` is the gap's start and `gap` says why.
    """

    t: float
    not_before: float
    type: str
    view: V
    gap: str | None = None


def order_of(first: Sighting[Any], then: Sighting[Any]) -> tuple[bool, list[str]]:
    """Whether `first` came before `then`, and the gaps that leave it open (empty: the order is certain).

    Two sightings are ordered for certain unless the stretch a gap gives one of them overlaps the other.
    """
    if first.t < then.not_before:
        return True, []
    if then.t < first.not_before:
        return False, []
    return first.t < then.t, list(dict.fromkeys(why for why in (first.gap, then.gap) if why))


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


class Observer(Generic[V]):
    """Consumes a watch: the latest state of every object seen, every state in order, and the timeline.

    `focus` names the object a single-object watch is about; `latest` and `gone` refer to it.
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
        self.states: dict[str, V] = {}
        self.deleted: set[str] = set()
        self.gaps: list[Gap] = []  # every stretch this watch may have missed, in order
        self.history: list[tuple[float, V]] = []
        # Every change as it arrived: (when, ADDED/MODIFIED/DELETED/RELISTED/GONE, the object as then seen).
        self.changes: list[tuple[float, str, V]] = []
        self._last_t = now()  # the last event delivered (the start of the next gap, if one comes)
        self._last_version: int | None = None
        for obj in initial:
            self._record(self._last_t, self._view(obj))
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
        if self.focus is None or self.focus not in self.states:
            raise KeyError(f"this observer of {self.kind}s has no state of {self.focus!r}")
        return self.states[self.focus]

    @property
    def gone(self) -> bool:
        return self.focus in self.deleted

    def names(self) -> list[str]:
        """Every object seen, in the order it was first seen."""
        return list(self.states)

    def source(self, name: str) -> str:
        return f"{self.kind.lower()}/{name}"

    def _record(self, t: float, view: V) -> None:
        self.states[view.name] = view
        self.history.append((t, view))

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
        if event.type == "RELISTED":  # after a gap: what exists now; what is missing was deleted meanwhile
            present = {self._view(item).name: self._view(item) for item in items}
            for name in set(self.states) - set(present) - self.deleted:
                self.deleted.add(name)
                self.changes.append((event.t, "GONE", self.states[name]))
                self._timeline.observed(event.t, self.source(name), "GONE", {}, event.gap)
            for view in present.values():
                self.deleted.discard(view.name)
                self._record(event.t, view)
                self.changes.append((event.t, event.type, view))
                self._timeline.observed(event.t, self.source(view.name), event.type, view.timeline_fields(), event.gap)
            return
        view = self._view(event.object)
        self._record(event.t, view)
        self.changes.append((event.t, event.type, view))
        if event.type == "DELETED":
            self.deleted.add(view.name)
        else:  # a name can come back (a StatefulSet recreates its pod under the same name)
            self.deleted.discard(view.name)
        self._timeline.observed(event.t, self.source(view.name), event.type, view.timeline_fields(), event.gap)

    def _gap(self, event: WatchEvent, items: list[JsonDict]) -> Gap:
        """The gap `event` closes: from the last event delivered before it, with what its re-list shows changed."""
        views = [self._view(item) for item in items]
        known = {name: view for name, view in self.states.items() if name not in self.deleted}
        changed = {view.name for view in views if not _same_version(known.get(view.name), view)}
        if event.type == "RELISTED":
            changed |= set(known) - {view.name for view in views}
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

    def gaps_since(self, t: float) -> list[str]:
        """Why events may be missing after time t (watch expired, connection lost)."""
        return [gap.why for gap in self.gaps if gap.until >= t]

    def gaps_between(self, start: float, end: float) -> list[str]:
        """The gaps whose hidden stretch overlaps [start, end]: only they can hide a state of that stretch."""
        return [gap.why for gap in self.gaps if gap.since < end and gap.until >= start]

    def gaps_hiding_before(self, version: str, seen_at: float, names: Iterable[str]) -> list[str]:
        """The gaps that may have hidden a change to one of `names` made before the change at `version`
        (seen at `seen_at`, possibly on another watch) and learned of only after it.

        Only a gap that re-listed one of `names` changed (gone, new or at another resourceVersion) hid a
        change to it; it was made before `version` only if the gap began before that (by resourceVersion when
        both are integers, else by arrival), and learned of later only if the re-list came after `seen_at`.
        """
        wanted = set(names)
        before = int(version) if version.isdigit() else None
        hiding = []
        for gap in self.gaps:
            began_before = (
                gap.since_version < before
                if gap.since_version is not None and before is not None
                else gap.since < seen_at
            )
            if gap.changed & wanted and began_before and gap.until > seen_at:
                hiding.append(gap.why)
        return hiding

    def first_sighting(self, holds: Callable[[str, V], bool]) -> Sighting[V] | None:
        """The first change (type, state) for which `holds` is true, with the time a gap leaves it.

        Every kind of change counts: an object known only from a re-list (it came while the watch was down)
        is seen there, with the gap's stretch as its time.
        """
        for t, type_, view in self.changes:
            if holds(type_, view):
                gap = next((g for g in self.gaps if g.until == t), None) if type_ in ("RELISTED", "GONE") else None
                return Sighting(t, gap.since if gap else t, type_, view, gap.why if gap else None)
        return None

    def catch_up(self) -> None:
        """Take in every event that has already arrived (e.g. on this watch while waiting on another)."""
        while (event := self._handle.next_event(0.0)) is not None:
            self._apply(event)

    def first_state(self, holds: Callable[[V], bool]) -> V | None:
        """The first state seen for which `holds` is true: an event's instant is read where it first showed."""
        return next((view for _, view in self.history if holds(view)), None)

    def first_seen(self, name: str, holds: Callable[[V], bool]) -> float | None:
        """When a state of `name` for which `holds` is true was first seen (transport clock)."""
        return next((t for t, view in self.history if view.name == name and holds(view)), None)

    def _last_seen(self) -> str:
        """One line per object in view: 'last seen pod/x: phase=Running ...' (or gone)."""
        shown = [self.focus] if self.focus else self.names()
        states = "\n".join(
            f"last seen {self.source(n)}: {'gone' if n in self.deleted else self.states[n].summary()}"
            for n in shown
            if n in self.states
        )
        return states or f"no {self.kind} seen yet"

    def _state_text(self) -> str:
        return f"{self._last_seen()}\ntimeline:\n{self._timeline.render(last=25)}"


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

    def as_deleted(self, pod: PodView) -> PodView | None:
        """The pod (by uid) as its deletion first showed it: the first state with a deletionTimestamp.

        The API server sets deletionTimestamp = time of the delete + grace. Later deletes rewrite it: once the
        containers stopped, the kubelet deletes the pod again with grace 0, and the server moves
        deletionTimestamp and deletionGracePeriodSeconds (staging/src/k8s.io/apiserver/pkg/registry/rest/
        delete.go BeforeDelete). Read from a later state, the end of the grace moved 5 s early (live, 1.27.3).
        """
        return self.first_state(lambda view: view.uid == pod.uid and view.deletion_timestamp is not None)

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

    def phases_since(self, t: float, name: str | None = None, uid: str | None = None) -> list[str | None]:
        """The phases a pod was in from time t on: the phase at t, then each change (repeats collapsed).

        `uid`: that pod only, not a later one of the same name (a StatefulSet's recreation)."""
        name = name or self.focus
        phases: list[str | None] = []
        for seen_at, view in self.history:
            if view.name != name or (uid is not None and view.uid != uid):
                continue
            if seen_at <= t:
                phases = [view.phase]
            elif not phases or phases[-1] != view.phase:
                phases.append(view.phase)
        return phases


def delete_requested_at(deleted: PodView) -> datetime | None:
    """The delete's instant on the server's clock (deletionTimestamp - deletionGracePeriodSeconds), from the
    state `PodObserver.as_deleted` gives: in a later state both fields may have been rewritten.
    """
    grace_ends = parse_time(deleted.deletion_timestamp)
    if grace_ends is None:
        return None
    return grace_ends - timedelta(seconds=deleted.deletion_grace_period_seconds or 0)


def conditions_before_failed(jobs: Observer[JobView]) -> list[str]:
    """The condition types that were True in some state of the Job seen before its Failed condition appeared."""
    seen: list[str] = []
    for _, view in jobs.history:
        if view.condition("Failed") is not None:
            break
        seen.extend(c.type for c in view.conditions if c.status == "True" and c.type not in seen)
    return seen


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
    The API asks clients to treat it as opaque; the suite uses it only to order what it already saw, and
    falls back to arrival order when any change has no integer version (another storage, or a GONE noticed
    by a relist).
    """
    merged = [Change(t, o.kind, type_, view) for o in observers for t, type_, view in o.changes]

    def key(change: Change) -> tuple[int, float]:
        version = getattr(change.view, "resource_version", "")
        return (int(version), change.t) if change.type != "GONE" and str(version).isdigit() else (-1, change.t)

    if all(key(change)[0] >= 0 for change in merged):
        return sorted(merged, key=key)
    return sorted(merged, key=lambda change: change.t)
