"""Where a timeline's marks go: each label on the lowest free level above its row's axis (`place_labels`), and time
on the axis (`Scale`), linear except across long idle stretches, which are cut short.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise

from harness.reports.timeline_marks import Mark

# A generous average advance of timeline_svg.py's FONT at its 11 px (DejaVu Sans is wide): labels never under-measured.
CHAR_PX = 6.9
BREAK_SHARE = 0.45  # an idle stretch longer than this share of the whole axis is cut short
BREAK_PX = 36
OFFSET = 4  # between an instant and its label


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
