"""A probe's timeline drawn as the documents draw it: one row per version, stacked, on one time axis (SVG).

Times are relative to the probe's anchor action (the delete, the create for deadline probes, the eviction or
the node shutdown). Marked: the probe's actions, phase changes, containers stopping (with exit code and the
signal behind 137 / 143; where the kubelet lost a container's end, its placeholder exit is not drawn as one),
objects gone, Job conditions, StatefulSet status writes, endpoint removal, node
checks, watch gaps, waits that ended without what they awaited, and the instants the container logged itself
(preStop start and end, SIGTERM). Drawn as bars: the grace period from the delete, and the preStop hook while
it ran.

A deleted pod's container exit is put at its finishedAt, counted from the delete on the server's clock
(deletionTimestamp minus the grace period), as the claims measure it (killed-after-delete); where the API
showed that exit more than a second later (the kubelet reports late), that instant is marked too. Both are on
one-second timestamps, so the exit mark is exact to about a second.

The container logs its instants on the node's clock, which cannot be put exactly on this machine's: they are
placed with the preStop's start at the first watch event that shows the deletion (when the kubelet can have
learnt of it), so their spacing is exact and their place on the axis is approximate (the drawing says so).

Labels never overlap: each goes on the lowest free level above its row's axis, with a leader line down to its
instant. The SVG is written directly (text stays text: searchable, and the same input gives the same bytes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from html import escape
from itertools import pairwise
from typing import Any, NamedTuple

from harness.core.probe_helpers import LOST_END_REASON

JsonDict = dict[str, Any]

# What each kind of mark is, and how it is drawn: (colour, shape, legend text).
KINDS: dict[str, tuple[str, str, str]] = {
    "action": ("#c0392b", "diamond", "the probe's action"),
    "phase": ("#2c6fbb", "circle", "pod phase"),
    "exit": ("#222222", "square", "container exit (137 = SIGKILL, 143 = SIGTERM): of a deleted pod at its finishedAt"),
    "seen": ("#9a9a9a", "square", "the API first showed that exit (later than finishedAt)"),
    "lost": ("#9a9a9a", "cross", "the kubelet lost the container's end (ContainerStatusUnknown): no exit to draw"),
    "signal": ("#1e8449", "triangle", "what the container logged: preStop start/end, SIGTERM"),
    "endpoints": ("#8e5a2b", "circle", "endpoint change"),
    "gone": ("#7f8c8d", "cross", "object gone"),
    "job": ("#7d3c98", "diamond", "Job condition"),
    "statefulset": ("#d35400", "circle", "StatefulSet status write"),
    "node": ("#117a65", "square", "container on the node (crictl)"),
    "gap": ("#b7950b", "cross", "watch gap"),
    "timeout": ("#555555", "cross", "a wait ended without what it awaited (judged on what was seen)"),
}
SPANS: dict[str, tuple[str, str]] = {
    "grace": ("#f5c6c6", "grace period from the delete"),
    "prestop": ("#bfe3c8", "preStop hook running"),
}

FONT = "DejaVu Sans, Verdana, Arial, sans-serif"
FONT_PX = 11
CHAR_PX = 6.9  # a generous average advance of FONT at 11 px (DejaVu Sans is wide): labels never under-measured
LEVEL_PX = 15
BREAK_SHARE = 0.45  # an idle stretch longer than this share of the whole axis is cut short
BREAK_PX = 36
OFFSET = 4  # between an instant and its label
WIDTH = 1100
# Said once per drawing rather than on every label (a page holds thousands): a label's colour is its kind's, with a
# white outline so that a leader line passing behind a label does not cross its letters; `e` ends at its x.
STYLE = (
    "<style>svg.tl text.label{stroke:#fff;stroke-width:3px;paint-order:stroke;stroke-linejoin:round}"
    "svg.tl text.e{text-anchor:end}"
    + "".join(f"svg.tl .{kind} text{{fill:{colour}}}" for kind, (colour, _, _) in KINDS.items())
    + "</style>"
)
LEFT = 150  # the row labels
RIGHT = 16


class Mark(NamedTuple):
    """An instant worth drawing: when, its label, and its kind (which row and colour)."""

    t: float
    label: str
    kind: str


class Span(NamedTuple):
    """An interval worth drawing (the grace period, the preStop hook)."""

    start: float
    end: float
    label: str
    kind: str


def _short(kind: str, name: str) -> str:
    """A pod by the random suffix its owner gave it (web-5d8f7c9b6-q2x7k -> q2x7k), anything else by name."""
    return name.rsplit("-", 1)[-1] if kind == "pod" and name.count("-") >= 2 else name


def _object(detail: JsonDict) -> str:
    """What an action was done to, from its detail ({"deployment": "web"} -> "deployment web")."""
    kind, name = next(iter(detail.items()), ("", ""))
    return f"{kind} {name}".strip()


def _signal(code: Any) -> str:
    """The signal an exit code says the container died of (128 + 9, 128 + 15)."""
    return " (SIGKILL)" if code == 137 else " (SIGTERM)" if code == 143 else ""


def _endpoint_marks(t: float, kind: str, before: JsonDict, detail: JsonDict) -> list[Mark]:
    """A pod leaving v1 Endpoints, or its EndpointSlice entry changing (not ready, terminating) or going."""
    out: list[Mark] = []
    was, now = before.get("pods") or {}, detail.get("pods") or {}
    where = "Endpoints" if kind == "endpoints" else "EndpointSlice"
    for pod, entry in was.items():
        name = _short("pod", pod)
        if pod not in now:
            out.append(Mark(t, f"{name} out of {where}", "endpoints"))
        elif now[pod] != entry:
            flags = now[pod]
            words = [
                "not ready" if flags.get("ready") is False else "ready",
                *(["serving"] if flags.get("serving") else []),
                *(["terminating"] if flags.get("terminating") else []),
            ]
            out.append(Mark(t, f"{name} {where}: {', '.join(words)}", "endpoints"))
    return out


def _deletion_seen(entries: list[JsonDict], pod: str | None, after: float) -> tuple[float, Any] | None:
    """(t, deletionGracePeriodSeconds) of the first event at or after `after` that shows the pod deleting."""
    for entry in entries:
        detail = entry.get("detail") or {}
        if entry["t"] < after or not entry["source"].startswith("pod/"):
            continue
        if pod is not None and entry["source"] != f"pod/{pod}":
            continue
        if detail.get("deletionTimestamp"):
            return entry["t"], detail.get("deletionGracePeriodSeconds")
    return None


def _timestamp(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")) if text else None
    except ValueError:
        return None


def _finished_after_delete(
    container: JsonDict, entries: list[JsonDict], source: str, delete_t: float | None
) -> float | None:
    """A deleted pod's container's finishedAt on the axis: the delete plus finishedAt minus the delete's time on the
    server's clock (the first deletionTimestamp seen, minus its grace period), as the claims count it."""
    finished = _timestamp(container.get("finishedAt"))
    if finished is None or delete_t is None:
        return None
    seen = next(
        (e["detail"] for e in entries if e["source"] == source and (e.get("detail") or {}).get("deletionTimestamp")),
        None,
    )
    deleting = _timestamp(seen["deletionTimestamp"]) if seen else None
    grace = seen.get("deletionGracePeriodSeconds") if seen else None
    if deleting is None or not isinstance(grace, int | float):
        return None
    return round(delete_t + (finished - (deleting - timedelta(seconds=grace))).total_seconds(), 3)


