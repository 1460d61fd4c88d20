"""`make upgrade`'s answer on the screen: by default one screen (`render_text`, at most SCREEN_LINES lines of at most
SCREEN_WIDTH characters), the changed claims one a line where they fit, else grouped into behaviours (a family's
claims that change in one release) and the lines shared out among them; `render_detail` (DETAIL=1) lists every
claim. What it renders is upgrade_model.py's reading, in upgrade_words.py's words.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

from harness.axis.releases import sort_key
from harness.base import families
from harness.reports.upgrade_model import ClaimChange, Upgrade
from harness.reports.upgrade_words import (
    change_parts,
    change_text,
    change_words,
    fit,
    headline,
    line,
    measured_words,
    release_line,
)

LEAST_ROOM = 12  # a behaviour's first line keeps this much room after its PRs, for what changes or a count
SHORTEST_VALUES = 20  # values cut shorter than this say too little: the aspect is counted among those not shown
SCREEN_LINES = 40  # the default answer fits a terminal: at most this many lines ...
SCREEN_WIDTH = 120  # ... of at most this many characters, at any two releases


@dataclass(frozen=True)
class Behaviour:
    """Claims of one family that change in the same release: one behaviour of the answer, named by its family and
    told by what each of its aspects (the part of a claim id after its probe's) goes from and to."""

    family: families.Family
    release: str
    prs: tuple[str, ...]
    changes: tuple[ClaimChange, ...]

    def lead(self, rollback: bool, width: int = SCREEN_WIDTH) -> str:
        """'  in 1.27.0-rc.0 (k/k#115331) phase_after_deletion: ', every PR in full ('k/k#121579 #129731 ...' where
        so many leave the line too little room for what changes)."""
        return _lead(self.release, self.prs, self.family.name, rollback, width)

    def aspects(self) -> list[Aspect]:
        """Each aspect that changes, once, with each distinct change of its claims."""
        return list(self._aspects)

    @cached_property
    def _aspects(self) -> tuple[Aspect, ...]:  # worked out once: fitting a screen asks for them again and again
        by_aspect: dict[str, list[ClaimChange]] = {}
        for change in self.changes:
            by_aspect.setdefault(aspect(change.claim.id), []).append(change)
        return tuple(
            _aspect(name, len(found), tuple(dict.fromkeys(change_parts(c) for c in found)))
            for name, found in by_aspect.items()
        )


@dataclass(frozen=True)
class Aspect:
    """What one aspect of a behaviour goes from and to: 'phases ×5: Running → Running, then Failed [both live] / …'
    (each distinct change of its claims once, the claims' count when several share it)."""

    name: str
    claims: int
    changes: tuple[tuple[str, str, str], ...]  # change_parts of each distinct change

    @cached_property
    def head(self) -> str:
        return f"{self.name}{f' ×{self.claims}' if self.claims > 1 else ''}: "

    @cached_property
    def whole(self) -> str:
        """The aspect in words, uncut."""
        return self.head + " / ".join(change_text(c) for c in self.changes)

    def text(self, room: int | None = None) -> str:
        """In words, in at most `room` characters: cut inside the values (the release side kept whole where it
        can be), never in the aspect's name."""
        whole = self.whole
        if room is None or len(whole) <= room:
            return whole
        head = self.head
        rest = " / …" if len(self.changes) > 1 else ""
        left = room - len(head) - len(rest)
        if left < SHORTEST_VALUES + len(self.changes[0][2]):
            return ""  # too little room to say what it goes from and to
        return head + change_text(self.changes[0], left) + rest


@lru_cache(maxsize=4096)
def _lead(release: str, prs: tuple[str, ...], family: str, rollback: bool, width: int) -> str:
    """Behaviour.lead, worked out once: a screen asks for it again and again while it fits its lines."""
    said = " ".join(f"k/k#{pr}" for pr in prs) or "no PR cited"
    if width - len(said) - len(family) - len(release) - 14 < LEAST_ROOM:
        said = " ".join(f"{'k/k' if i == 0 else ''}#{pr}" for i, pr in enumerate(prs))
    when = f"{'undoes' if rollback else 'in'} {release}" if release else "no release between"
    return f"  {when} ({said}) {family}: "


@lru_cache(maxsize=16384)
def _aspect(name: str, claims: int, changes: tuple[tuple[str, str, str], ...]) -> Aspect:
    """One Aspect for the same words, its texts worked out once: every pair of releases that changes a claim alike
    (2,730 distinct aspects of 48,401 at every pair of recorded releases) says it alike."""
    return Aspect(name, claims, changes)


def aspect(claim_id: str) -> str:
    """What a claim observes without the probe it observes it in: 'phases' of 'always.sigterm-ignored.phases'."""
    return claim_id.rsplit(".", 1)[-1]


def behaviours(changes: Iterable[ClaimChange], per_claim: bool = False) -> list[Behaviour]:
    """The changed claims grouped, in release order: those of a family that change in the same release (per_claim:
    one group per claim)."""
    grouped: dict[tuple[str, ...], list[ClaimChange]] = {}
    families_by_name: dict[str, families.Family] = {}
    for change in changes:
        step = change.key_step
        families_by_name[change.family.name] = change.family
        key: tuple[str, ...] = (change.family.name, step.release if step else "")
        grouped.setdefault((*key, change.claim.id) if per_claim else key, []).append(change)
    out = []
    for (name, release, *_), found in grouped.items():
        prs = [pr for change in found if change.key_step for pr in change.key_step.prs]
        out.append(Behaviour(families_by_name[name], release, tuple(dict.fromkeys(prs)), tuple(found)))
    return sorted(out, key=lambda b: (sort_key(b.release or "0"), b.family.order))


def claim_lines(behaviour: Behaviour, rollback: bool, wrap: bool, width: int = SCREEN_WIDTH) -> list[str]:
    """A behaviour of one claim in lines of at most `width` characters: the release and every PR in full, the
    claim's id, its values on both sides; where they do not fit one line, on a second (wrap) or cut."""
    change = behaviour.changes[0]
    lead = behaviour.lead(rollback).removesuffix(f"{behaviour.family.name}: ")
    subject = change.claim.id
    values = change_parts(change)
    room = width - len(lead) - 2
    if len(subject) + len(change_text(values)) <= room:
        return [f"{lead}{subject}: {change_text(values)}"]
    if wrap:
        return [fit(f"{lead}{subject}:", width), CONTINUED + change_text(values, width - len(CONTINUED))]
    return [f"{lead}{subject}: {change_text(values, room - len(subject))}"]  # the values cut, never the id


def overflow(behaviour: Behaviour, rollback: bool, width: int = SCREEN_WIDTH, values_cut_to: int = 0) -> int:
    """How many characters a claim's line is too long by (0: it fits one line), its values cut to `values_cut_to`."""
    change = behaviour.changes[0]
    values = change_words(change)[: values_cut_to or None]
    return max(
        len(behaviour.lead(rollback).removesuffix(f"{behaviour.family.name}: "))
        + len(change.claim.id)
        + 2
        + len(values)
        - width,
        0,
    )


CONTINUED = "      "  # a behaviour's further lines: its aspects, indented under its first


def behaviour_lines(behaviour: Behaviour, rollback: bool, lines: int, width: int = SCREEN_WIDTH) -> list[str]:
    """A behaviour in at most `lines` lines of at most `width` characters: its release, every PR and its family,
    then its aspects packed after it (one that does not fit the line goes to the next), those left out counted."""
    return list(_packed(behaviour.lead(rollback, width), behaviour._aspects, lines, width))


@lru_cache(maxsize=16384)
def _packed(lead: str, aspects: tuple[Aspect, ...], lines: int, width: int) -> tuple[str, ...]:
    """behaviour_lines of a behaviour's first line's lead and its aspects, packed once: fitting a screen asks for
    each behaviour at several heights, and every pair of releases that changes a family alike packs it alike."""
    out: list[str] = []
    current = lead
    pending = list(aspects)
    while pending:
        last = len(out) + 1 >= lines
        joiner = "" if current.endswith(": ") or current == CONTINUED else "; "
        tail = f"; +{len(pending) - 1} more" if last and len(pending) > 1 else ""
        room = width - len(current) - len(joiner) - len(tail)
        if len(pending[0].text()) <= room:
            current += joiner + pending.pop(0).text()
        elif not last and current != CONTINUED:
            out.append(current)
            current = CONTINUED
        elif pending[0].text(room):
            current += joiner + pending.pop(0).text(room)
        else:
            current += f"{joiner or ''}+{len(pending)} more"
            break
    return tuple(line.rstrip() for line in (*out, current))


def fill(found: Sequence[Behaviour], rollback: bool, room: int, width: int = SCREEN_WIDTH) -> list[str]:
    """The behaviours in at most `room` lines: one each, then the lines left shared out in rounds, one more line in
    each round to every behaviour not yet said whole (those that need the fewest more first), so that a large one
    does not take the room of the others."""
    needed = [len(behaviour_lines(b, rollback, room, width)) for b in found]
    given = [1] * len(found)
    spare = room - len(found)
    while spare > 0:
        short = sorted((needed[i] - given[i], i) for i in range(len(found)) if given[i] < needed[i])
        if not short:
            break
        for _, i in short[:spare]:
            given[i] += 1
        spare -= min(len(short), spare)
    return [line for b, lines in zip(found, given, strict=True) for line in behaviour_lines(b, rollback, lines, width)]


def _listed(ids: Sequence[str], room: int) -> str:
    """Claim ids joined, as many as fit `room`, the rest counted."""
    shown: list[str] = []
    for i, claim_id in enumerate(ids):
        rest = len(ids) - i - 1
        tail = f" +{rest}" if rest else ""
        if len(", ".join([*shown, claim_id])) + len(tail) > room:
            return ", ".join(shown) + f" +{len(ids) - len(shown)}"
        shown.append(claim_id)
    return ", ".join(shown)


def render_text(upgrade: Upgrade, width: int = SCREEN_WIDTH, height: int = SCREEN_LINES) -> str:
    """The terminal answer in one screen: at most `height` lines of at most `width` characters."""
    b, a = upgrade.before, upgrade.after
    out = [fit(headline(upgrade), width), f"  {upgrade.counts()}"]
    out += [fit(f"  {which}: {release_line(r)}", width) for which, r in (("from", b), ("to", a))]
    out.append(
        "  values: [live ×N: low–high] the median of the N live runs there and their spread; [expected] no run there"
    )
    title = "Going back, what changes" if upgrade.rollback else "What changes"
    out.append(title)
    tail: list[str] = []
    if upgrade.raced:
        ids = [c.claim.id for c in upgrade.raced]
        lead = f"Decided by a race on one side, may differ run to run: {len(ids)} claims ("
        tail.append(lead + _listed(ids, width - len(lead) - 1) + ")")
    if upgrade.on_the_way:
        releases = sorted({s.release for c in upgrade.on_the_way for s in c.steps}, key=sort_key)
        span = releases[0] if len(releases) == 1 else f"{releases[0]} … {releases[-1]}"
        tail.append(
            f"Alike on both, different in between: {len(upgrade.on_the_way)} claims ({len(releases)} releases, {span})"
        )
    if upgrade.disagreeing:
        ids = [c.claim.id for c in upgrade.disagreeing]
        lead = f"Seen live otherwise than expected: {len(ids)} claims ("
        tail.append(lead + _listed(ids, width - len(lead) - 1) + ")")
    if upgrade.same_race:
        tail.append(f"Decided by the same race on both (no change): {len(upgrade.same_race)} claims")
    tail.append(f"The other {upgrade.unchanged} of the {len(upgrade.claims)} claims behave the same on both.")
    tail.append("DETAIL=1: every claim, its values on both sides and each release on the way, with its sources.")
    room = height - len(out) - len(tail)
    rollback = upgrade.rollback
    found = behaviours(upgrade.changed, per_claim=True)
    must_wrap = [bool(overflow(one, rollback, width, SHORTEST_VALUES + 12)) for one in found]
    if (
        len(found) + sum(must_wrap) <= room
    ):  # one line per claim where they fit, its values on a second where there is room
        # a second line where the id leaves the values too little room, then to the most cut first
        cut = sorted(((must_wrap[i], overflow(one, rollback, width), -i) for i, one in enumerate(found)), reverse=True)
        wrapped = {-i for _, over, i in cut[: room - len(found)] if over}
        lines = [line for i, one in enumerate(found) for line in claim_lines(one, rollback, i in wrapped, width)]
        said = f"{len(upgrade.changed)} claims: the release each changed in, its PRs, its values on both sides"
    else:  # else one behaviour (a family's claims that change in one release) a line, more where there is room
        found = behaviours(upgrade.changed)
        if len(found) > room:
            kept = max(room - 1, 0)
            lines = fill(found[:kept], rollback, kept, width)
            lines.append(f"  … and {len(found) - kept} more behaviours (DETAIL=1 lists them)")
        else:
            lines = fill(found, rollback, room, width)
        said = f"{len(upgrade.changed)} claims, {len(found)} behaviours: the release, its PRs, the family, what changes"
    out[-1] = f"{title} ({said}):"
    if not lines:
        out[-1] = f"{title}: none of the {len(upgrade.claims)} claims"
    return "\n".join([*out, *lines, *tail]) + "\n"


def render_detail(upgrade: Upgrade) -> str:
    """Every claim: what changes, then the race-decided claims, then what differs only on the way (DETAIL=1)."""
    b, a = upgrade.before, upgrade.after
    out = [headline(upgrade), f"  {upgrade.counts()}", f"  from: {release_line(b)}", f"  to: {release_line(a)}"]
    out += [f"  {source}" for source in upgrade.sources]
    out.append(
        "  live: seen in a live recording of that very release; expected: what probes/*/expectations.yaml say there"
    )
    sections = [
        (f"Behaviour that changes ({len(upgrade.changed)} claims)", upgrade.changed),
        (
            f"Decided by a race of the release on one side: may differ run to run ({len(upgrade.raced)} claims)",
            upgrade.raced,
        ),
        (
            f"The same on both, different on releases between ({len(upgrade.on_the_way)} claims)",
            upgrade.on_the_way,
        ),
    ]
    for title, changes in sections:
        out += ["", title + ":"]
        if not changes:
            out.append("  none")
        family = None
        for change in changes:
            if change.family != family:
                family = change.family
                out.append(f"  {family.title}")
            out.append(f"    {line(change)}")
            if change.before.live or change.after.live:
                out.append(f"      measured: {measured_words(change.before)} → {measured_words(change.after)}")
    if upgrade.same_race:
        ids = ", ".join(c.claim.id for c in upgrade.same_race)
        out += ["", f"Decided by the same race on both (no change; may differ run to run): {ids}"]
    if upgrade.disagreeing:
        ids = ", ".join(c.claim.id for c in upgrade.disagreeing)
        out += ["", f"Seen live otherwise than expected on {b.name} or {a.name}: {ids}"]
    out += ["", f"The other {upgrade.unchanged} of the {len(upgrade.claims)} claims behave the same on both releases."]
    return "\n".join(out) + "\n"
