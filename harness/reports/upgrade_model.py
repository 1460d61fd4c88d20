"""What changes for the suite's claims between two releases: the one reading of "what changed" that `make upgrade`,
report.md and report.html all give.

Each side is a release (upgrade_ends.py reads and resolves it): a minor resolves as `make probe` resolves it (its
newest pinned node image), a patch or a pre-release is itself, whether or not anything ran there. A claim's behaviour
on a release is its expectation there (probes/*/expectations.yaml); where live records of that very release exist,
what they measured is said too (the median of their values, the spread when there are several) and whether it
agrees. The releases where a claim changes on the way are the boundaries of its expectations' version ranges between
the two, with the PRs their sources cite. A claim a race of the release decides (an expectation that is `one_of`) is
kept apart: its value may differ from run to run. FROM later than TO is a rollback: the same claims, the changes
undone.

The live observations come from run records: by default those of the shipped recordings (the atlas,
upgrade_atlas.py), replayed offline, of the two releases only (the others' names say which releases ran, for the
nearest live ones); `make upgrade RUNS=...` adds the run records of live runs. The answer's words are
upgrade_words.py, its screen upgrade.py.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from packaging.version import Version

from harness.base import families
from harness.base.versions import KubeVersion, release_name, version_range
from harness.core.expectations import (
    FAIL,
    Claim,
    Expectation,
    pull_requests,
)

T = TypeVar("T")


@dataclass(frozen=True)
class UpgradeEnd:
    """One end of an upgrade (FROM or TO): what was asked (1.26), the release it stands for (v1.26.15), how, and
    where the suite ran it: `live` the runtimes of its live records there ("" when nothing ran at that very
    release), `nearest` the nearest releases that ran live (named when it did not)."""

    asked: str
    version: KubeVersion
    how: str  # "the newest pinned node image of 1.26", "as given", ...
    runtimes: tuple[str, ...] = ()
    nearest: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return "v" + release_name(self.version.version)

    @property
    def ran(self) -> bool:
        return bool(self.runtimes)


@dataclass(frozen=True)
class Seen:
    """A live observation of a claim on a release, judged against the expectation there."""

    value: Any
    status: str  # pass, fail, undecided
    where: str  # the recording or run it comes from


@dataclass(frozen=True)
class Side:
    """A claim on one release: what is expected there and what was seen live there (possibly nothing)."""

    release: UpgradeEnd
    expectation: Expectation | None
    seen: tuple[Seen, ...]

    @property
    def live(self) -> bool:
        return bool(self.seen)

    @property
    def disagrees(self) -> bool:
        """A live observation there differs from the expectation (asked once a side, by _traits: a cached_property's
        lock cost more than the few observations it reads)."""
        return any(s.status == FAIL for s in self.seen)

    @property
    def race(self) -> bool:
        return self.expectation is not None and bool(self.expectation.one_of)


@dataclass(frozen=True)
class Step:
    """A release between the two where the claim's expectation changes: its first release and the new one."""

    release: str  # Kubernetes spelling: 1.27.0-rc.0
    expectation: Expectation | None
    reason: str  # "k/k#115331", or the new expectation's first source where it cites no PR
    prs: tuple[str, ...] = ()  # every PR the new expectation cites, as numbers


@dataclass(frozen=True)
class ClaimChange:
    """A claim between two releases: both sides and every release on the way where its expectation changes."""

    claim: Claim
    family: families.Family
    before: Side
    after: Side
    steps: tuple[Step, ...]
    rollback: bool = False  # `before` is the later release: the steps are undone on the way back

    @property
    def changes(self) -> bool:
        """The behaviour differs between the two releases (each side's outcome_key is kept in its expectation: a
        cached_property's lock would cost more than the comparison)."""
        return bool(outcome_key(self.before.expectation) != outcome_key(self.after.expectation))

    @property
    def race(self) -> bool:
        """A race of either release decides the value (a one_of expectation): it may differ run to run."""
        return self.before.race or self.after.race

    @property
    def key_step(self) -> Step | None:
        """The release the change is said to be made in: the last step, from which on the later release's behaviour
        holds (going back, what the rollback undoes)."""
        return self.steps[-1] if self.steps else None