def events(entries: list[JsonDict]) -> tuple[list[Mark], list[Span]]:
    """The instants and intervals worth drawing, from a record's timeline entries."""
    out: list[Mark] = []
    spans: list[Span] = []
    previous: dict[str, JsonDict] = {}
    actions = [e["what"] for e in entries if e["source"] == "probe"]
    repeated = {what for what in actions if actions.count(what) > 1}  # such actions name their object
    delete_t: float | None = None
    deleted_pod: str | None = None
    for entry in entries:
        t, source, what, detail = entry["t"], entry["source"], entry["what"], entry.get("detail") or {}
        if entry.get("gap"):
            out.append(Mark(t, "watch gap", "gap"))
        if source == "probe":
            out.append(Mark(t, f"{what} {_object(detail)}" if what in repeated else what, "action"))
            if what == "delete" and delete_t is None:
                delete_t, deleted_pod = t, detail.get("pod")
                seen = _deletion_seen(entries, deleted_pod, t)
                grace = detail.get("gracePeriodSeconds")
                grace = grace if grace is not None else (seen[1] if seen else None)
                if isinstance(grace, int | float) and grace > 0:
                    spans.append(Span(t, t + grace, f"grace {grace:g} s", "grace"))
            continue
        before = previous.get(source, {})
        previous[source] = detail
        kind, _, name = source.partition("/")
        short = _short(kind, name)
        if kind == "container" and what == "log":
            out.extend(_container_instants(entries, name, detail, delete_t, spans))
            continue
        if what in ("DELETED", "GONE"):
            out.append(Mark(t, f"{short} gone", "gone"))
        if detail.get("phase") and detail.get("phase") != before.get("phase") and before:
            out.append(Mark(t, f"{short} {detail['phase']}", "phase"))
        for container in detail.get("containers") or []:
            was: JsonDict = next(
                (c for c in before.get("containers") or [] if c.get("name") == container.get("name")), {}
            )
            if container.get("state") == "terminated" and was.get("state") != "terminated":
                if container.get("reason") == LOST_END_REASON:  # a placeholder exit 137: the claims on it are
                    out.append(Mark(t, f"{container['name']} end lost", "lost"))  # not observable, nor drawn
                    continue
                code = container.get("exitCode")
                label = f"{container['name']} exit {code}{_signal(code)}"
                finished = (
                    _finished_after_delete(container, entries, source, delete_t)
                    if source == f"pod/{deleted_pod}"
                    else None
                )
                if finished is None:
                    out.append(Mark(t, label, "exit"))
                    continue
                out.append(Mark(finished, label, "exit"))
                if t - finished > 1.0:
                    out.append(Mark(t, f"{container['name']} exit seen", "seen"))
        for condition, value in (detail.get("conditions") or {}).items():
            if (
                kind == "job"
                and value != (before.get("conditions") or {}).get(condition)
                and str(value).startswith("True")
            ):
                out.append(Mark(t, f"Job {condition}", "job"))
        if kind == "statefulset" and before:
            for field in ("replicas", "currentRevision", "updatedReplicas"):
                if detail.get(field) != before.get(field):
                    value = str(detail.get(field)).rsplit("-", 1)[-1]  # a revision by its hash
                    out.append(Mark(t, f"{field} {value}", "statefulset"))
        if kind in ("endpoints", "endpointslice") and before:
            out.extend(_endpoint_marks(t, kind, before, detail))
        if what == "crictl":
            out.append(Mark(t, f"node: {detail.get('state')}", "node"))
        if what == "TIMEOUT":  # an awaited outcome that did not come: the claims judge what was seen instead
            out.append(Mark(t, "wait ended", "timeout"))
    return out, spans


