"""`make upgrade`'s words: a side's values as measured or expected, a claim's change in a line, the ends and the
headline, and a change cut to the room a screen line leaves it without hiding how its two sides differ. Values and
expectations themselves are in words in wording.py; the screen they make is upgrade.py.
"""

from __future__ import annotations

import re
import statistics
from typing import Any

from harness.core.expectations import PASS, Claim
from harness.reports.upgrade_model import ClaimChange, Side, Upgrade, UpgradeEnd, worked_out_once
from harness.reports.wording import expected_words, words

# ------------------------------------------------------------------------------------------ a side and a claim


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def measured_words(side: Side) -> str:
    """What a side says, marked: where it ran live, the median of its runs' values (with the spread when there are
    several) or the value they saw, '[live]'; where nothing ran, the expectation there, '[expected]'."""
    return worked_out_once(side, "_measured_words", lambda: _measured_words(side))


def _measured_words(side: Side) -> str:
    if not side.seen:
        return f"{expected_words(side.expectation)} [expected]"
    numbers = [_number(s.value) for s in side.seen]
    runs = len(side.seen)
    if all(n is not None for n in numbers):
        values = [n for n in numbers if n is not None]
        pattern = "{:g}" if all(isinstance(s.value, int) for s in side.seen) else "{:.1f}"  # a count, a measurement

        def said(value: float) -> str:
            return pattern.format(value)

        median = said(statistics.median(values))
        if runs == 1 or min(values) == max(values):
            return f"{median} [live{f' ×{runs}' if runs > 1 else ''}]"
        return f"{median} [live ×{runs}: {said(min(values))}–{said(max(values))}]"
    seen = []
    for s in side.seen:
        if words(s.value) not in seen:
            seen.append(words(s.value))
    if len(seen) == 1:
        return f"{seen[0]} [live{f' ×{runs}' if runs > 1 else ''}]"
    return f"{' or '.join(seen)} [live ×{runs}, runs differ]"


def seen_words(side: Side) -> str:
    """What was seen live on a side where it differs from what is expected there, or where a race decides it."""
    shown = sorted({words(s.value) for s in side.seen if side.race or s.status != PASS})
    return f" (seen live on {side.release.name}: {', '.join(shown)})" if shown else ""


def basis_words(change: ClaimChange) -> str:
    """Whether each side was seen live or is only expected, in a few words."""
    before, after = change.before.live, change.after.live
    if before == after:
        return "live on both" if before else "expected on both"
    return "live before, expected after" if before else "expected before, live after"


def observable_words(claim: Claim) -> str:
    """What the claim observes, without its parentheses (the report gives it whole)."""
    short = re.sub(r" \([^()]*\)", "", claim.observable)
    return short if len(short) >= 20 else claim.observable


def steps_words(change: ClaimChange) -> str:
    """'changed in 1.27.0-rc.0 (k/k#115331)', or each release on the way and what it changed to."""
    if len(change.steps) == 1:
        verb = "undoes what changed in" if change.rollback else "changed in"
        return f"{verb} {change.steps[0].release} ({change.steps[0].reason})"
    lead = "on the way back, undone: " if change.rollback else "on the way: "
    return lead + "; ".join(f"from {s.release} {expected_words(s.expectation)} ({s.reason})" for s in change.steps)


def line(change: ClaimChange) -> str:
    """One claim's change as one line: before -> after, where it changed and why, and what it rests on."""
    before = expected_words(change.before.expectation) + seen_words(change.before)
    after = expected_words(change.after.expectation) + seen_words(change.after)
    what = f"{before} → {after}" if change.changes else f"{before} on both"
    parts = [what, steps_words(change) if change.steps else "", basis_words(change)]
    return f"{change.claim.id} — {observable_words(change.claim)}: " + "; ".join(p for p in parts if p)


# ------------------------------------------------------------------------------------------ the ends and the headline


def release_line(release: UpgradeEnd) -> str:
    """Where a side ran: 'v1.30.13 (the newest pinned node image of 1.30): live on kind (runtime not recorded)', or
    'v1.29.5 (as given): not run here, expected values; nearest live v1.29.14'."""
    head = f"{release.name} ({release.how})"
    if release.ran:
        return f"{head}: live on {'; '.join(release.runtimes)}"
    nearest = f"; nearest live {' and '.join(release.nearest)}" if release.nearest else "; no live run of it near"
    return f"{head}: not run here, expected values{nearest}"