@dataclass
class Upgrade:
    """Every claim between two releases, sorted into what the upgrade changes and what it does not."""

    before: UpgradeEnd
    after: UpgradeEnd
    claims: list[ClaimChange]
    sources: list[str] = field(default_factory=list)  # where the live observations come from, in words

    @property
    def rollback(self) -> bool:
        return self.before.version.version > self.after.version.version

    @property
    def changed(self) -> list[ClaimChange]:
        """Claims whose behaviour differs, neither side decided by a race."""
        return list(self._sorted[0])

    @property
    def raced(self) -> list[ClaimChange]:
        """Claims whose behaviour differs where a race of one side decides it (may differ run to run)."""
        return list(self._sorted[1])

    @property
    def on_the_way(self) -> list[ClaimChange]:
        """Claims the same on both releases that differ on releases between (the patches of a minor passed)."""
        return list(self._sorted[2])

    @property
    def same_race(self) -> list[ClaimChange]:
        """Claims a race decides on both releases alike: not a change, but their values may differ run to run."""
        return list(self._sorted[3])

    @property
    def disagreeing(self) -> list[ClaimChange]:
        """Claims whose live observation on either release differs from its expectation."""
        return list(self._sorted[4])

    @cached_property
    def _sorted(self) -> tuple[tuple[ClaimChange, ...], ...]:
        """The claims sorted once into changed, raced, on_the_way, same_race and disagreeing (a claim may be in
        several): a screen asks for each of them many times while it fits its lines."""
        changed: list[ClaimChange] = []
        raced: list[ClaimChange] = []
        on_the_way: list[ClaimChange] = []
        same_race: list[ClaimChange] = []
        disagreeing: list[ClaimChange] = []
        for c in self.claims:  # c.changes and c.race from each side's traits: every pair sorts every claim
            # a side's traits read from where _traits keeps them (most sides: made once a release, met at every pair)
            key_before, race_before, disagrees_before = c.before.__dict__.get("_traits") or _traits(c.before)
            key_after, race_after, disagrees_after = c.after.__dict__.get("_traits") or _traits(c.after)
            race = race_before or race_after
            if key_before != key_after:
                (raced if race else changed).append(c)
            elif c.steps:
                on_the_way.append(c)
            elif race:
                same_race.append(c)
            if disagrees_before or disagrees_after:
                disagreeing.append(c)
        return tuple(changed), tuple(raced), tuple(on_the_way), tuple(same_race), tuple(disagreeing)

    @property
    def unchanged(self) -> int:
        """How many claims behave the same on both and on every release between."""
        return len(self.claims) - len(self.changed) - len(self.raced) - len(self.on_the_way)

    def counts(self) -> str:
        """What changes, counted: the same words in make upgrade, report.md and report.html."""
        changed = self.changed
        both = sum(c.before.live and c.after.live for c in changed)
        parts = [f"{len(changed)} change{'' if len(changed) == 1 else 's'} of behaviour"]
        if changed:
            parts[0] += f" ({both} live on both)"
        if self.raced:
            parts.append(f"{len(self.raced)} decided by a race")
        if self.on_the_way:
            parts.append(f"{len(self.on_the_way)} only in between")
        if self.disagreeing:
            parts.append(f"{len(self.disagreeing)} seen otherwise than expected")
        return ", ".join(parts)


def _traits(side: Side) -> tuple[Any, bool, bool]:
    """A side's outcome_key, race and disagrees, worked out once a side (compare makes each side once a release)."""
    return worked_out_once(side, "_traits", lambda: (outcome_key(side.expectation), side.race, side.disagrees))


# ------------------------------------------------------------------------------------------ the releases on the way


def _successor(version: Version) -> Version:
    """The release right after one (1.23.0 -> 1.23.1, 1.24.0-alpha.1 -> 1.24.0-alpha.2): where an `==` range ends."""
    major, minor, patch = (*version.release, 0, 0)[:3]
    if version.pre is not None:
        return Version(f"{major}.{minor}.{patch}{version.pre[0]}{version.pre[1] + 1}")
    return Version(f"{major}.{minor}.{patch + 1}")


def _memo(claim: Claim, what: Any, answer: Any) -> Any:
    """What was worked out for a claim once (its boundaries, its expectation on a release), kept in the claim
    (worked_out_once): make upgrade compares many releases, the report every pair of its columns, and the claims do
    not change within a run."""
    known: dict[Any, Any] = worked_out_once(claim, "_upgrade_readings", dict)
    if what not in known:
        known[what] = answer()
    return known[what]


def boundaries(claim: Claim) -> list[Version]:
    """Every release where one of the claim's version ranges starts or ends, in order."""
    return list(_memo(claim, "boundaries", lambda: _boundaries(claim)))


def _boundaries(claim: Claim) -> list[Version]:
    found: set[Version] = set()
    for expectation in claim.expectations:
        for specifiers in version_range(expectation.versions):
            for specifier in specifiers:
                point = Version(specifier.version)
                found.add(point)
                if specifier.operator == "==":
                    found.add(_successor(point))
    return sorted(found)