def _container_instants(
    entries: list[JsonDict], pod: str, detail: JsonDict, delete_t: float | None, spans: list[Span]
) -> list[Mark]:
    """The container's own instants (relative to its preStop start), placed where the deletion was first seen."""
    relative: JsonDict = detail.get("since prestop-start (s)") or {}
    if not relative:
        return []
    seen = _deletion_seen(entries, pod, delete_t if delete_t is not None else -math.inf)
    origin = seen[0] if seen else (delete_t or 0.0)
    names = {"prestop-start": "preStop start", "prestop-end": "preStop end", "sigterm": "SIGTERM"}
    out = [
        Mark(round(origin + value, 3), f"≈ {names[key]}", "signal") for key, value in relative.items() if key in names
    ]
    start, end, sigterm = (relative.get(key) for key in ("prestop-start", "prestop-end", "sigterm"))
    if isinstance(start, int | float):
        if isinstance(end, int | float):
            spans.append(Span(origin + start, origin + end, f"preStop {end - start:.2f} s", "prestop"))
        elif isinstance(sigterm, int | float):
            spans.append(Span(origin + start, origin + sigterm, "preStop, cut off", "prestop"))
    return out


def marks(entries: list[JsonDict]) -> list[tuple[float, str]]:
    """The instants worth drawing: (t, label), from a record's timeline entries."""
    return [(mark.t, mark.label) for mark in events(entries)[0]]


