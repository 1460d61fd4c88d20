"""A probe's timeline drawn as the documents draw it: one row per version, stacked, on one time axis (SVG).

What is drawn is timeline_marks.py's: the instants as marks (a colour and a shape per kind), the intervals as bars
(the grace period from the delete, the preStop hook while it ran). Labels never overlap: each goes on the lowest
free level above its row's axis, with a leader line down to its instant (timeline_layout.py places them, and cuts
long idle stretches short). The SVG is written directly (text stays text: searchable, and the same input gives the
same bytes).
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

from harness.reports.timeline_layout import Scale, label_width, place_labels
from harness.reports.timeline_marks import JsonDict, events

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
LEVEL_PX = 15
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
