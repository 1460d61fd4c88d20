"""The timeline of everything a probe did and saw, and sightings: when a watch first showed something, and since when
it may already have been so."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from harness.core.basis import Gap
from harness.core.views import CountersView, EndpointsView, JobView, PodView, StatefulSetView

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