# ------------------------------------------------------------------------------------------------ layout


def label_width(text: str) -> float:
    """The width a label is given, in pixels (an over-estimate, so estimated boxes apart are apart on screen)."""
    return len(text) * CHAR_PX + 4


@dataclass(frozen=True)
class Placed:
    """A mark with its label's place: x of the instant, the label's box [x0, x1] and its level above the axis."""

    mark: Mark
    x: float
    x0: float
    x1: float
    level: int


def place_labels(points: list[tuple[float, Mark]], right_edge: float, gap: float = 6.0) -> list[Placed]:
    """Give each label the lowest level on which its box overlaps no other label's box (greedy, in time order).

    A label starts just right of its instant; one that would cross `right_edge` ends just left of it instead.
    """
    levels: list[list[tuple[float, float]]] = []
    placed: list[Placed] = []
    for x, mark in sorted(points, key=lambda p: p[0]):
        width = label_width(mark.label)
        x0, x1 = (
            (x + OFFSET, x + OFFSET + width) if x + OFFSET + width <= right_edge else (x - OFFSET - width, x - OFFSET)
        )
        free = (i for i, boxes in enumerate(levels) if all(x1 + gap <= b0 or x0 >= b1 + gap for b0, b1 in boxes))
        level = next(free, len(levels))
        if level == len(levels):
            levels.append([])
        levels[level].append((x0, x1))
        placed.append(Placed(mark, x, x0, x1, level))
    return placed


def _nice_step(span: float, target: int = 10) -> float:
    raw = span / target
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


@dataclass(frozen=True)
class Piece:
    """A stretch of the time axis and where it is drawn; a `cut` one is a long idle stretch drawn short."""

    t0: float
    t1: float
    x0: float
    x1: float
    cut: bool


@dataclass(frozen=True)
class Scale:
    """Time to x, linear except across idle stretches longer than BREAK_SHARE of the whole, which are cut short
    (one row waiting 45 s for a cancel would otherwise squeeze every other row's events into a few pixels)."""

    pieces: tuple[Piece, ...]

    @classmethod
    def over(
        cls, times: list[float], left: float, width: float, keep: list[tuple[float, float]] | None = None
    ) -> Scale:
        """A scale over `times`; no cut goes into a `keep` interval (a grace period is drawn whole)."""
        points = sorted(set(times))
        low, high = points[0], points[-1]
        pad = max((high - low) * 0.02, 0.2)
        total = high - low + 2 * pad
        cuts = [
            (a + pad, b - pad)
            for a, b in pairwise(points)
            if b - a > BREAK_SHARE * total and not any(k0 < b and a < k1 for k0, k1 in keep or [])
        ]
        per_second = (width - BREAK_PX * len(cuts)) / (total - sum(b - a for a, b in cuts))
        pieces, x, t = [], left, low - pad
        for a, b in cuts:
            pieces.append(Piece(t, a, x, x + (a - t) * per_second, False))
            x = pieces[-1].x1
            pieces.append(Piece(a, b, x, x + BREAK_PX, True))
            x, t = x + BREAK_PX, b
        pieces.append(Piece(t, high + pad, x, left + width, False))
        return cls(tuple(pieces))

    def x(self, t: float) -> float:
        for piece in self.pieces:
            if t <= piece.t1 or piece is self.pieces[-1]:
                return piece.x0 + (t - piece.t0) / (piece.t1 - piece.t0) * (piece.x1 - piece.x0)
        raise AssertionError("unreachable")

    def ticks(self) -> list[float]:
        """Round instants on the drawn stretches, at least 28 px apart."""
        shown = sum(p.t1 - p.t0 for p in self.pieces if not p.cut)
        step = _nice_step(shown)
        out: list[float] = []
        for piece in self.pieces:
            if piece.cut:
                continue
            for i in range(math.ceil(piece.t0 / step), math.floor(piece.t1 / step) + 1):
                tick = round(i * step, 9)
                if not out or self.x(tick) - self.x(out[-1]) >= 28:
                    out.append(tick)
        return out