def expectation_on(claim: Claim, version: KubeVersion) -> Expectation | None:
    """The claim's expectation on a release, or None where no single range covers it."""
    return claim_reading(claim, version)[0]


def claim_reading(claim: Claim, version: KubeVersion) -> tuple[Expectation | None, int]:
    """The claim's expectation on a release, and how many of its boundaries (_transitions) are at or before it:
    worked out once a release."""

    def work() -> tuple[Expectation | None, int]:
        points = [point for point, _, _ in _transitions(claim)]
        return claim.expectation_or_none(version), bisect_right(points, version.version)

    found: tuple[Expectation | None, int] = _memo(claim, version.version, work)
    return found


def outcome_key(expectation: Expectation | None) -> Any:
    """What an expectation says, for comparing two: its value, its bounds, its outcomes (not its sources); worked out
    once an expectation (kept in its __dict__, as functools.cached_property keeps a value): every pair of releases
    compares every claim's two sides."""
    if expectation is None:
        return None
    return worked_out_once(
        expectation,
        "_outcome_key",
        lambda: (repr(expectation.value), expectation.between, tuple(outcome_key(o) for o in expectation.one_of)),
    )


def worked_out_once(thing: object, name: str, work: Callable[[], T]) -> T:
    """What `work` gives for a frozen object (an expectation, a side, a change), kept in the object's __dict__ as
    functools.cached_property keeps it, without its lock: a screen and every pair of releases ask for the same
    again and again."""
    kept: dict[str, Any] = thing.__dict__
    if name not in kept:
        kept[name] = work()
    found: T = kept[name]
    return found


def steps_between(claim: Claim, before: KubeVersion, after: KubeVersion) -> tuple[Step, ...]:
    """The releases in (before, after] where the claim's expectation changes, each with the new one (for a
    rollback, before later than after: the same releases, oldest first, which the way back undoes)."""
    low, high = (before, after) if before.version <= after.version else (after, before)
    (expectation, first), (_, end) = claim_reading(claim, low), claim_reading(claim, high)
    return claim_steps(claim, expectation, first, end)


def claim_steps(claim: Claim, expectation: Expectation | None, first: int, end: int) -> tuple[Step, ...]:
    """The steps of _transitions[first:end] (the boundaries in (low, high]) from `expectation`, the one on low."""
    if first >= end:  # no boundary between: most claims at most pairs of releases
        return ()
    current = outcome_key(expectation)
    steps = []
    for _, key, step in _transitions(claim)[first:end]:
        if key != current:
            steps.append(step)
            current = key
    return tuple(steps)


def _transitions(claim: Claim) -> list[tuple[Version, Any, Step]]:
    """Each boundary of the claim's ranges with what its expectation says from there on, worked out once."""

    def work() -> list[tuple[Version, Any, Step]]:
        out = []
        for point in boundaries(claim):
            release = release_name(point)
            now = claim.expectation_or_none(KubeVersion.parse(release))
            prs = tuple(pull_requests(now.sources)) if now is not None else ()
            out.append((point, outcome_key(now), Step(release, now, step_reason(now), prs)))
        return out

    found: list[tuple[Version, Any, Step]] = _memo(claim, "transitions", work)
    return found


def step_reason(expectation: Expectation | None) -> str:
    """The PRs the new expectation cites (two at most), else its first source, shortened."""
    if expectation is None:
        return "no expectation covers it"
    prs = pull_requests(expectation.sources)
    if prs:
        return ", ".join(f"k/k#{pr}" for pr in prs[:2])
    first = " ".join(expectation.sources[0].split()) if expectation.sources else ""
    return first if len(first) <= 70 else first[:69].rstrip() + "…"


# ------------------------------------------------------------------------------------------ observations


def release_key(version: KubeVersion) -> str:
    """A release as the observations are keyed: packaging's spelling of its version (1.27.0rc0)."""
    return str(version.version)


def nearest_live(version: KubeVersion, ran: Iterable[Version]) -> tuple[str, ...]:
    """The live releases nearest to one that did not run: of its own minor the closest below and above it, else
    the closest of any minor; in Kubernetes spelling with a v."""
    same = [v for v in ran if (v.major, v.minor) == (version.version.major, version.version.minor)]
    if version.version.pre is None and any(v.pre is None for v in same):
        same = [v for v in same if v.pre is None]  # a release's nearest are releases, not pre-releases
    if same:
        below = [v for v in same if v < version.version]
        above = [v for v in same if v > version.version]
        picked = ([max(below)] if below else []) + ([min(above)] if above else [])
    else:
        picked = sorted(ran, key=lambda v: (abs(v.minor - version.version.minor), -v.minor))[:1]
    return tuple("v" + release_name(v) for v in sorted(picked))