def headline(upgrade: Upgrade) -> str:
    b, a = upgrade.before, upgrade.after
    verb = "Rolling back" if upgrade.rollback else "Upgrading"
    return f"{verb} Kubernetes {b.asked} → {a.asked}: {b.name} → {a.name}"


# ------------------------------------------------------------------------------------------ a change cut to fit


def fit(text: str, room: int) -> str:
    """Text cut at a word to fit `room` characters, with an ellipsis (values and ids only, never a PR number)."""
    if len(text) <= room:
        return text
    cut = text[: max(room - 1, 0)]
    if " " in cut[room // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;") + "…"


def change_parts(change: ClaimChange) -> tuple[str, str, str]:
    """A change's two sides in words and its mark: ('13.0 [live]', '11.0 [live ×3: 10.8–11.2]', ''), or one mark
    for both sides where they are marked alike: ('none', '1', ' [both live]')."""
    return worked_out_once(change, "_change_parts", lambda: _change_parts(change))


def _change_parts(change: ClaimChange) -> tuple[str, str, str]:
    before, after = measured_words(change.before), measured_words(change.after)
    for mark in ("live", "expected"):
        if before.endswith(f" [{mark}]") and after.endswith(f" [{mark}]"):
            return before.removesuffix(f" [{mark}]"), after.removesuffix(f" [{mark}]"), f" [both {mark}]"
    return before, after, ""


def change_text(parts: tuple[str, str, str], room: int | None = None) -> str:
    """'before → after mark' in at most `room` characters: where it must be cut, the longer side is, so that what
    it becomes is still said where it is short."""
    before, after, mark = parts
    text = f"{before} → {after}{mark}"
    if room is None or len(text) <= room:
        return text
    spare = room - len(" → ") - len(mark)
    cut = _cut_sides(before, after, spare)
    if _hides_the_difference(before, after, *cut):
        cut = _cut_sides(*_from_the_difference(before, after), spare)
    return fit(f"{cut[0]} → {cut[1]}{mark}", room)


def _cut_sides(before: str, after: str, spare: int) -> tuple[str, str]:
    """Both sides in `spare` characters: where one is short it stays whole, else each gets half."""
    half = spare // 2
    if len(after) <= half:
        return fit(before, spare - len(after)), after
    if len(before) <= half:
        return before, fit(after, spare - len(before))
    return fit(before, half), fit(after, spare - half)


def _shared_start(one: str, other: str) -> int:
    """How many characters two texts share from their start."""
    return next((i for i, (a, b) in enumerate(zip(one, other, strict=False)) if a != b), min(len(one), len(other)))


# What a cut value keeps of itself after the start it shares with the other side, at least, to show how they differ.
DIFFERENCE_SHOWN = 8


def _hides_the_difference(before: str, after: str, cut_before: str, cut_after: str) -> bool:
    """Whether two different values, once cut, keep (nearly) only the start they share, so that both read the same
    ('status 422, refused spec.containers[1]…' on both sides)."""
    shared = _shared_start(before, after)
    return before != after and any(
        cut != whole and len(cut.removesuffix("…")) < shared + DIFFERENCE_SHOWN
        for cut, whole in ((cut_before, before), (cut_after, after))
    )


# Where a value's words or segments part: 'spec.containers[1].lifecycle.preStop: Required' is cut after '.'.
SEGMENT_ENDS = " .,:;=[("


def _from_the_difference(before: str, after: str) -> tuple[str, str]:
    """Both values from the segment in which they start to differ, the start they share as an ellipsis:
    '…preStop: Required value…' and '…preStop.sleep: Invalid value…' (unchanged where they differ in their
    first segment)."""
    shared = _shared_start(before, after)
    start = max(before.rfind(end, 0, shared) for end in SEGMENT_ENDS) + 1
    if start == 0:
        return before, after
    return "…" + before[start:].lstrip(), "…" + after[start:].lstrip()


def change_words(change: ClaimChange) -> str:
    """A change in words: '13.0 → 11.0 [both live]'."""
    return change_text(change_parts(change))