def _shape(shape: str, x: float, y: float, colour: str) -> str:
    if shape == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour}"/>'
    if shape == "square":
        return f'<rect x="{x - 3.5:.1f}" y="{y - 3.5:.1f}" width="7" height="7" fill="{colour}"/>'
    if shape == "diamond":
        return f'<path d="M{x:.1f} {y - 5:.1f}l5 5l-5 5l-5 -5z" fill="{colour}"/>'
    if shape == "triangle":
        return f'<path d="M{x:.1f} {y - 5:.1f}l4.5 8h-9z" fill="{colour}"/>'
    return f'<path d="M{x - 4:.1f} {y - 4:.1f}l8 8M{x + 4:.1f} {y - 4:.1f}l-8 8" stroke="{colour}" stroke-width="2"/>'


def draw(
    title: str, series: Mapping[str, list[JsonDict]], tags: Mapping[str, str] | None = None, anchor: str = "anchor"
) -> str:
    """An SVG of one probe's timelines on several versions, one row per version, on one shared time axis.

    `series`: row label (a version) -> timeline entries; `tags`: row label -> a word under it (live / derived).
    """
    tags = tags or {}
    rows = {label: events(entries) for label, entries in series.items()}
    times, keep = [0.0], []
    for row_marks, row_spans in rows.values():
        times += [m.t for m in row_marks] + [t for s in row_spans for t in (s.start, s.end)]
        keep += [(s.start, s.end) for s in row_spans]
    plot = WIDTH - LEFT - RIGHT
    scale = Scale.over(times, LEFT, plot, keep)
    x_of = scale.x

    body: list[str] = []
    top_axis = 40.0
    y = top_axis + 14
    for label, (row_marks, row_spans) in rows.items():
        placed = place_labels([(x_of(m.t), m) for m in row_marks], LEFT + plot)
        levels = max((p.level for p in placed), default=-1) + 1
        axis_y = y + levels * LEVEL_PX + 10
        lanes = sorted({s.kind for s in row_spans}, key=list(SPANS).index)
        height = axis_y - y + 10 + 13 * len(lanes) + 8
        body.append(f'<g class="row" data-version="{escape(label)}">')
        body.append(
            f'<text x="{LEFT - 10}" y="{axis_y + 4:.1f}" text-anchor="end" font-weight="bold">{escape(label)}</text>'
        )
        if label in tags:
            body.append(
                f'<text x="{LEFT - 10}" y="{axis_y + 17:.1f}" text-anchor="end" fill="#666" font-size="10">'
                f"{escape(tags[label])}</text>"
            )
        for piece in scale.pieces:
            dash = ' stroke-dasharray="2 3"' if piece.cut else ""
            body.append(
                f'<line x1="{piece.x0:.1f}" x2="{piece.x1:.1f}" y1="{axis_y:.1f}" y2="{axis_y:.1f}" '
                f'stroke="#bbb"{dash}/>'
            )
        for span in row_spans:
            lane_y = axis_y + 8 + 13 * lanes.index(span.kind)
            x0, x1 = x_of(span.start), x_of(span.end)
            colour, _ = SPANS[span.kind]
            body.append(
                f'<rect class="span {span.kind}" x="{x0:.1f}" y="{lane_y:.1f}" width="{max(x1 - x0, 1):.1f}" '
                f'height="10" fill="{colour}"><title>{escape(span.label)}: {span.start:.2f} s to {span.end:.2f} s'
                "</title></rect>"
            )
            body.append(
                f'<text x="{x0 + 3:.1f}" y="{lane_y + 8.5:.1f}" font-size="9" fill="#444">{escape(span.label)}</text>'
            )
        for p in placed:  # leader lines first, so labels are drawn over them
            text_y = axis_y - 10 - p.level * LEVEL_PX
            if p.level:
                body.append(
                    f'<line x1="{p.x:.1f}" x2="{p.x:.1f}" y1="{text_y + 2:.1f}" y2="{axis_y:.1f}" stroke="#ccc"/>'
                )
        for p in placed:
            colour, shape, _ = KINDS[p.mark.kind]
            text_y = axis_y - 10 - p.level * LEVEL_PX
            end, text_x = (False, p.x0) if p.x0 > p.x else (True, p.x1)
            body.append(
                f'<g class="mark {p.mark.kind}"><title>{p.mark.t:+.2f} s: {escape(p.mark.label)}</title>'
                f"{_shape(shape, p.x, axis_y, colour)}"
                f'<text class="label{" e" if end else ""}" x="{text_x:.1f}" y="{text_y:.1f}" '
                f'data-x0="{p.x0:.1f}" data-x1="{p.x1:.1f}">{escape(p.mark.label)}</text></g>'
            )
        body.append("</g>")
        y += height
    axis_y = y + 6
    axis = _axis(scale, axis_y, below=True) + _axis(scale, top_axis, below=False)
    axis.append(
        f'<text x="{LEFT + plot / 2:.1f}" y="{axis_y + 32:.1f}" text-anchor="middle" fill="#444">'
        f"seconds from the {escape(anchor)}</text>"
    )
    zero = x_of(0.0)
    total = axis_y + 40
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {total:.0f}" width="{WIDTH}" '
        f'height="{total:.0f}" font-family="{FONT}" font-size="{FONT_PX}" role="img" class="tl">'
        f"<title>{escape(title)}</title>{STYLE}"
        f'<text x="8" y="16" font-weight="bold">{escape(title)}</text>'
        f'<text x="{LEFT - 10}" y="{top_axis - 12:.1f}" text-anchor="end" fill="#444">'
        f"s from the {escape(anchor)}</text>"
        f'<line x1="{zero:.1f}" x2="{zero:.1f}" y1="{top_axis:.1f}" y2="{axis_y:.1f}" stroke="#c0392b" '
        'stroke-dasharray="4 3"/>' + "".join(body) + "".join(axis) + "</svg>"
    )


