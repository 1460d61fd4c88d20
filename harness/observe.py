"""Observation: a timeline of everything a probe saw, and bounded, event-driven waits over watches."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, Self, TypeVar

from harness.transport import WatchEvent, WatchHandle
from harness.views import DaemonSetView, DeploymentView, EndpointsView, JobView, PodView, StatefulSetView

JsonDict = dict[str, Any]


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


class ProbeTimeout(AssertionError):
    """A bounded wait ran out: says what was awaited, what was last seen and the timeline."""


class ProbeImpossible(AssertionError):
    """What the probe waits for can no longer happen (the object is gone, the image cannot be pulled ...)."""


V = TypeVar("V", PodView, JobView, DeploymentView, EndpointsView, StatefulSetView, DaemonSetView)
Condition = Callable[["Observer[V]"], bool]
Veto = Callable[["Observer[V]"], "str | None"]

VIEWS: dict[str, Callable[[JsonDict], Any]] = {
    "Pod": PodView.from_object,
    "Job": JobView.from_object,
    "Deployment": DeploymentView.from_object,
    "EndpointSlice": EndpointsView.from_object,
    "Endpoints": EndpointsView.from_object,
    "StatefulSet": StatefulSetView.from_object,
    "DaemonSet": DaemonSetView.from_object,
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
        self.gaps: list[tuple[float, str]] = []  # (when, why) events may have been missed before `when`
        self.history: list[tuple[float, V]] = []
        # Every change as it arrived: (when, ADDED/MODIFIED/DELETED/RELISTED/GONE, the object as then seen).
        self.changes: list[tuple[float, str, V]] = []
        for obj in initial:
            self._record(now(), self._view(obj))

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
        if event.gap:
            self.gaps.append((event.t, event.gap))
        if event.type == "RELISTED":  # after a gap: what exists now; what is missing was deleted meanwhile
            present = {self._view(item).name: self._view(item) for item in event.object.get("items", [])}
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
        deadline = self._now() + within
        while not done(self):
            remaining = deadline - self._now()
            if remaining <= 0:
                return False
            event = self._handle.next_event(remaining)
            if event is not None:
                self._apply(event)
        return True

    def observe_for(self, seconds: float) -> None:
        """Keep recording every event for a window (to show that something did NOT happen)."""
        deadline = self._now() + seconds
        while not self.gone and (remaining := deadline - self._now()) > 0:
            event = self._handle.next_event(remaining)
            if event is not None:
                self._apply(event)

    def gaps_since(self, t: float) -> list[str]:
        """Why events may be missing after time t (watch expired, connection lost)."""
        return [why for when, why in self.gaps if when >= t]

    def catch_up(self) -> None:
        """Take in every event that has already arrived (e.g. on this watch while waiting on another)."""
        while (event := self._handle.next_event(0.0)) is not None:
            self._apply(event)

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


class PodObserver(Observer[PodView]):
    """An observer of Pods: one pod (focus) or every pod of the namespace."""

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

    def phases_since(self, t: float, name: str | None = None) -> list[str | None]:
        """The phases a pod was in from time t on: the phase at t, then each change (repeats collapsed)."""
        name = name or self.focus
        phases: list[str | None] = []
        for seen_at, view in self.history:
            if view.name != name:
                continue
            if seen_at <= t:
                phases = [view.phase]
            elif not phases or phases[-1] != view.phase:
                phases.append(view.phase)
        return phases


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