def _axis(scale: Scale, axis_y: float, below: bool) -> list[str]:
    """The time axis at `axis_y`, its ticks' numbers below it (the bottom axis) or above it (the top one)."""
    sign = 1 if below else -1
    number_y = axis_y + 16 if below else axis_y - 7
    out = []
    for piece in scale.pieces:
        if piece.cut:  # the cut: a gap in the axis with its length written beside it
            middle = (piece.x0 + piece.x1) / 2
            out.append(
                f'<path d="M{piece.x0 + 6:.1f} {axis_y + 5:.1f}l6 -10M{piece.x1 - 12:.1f} {axis_y + 5:.1f}l6 -10" '
                'stroke="#888"/>'
                f'<text x="{middle:.1f}" y="{number_y:.1f}" text-anchor="middle" fill="#888" font-size="9">'
                f"{piece.t1 - piece.t0:.0f} s cut</text>"
            )
        else:
            out.append(
                f'<line x1="{piece.x0:.1f}" x2="{piece.x1:.1f}" y1="{axis_y:.1f}" y2="{axis_y:.1f}" stroke="#888"/>'
            )
    for tick in scale.ticks():
        x = scale.x(tick)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{axis_y:.1f}" y2="{axis_y + 4 * sign:.1f}" stroke="#888"/>')
        out.append(f'<text x="{x:.1f}" y="{number_y:.1f}" text-anchor="middle" fill="#444">{tick:g}</text>')
    return out


def legend() -> str:
    """An SVG legend of the mark kinds and bars, for the page that shows the drawings."""
    items = [(KINDS[k][0], KINDS[k][1], KINDS[k][2]) for k in KINDS] + [
        (colour, "bar", text) for colour, text in SPANS.values()
    ]
    parts, x, y = [], 8.0, 14.0
    for colour, shape, text in items:
        width = 22 + label_width(text)
        if x + width > WIDTH:
            x, y = 8.0, y + 18
        symbol = (
            f'<rect x="{x - 4:.1f}" y="{y - 5:.1f}" width="14" height="10" fill="{colour}"/>'
            if shape == "bar"
            else _shape(shape, x + 3, y, colour)
        )
        parts.append(f'{symbol}<text x="{x + 16:.1f}" y="{y + 4:.1f}">{escape(text)}</text>')
        x += width + 10
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {y + 10:.0f}" width="{WIDTH}" '
        f'height="{y + 10:.0f}" font-family="{FONT}" font-size="{FONT_PX}" role="img">'
        "<title>legend of the timelines</title>" + "".join(parts) + "</svg>"
    )
