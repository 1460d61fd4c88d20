"""What changes for the suite's claims between two releases: the one reading of "what changed" that `make upgrade`,
report.md and report.html all give.

Each side is a release: a minor resolves as `make probe` resolves it (its newest pinned node image), a patch or a
pre-release is itself, whether or not anything ran there. A claim's behaviour on a release is its expectation there
(probes/*/expectations.yaml); where live records of that very release exist, what they measured is said too (the
median of their values, the spread when there are several) and whether it agrees. The releases where a claim
changes on the way are the boundaries of its expectations' version ranges between the two, with the PRs their
sources cite. A claim a race of the release decides (an expectation that is `one_of`) is kept apart: its value may
differ from run to run. FROM later than TO is a rollback: the same claims, the changes undone.

The live observations come from run records: by default those of the shipped recordings (the atlas), replayed
offline here (`replay_atlas`), of the two releases only (the others' names say which releases ran, for the nearest
live ones); `make upgrade RUNS=...` adds the run records of live runs. The terminal answer is one
screen (`render_text`, at most SCREEN_LINES lines of at most SCREEN_WIDTH characters); `render_detail` lists every
claim.
"""

from __future__ import annotations

import re
import statistics
import tempfile
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from packaging.version import Version

from harness.axis.pinned import pinned_minors, pinned_release, pinned_releases
from harness.axis.releases import first_catalogued, is_published
from harness.axis.replay import replay
from harness.base import families
from harness.base.versions import REQUESTED_FORMS, KubeVersion, Release, VersionError, release_name, version_range
from harness.core.expectations import (
    FAIL,
    NOT_OBSERVABLE,
    PASS,
    Claim,
    Expectation,
    evaluate,
    load_claims,
    pull_requests,
)
from harness.core.records import load_records, origin_kind, origin_of
from harness.reports.wording import expected_words, words

JsonDict = dict[str, Any]
LEAST_ROOM = 12  # a behaviour's first line keeps this much room after its PRs, for what changes or a count
SHORTEST_VALUES = 20  # values cut shorter than this say too little: the aspect is counted among those not shown
SCREEN_LINES = 40  # the default answer fits a terminal: at most this many lines ...
SCREEN_WIDTH = 120  # ... of at most this many characters, at any two releases
# A release as Kubernetes tags it, with something after it: a vendor's build (v1.27.3-eks-1, v1.28.2+k3s1, ...).
VENDOR_BUILD = re.compile(r"^v?\d+\.\d+\.\d+(?:-(?:alpha|beta|rc)\.\d+)?(?P<suffix>[-+.].+)$", re.ASCII)


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

    @cached_property
    def changes(self) -> bool:
        """The behaviour differs between the two releases."""
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
        return [c for c in self.claims if c.changes and not c.race]

    @property
    def raced(self) -> list[ClaimChange]:
        """Claims whose behaviour differs where a race of one side decides it (may differ run to run)."""
        return [c for c in self.claims if c.changes and c.race]

    @property
    def on_the_way(self) -> list[ClaimChange]:
        """Claims the same on both releases that differ on releases between (the patches of a minor passed)."""
        return [c for c in self.claims if not c.changes and c.steps]

    @property
    def same_race(self) -> list[ClaimChange]:
        """Claims a race decides on both releases alike: not a change, but their values may differ run to run."""
        return [c for c in self.claims if not c.changes and not c.steps and c.race]

    @property
    def disagreeing(self) -> list[ClaimChange]:
        """Claims whose live observation on either release differs from its expectation."""
        return [c for c in self.claims if c.before.disagrees or c.after.disagrees]

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


# ------------------------------------------------------------------------------------------ releases


class ReleaseError(VersionError):
    """FROM or TO is not a release the suite can answer for; the message says what would be."""


def known_minor_range() -> tuple[Version, Version]:
    """The minors the suite knows: from the oldest it supports to the newest with a pinned node image."""
    minors = [Version(m) for m in pinned_minors()]
    return min(minors), max(minors)


def read_end(text: str, what: str) -> Release:
    """FROM or TO read once, at make upgrade's door, into the typed release `resolve` takes: its form and a minor
    the suite supports, or ReleaseError; a vendor's build is refused in one line: the suite never ran it, and its
    upstream release is what it can answer for."""
    given = text.strip()
    if not given:
        raise ReleaseError(f"no {what} given: say which releases to compare, e.g. make upgrade FROM=1.26 TO=1.28")
    vendor = VENDOR_BUILD.match(given)
    if vendor and not re.fullmatch(r"-(?:alpha|beta|rc)\.\d+", vendor["suffix"]):
        upstream = given[: vendor.start("suffix")].lstrip("v")
        raise ReleaseError(
            f"{what}={given} is a vendor's build ({vendor['suffix'].lstrip('-+.')}), which the suite never ran: "
            f"give the upstream release it is built from ({what}={upstream}) for what upstream does there"
        )
    try:
        return Release.parse(given)
    except VersionError as err:
        raise ReleaseError(str(err).replace("VERSION=", f"{what}=")) from None


def check_published(wanted: Release, what: str) -> None:
    """FROM or TO as a release Kubernetes publishes (a minor the suite knows, a release the catalog holds), or
    ReleaseError."""
    given = wanted.kube.text
    oldest, newest = known_minor_range()
    if wanted.names_a_patch:
        if wanted.version < first_catalogued():  # older than the catalog: known published where a pinned image runs it
            if wanted.version not in {v.version for v in pinned_releases()}:
                newest_pinned = max((v for v in pinned_releases() if v.minor == wanted.minor), key=lambda v: v.version)
                raise ReleaseError(
                    f"{what}={given}: the release catalog (harness/releases.json) starts at "
                    f"{release_name(first_catalogued())}, so whether {given} was published is not known here; "
                    f"{what}={wanted.minor} answers for {newest_pinned.text} (its pinned node image)"
                )
        elif not is_published(wanted.version):
            raise ReleaseError(
                f"{what}={given}: no such Kubernetes release was published (harness/releases.json, read from the "
                f"CHANGELOGs, lists every release from 1.21 on)"
            )
        return
    minor = Version(wanted.minor)
    if minor > newest:
        raise ReleaseError(
            f"{what}={given}: Kubernetes {wanted.minor} is newer than any minor the suite knows (the newest is "
            f"{newest}); give a release of {oldest} to {newest} ({REQUESTED_FORMS})"
        )


def resolve(wanted: Release, what: str) -> UpgradeEnd:
    """FROM or TO (as `read_end` read it) as a release: a minor as `make probe` resolves it (its newest pinned node
    image), a patch or a pre-release as given (whether it ran live there, and where else, `compare` says: it reads
    the records); ReleaseError for one the suite cannot answer for."""
    check_published(wanted, what)
    if wanted.names_a_patch:
        version, how = wanted.kube, "as given"
    else:
        version = pinned_release(wanted)
        how = f"the newest pinned node image of {wanted.minor}"
    return UpgradeEnd(wanted.kube.text, version, how)


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


def _successor(version: Version) -> Version:
    """The release right after one (1.23.0 -> 1.23.1, 1.24.0-alpha.1 -> 1.24.0-alpha.2): where an `==` range ends."""
    major, minor, patch = (*version.release, 0, 0)[:3]
    if version.pre is not None:
        return Version(f"{major}.{minor}.{patch}{version.pre[0]}{version.pre[1] + 1}")
    return Version(f"{major}.{minor}.{patch + 1}")


_MEMO: dict[tuple[int, Any], tuple[Claim, Any]] = {}  # (claim's id(), what) -> the claim (kept alive) and the answer


def _memo(claim: Claim, what: Any, answer: Any) -> Any:
    """What was worked out for a claim once (its boundaries, its expectation on a release): make upgrade compares
    many releases, the report every pair of its columns, and the claims do not change within a run."""
    known = _MEMO.get((id(claim), what))
    if known is None or known[0] is not claim:
        known = _MEMO[(id(claim), what)] = (claim, answer())
    return known[1]


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
    found: Expectation | None = _memo(claim, version.version, lambda: _expectation_on(claim, version))
    return found


def _expectation_on(claim: Claim, version: KubeVersion) -> Expectation | None:
    matching = [e for e in claim.expectations if version.satisfies(e.versions)]
    return matching[0] if len(matching) == 1 else None


def outcome_key(expectation: Expectation | None) -> Any:
    """What an expectation says, for comparing two: its value, its bounds, its outcomes (not its sources)."""
    if expectation is None:
        return None
    return (repr(expectation.value), expectation.between, tuple(outcome_key(o) for o in expectation.one_of))


def steps_between(claim: Claim, before: KubeVersion, after: KubeVersion) -> tuple[Step, ...]:
    """The releases in (before, after] where the claim's expectation changes, each with the new one (for a
    rollback, before later than after: the same releases, oldest first, which the way back undoes)."""
    low, high = (before, after) if before.version <= after.version else (after, before)
    current = outcome_key(expectation_on(claim, low))
    steps = []
    for point, key, step in _transitions(claim):
        if low.version < point <= high.version and key != current:
            steps.append(step)
            current = key
    return tuple(steps)


def _transitions(claim: Claim) -> list[tuple[Version, Any, Step]]:
    """Each boundary of the claim's ranges with what its expectation says from there on, worked out once."""

    def work() -> list[tuple[Version, Any, Step]]:
        out = []
        for point in boundaries(claim):
            release = release_name(point)
            now = expectation_on(claim, KubeVersion.parse(release))
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


def replay_atlas(out: Path, select: str = "") -> Path:
    """The probes on the shipped recordings offline, all of them or those `select` (pytest's -k) keeps; the run
    records go under `out`."""
    replayed = replay(out, select=select)
    if replayed.returncode != 0:
        tail = "\n".join(replayed.stdout.splitlines()[-15:])
        raise RuntimeError(f"replaying the shipped recordings failed (exit {replayed.returncode}):\n{tail}")
    return out


def live_observations(
    records: Iterable[JsonDict], claims_loader: Any = load_claims
) -> dict[tuple[str, str], list[Seen]]:
    """(claim id, release) -> what live records observed there, judged against the current expectations."""
    found: dict[tuple[str, str], list[Seen]] = {}
    for record in records:
        version = record.get("server_version")
        if not version or origin_kind(record) != "live":
            continue
        try:
            claims = claims_loader(record["family"])
        except families.FamilyError:
            continue
        release = str(KubeVersion.parse(version).version)
        where = str(
            (record.get("recording_origin") or {}).get("file") or (record.get("provenance") or {}).get("run_id")
        )
        for verdict in record.get("verdicts", []):
            claim = claims.get(verdict["claim"])
            if claim is None or verdict["status"] == NOT_OBSERVABLE:
                continue
            gaps = (verdict.get("detail") or {}).get("watch_gaps")
            judged = evaluate(claim, KubeVersion.parse(version), verdict["observed"], gaps)
            found.setdefault((claim.id, release), []).append(Seen(verdict["observed"], judged.status, where))
    return found


def live_versions(records: Iterable[JsonDict]) -> set[str]:
    """The server versions live records were made on."""
    return {str(r["server_version"]) for r in records if r.get("server_version") and origin_kind(r) == "live"}


def live_runtimes(records: Iterable[JsonDict]) -> dict[str, tuple[str, ...]]:
    """Release (packaging's spelling) -> the runtimes its live records ran on, each once, in order."""
    found: dict[str, list[str]] = {}
    for record in records:
        version = record.get("server_version")
        if not version or origin_kind(record) != "live":
            continue
        said = origin_of(record).runtime_words()
        known = found.setdefault(str(KubeVersion.parse(str(version)).version), [])
        if said not in known:
            known.append(said)
    return {release: tuple(sorted(said)) for release, said in found.items()}


@dataclass(frozen=True)
class Observations:
    """What live records saw, by claim and release, and what each release ran on: read once, asked many times."""

    seen: dict[tuple[str, str], list[Seen]]
    runtimes: dict[str, tuple[str, ...]]
    also_ran: frozenset[Version] = frozenset()  # releases with live runs whose records were not read

    @cached_property
    def releases(self) -> frozenset[Version]:
        """The releases live records ran on, read or not."""
        return frozenset(Version(release) for release in self.runtimes) | self.also_ran

    @classmethod
    def of(
        cls, records: Iterable[JsonDict], claims_loader: Any = load_claims, also_ran: Iterable[Version] = ()
    ) -> Observations:
        records = list(records)
        return cls(live_observations(records, claims_loader), live_runtimes(records), frozenset(also_ran))


def compare(
    before: UpgradeEnd,
    after: UpgradeEnd,
    records: Sequence[JsonDict] | Observations,
    sources: Sequence[str] = (),
    claims_loader: Any = load_claims,
    only: Collection[str] | None = None,
) -> Upgrade:
    """Every claim of every family between the two releases (before later than after: a rollback); `only`: just
    those claims (a report's, whose records hold only some families)."""
    observed = records if isinstance(records, Observations) else Observations.of(records, claims_loader)
    before, after = (_with_runtimes(r, observed) for r in (before, after))
    rollback = before.version.version > after.version.version
    out = []
    for family in families.families():
        try:
            claims = claims_loader(family.name)
        except (families.FamilyError, KeyError):  # a report's loader may know only the families it read
            continue
        for claim in claims.values():
            if only is not None and claim.id not in only:
                continue
            sides = [
                Side(
                    release,
                    expectation_on(claim, release.version),
                    tuple(observed.seen.get((claim.id, release_key(release.version)), ())),
                )
                for release in (before, after)
            ]
            steps = steps_between(claim, before.version, after.version)
            out.append(ClaimChange(claim, family, sides[0], sides[1], steps, rollback))
    return Upgrade(before, after, out, list(sources))


def _with_runtimes(release: UpgradeEnd, observed: Observations) -> UpgradeEnd:
    """The release with the runtimes it ran on live, or the nearest releases that did."""
    ran = observed.runtimes.get(release_key(release.version), ())
    nearest = () if ran else nearest_live(release.version, observed.releases)
    return UpgradeEnd(release.asked, release.version, release.how, ran, nearest)


# ------------------------------------------------------------------------------------------ measured values


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def measured_words(side: Side) -> str:
    """What a side says, marked: where it ran live, the median of its runs' values (with the spread when there are
    several) or the value they saw, '[live]'; where nothing ran, the expectation there, '[expected]'."""
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


# ------------------------------------------------------------------------------------------ the answer


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
        prs = " ".join(f"k/k#{pr}" for pr in self.prs) or "no PR cited"
        if width - len(prs) - len(self.family.name) - len(self.release) - 14 < LEAST_ROOM:
            prs = " ".join(f"{'k/k' if i == 0 else ''}#{pr}" for i, pr in enumerate(self.prs))
        when = f"{'undoes' if rollback else 'in'} {self.release}" if self.release else "no release between"
        return f"  {when} ({prs}) {self.family.name}: "

    def aspects(self) -> list[Aspect]:
        """Each aspect that changes, once, with each distinct change of its claims."""
        by_aspect: dict[str, list[ClaimChange]] = {}
        for change in self.changes:
            by_aspect.setdefault(aspect(change.claim.id), []).append(change)
        return [
            Aspect(name, len(found), tuple(dict.fromkeys(change_parts(c) for c in found)))
            for name, found in by_aspect.items()
        ]


@dataclass(frozen=True)
class Aspect:
    """What one aspect of a behaviour goes from and to: 'phases ×5: Running → Running, then Failed [both live] / …'
    (each distinct change of its claims once, the claims' count when several share it)."""

    name: str
    claims: int
    changes: tuple[tuple[str, str, str], ...]  # change_parts of each distinct change

    def text(self, room: int | None = None) -> str:
        """In words, in at most `room` characters: cut inside the values (the release side kept whole where it
        can be), never in the aspect's name."""
        head = f"{self.name}{f' ×{self.claims}' if self.claims > 1 else ''}: "
        whole = head + " / ".join(change_text(c) for c in self.changes)
        if room is None or len(whole) <= room:
            return whole
        rest = " / …" if len(self.changes) > 1 else ""
        left = room - len(head) - len(rest)
        if left < SHORTEST_VALUES + len(self.changes[0][2]):
            return ""  # too little room to say what it goes from and to
        return head + change_text(self.changes[0], left) + rest


def change_parts(change: ClaimChange) -> tuple[str, str, str]:
    """A change's two sides in words and its mark: ('13.0 [live]', '11.0 [live ×3: 10.8–11.2]', ''), or one mark
    for both sides where they are marked alike: ('none', '1', ' [both live]')."""
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
    return _fit(f"{cut[0]} → {cut[1]}{mark}", room)


def _cut_sides(before: str, after: str, spare: int) -> tuple[str, str]:
    """Both sides in `spare` characters: where one is short it stays whole, else each gets half."""
    half = spare // 2
    if len(after) <= half:
        return _fit(before, spare - len(after)), after
    if len(before) <= half:
        return before, _fit(after, spare - len(before))
    return _fit(before, half), _fit(after, spare - half)


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
    return sorted(out, key=lambda b: (Version(b.release) if b.release else Version("0"), b.family.order))


def _fit(text: str, room: int) -> str:
    """Text cut at a word to fit `room` characters, with an ellipsis (values and ids only, never a PR number)."""
    if len(text) <= room:
        return text
    cut = text[: max(room - 1, 0)]
    if " " in cut[room // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;") + "…"


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
        return [_fit(f"{lead}{subject}:", width), CONTINUED + change_text(values, width - len(CONTINUED))]
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
    out: list[str] = []
    current = behaviour.lead(rollback, width)
    pending = behaviour.aspects()
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
    return [line.rstrip() for line in (*out, current)]


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
    out = [_fit(headline(upgrade), width), f"  {upgrade.counts()}"]
    out += [_fit(f"  {which}: {release_line(r)}", width) for which, r in (("from", b), ("to", a))]
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
        releases = sorted({s.release for c in upgrade.on_the_way for s in c.steps}, key=Version)
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


# The release a shipped recording was made on, as its file is named (tools/adopt_recordings.py: the server's
# gitVersion): <probe>--v1.27.3-live-<cluster>[...].json; with what follows it, so that v1.37.0's is no part of
# v1.37.0-rc.1's
RECORDING_RELEASE = re.compile(r"--v(\d+\.\d+\.\d+(?:-(?:alpha|beta|rc)\.\d+)?)-live-")


def shipped_by_release(recordings: Iterable[Path] | None = None) -> dict[Version, list[Path]]:
    """The shipped recordings (default: every one under probes/) by the release each was made on, read from its
    name: no file is opened. Every shipped recording is live (tests/test_recordings.py)."""
    found: dict[str, list[Path]] = {}
    for path in families.all_recordings() if recordings is None else recordings:
        if match := RECORDING_RELEASE.search(path.name):
            found.setdefault(match.group(1), []).append(path)
    return {KubeVersion.parse(release).version: files for release, files in found.items()}


def release_selection(recordings: Iterable[Path]) -> str:
    """pytest's -k keeping the replays of the recordings of these recordings' releases, by the release in their
    names ('(--v1.26.15-live- or --v1.27.0-rc.0-live-)': a test's id holds its recording's name); in parentheses,
    since a value that starts with '-' would be taken for an option."""
    said = {match.group(0) for path in recordings if (match := RECORDING_RELEASE.search(path.name))}
    return "(" + " or ".join(sorted(said)) + ")"


@dataclass(frozen=True)
class Atlas:
    """The shipped recordings as make upgrade reads them: the run records of those of the releases asked about,
    replayed now, and every release the others ran on, known from their names without replaying them."""

    records: list[JsonDict]
    shipped: dict[Version, list[Path]]

    @property
    def said(self) -> str:
        """Where the live observations come from, in words."""
        count = sum(len(files) for files in self.shipped.values())
        return f"live: {count} shipped recordings (probes/*/recordings/), replayed offline"

    def observations(self, extra: Sequence[JsonDict] = ()) -> Observations:
        """What the replayed records and `extra` (live run records) saw; the releases the shipped recordings not
        replayed ran on count among the live ones (make upgrade names the nearest of them)."""
        return Observations.of([*self.records, *extra], also_ran=self.shipped)


def atlas_records(releases: Collection[Version]) -> Atlas:
    """The shipped recordings of `releases` replayed now, in a temporary directory (an upgrade between two releases
    reads the observations of those two only), and of the others which releases they ran on."""
    shipped = shipped_by_release()
    chosen = [path for version, files in shipped.items() if version in releases for path in files]
    if not chosen:  # neither release ran here: nothing to replay
        return Atlas([], shipped)
    with tempfile.TemporaryDirectory(prefix="plp-atlas-") as directory:
        records = load_records([replay_atlas(Path(directory), release_selection(chosen))])
    return Atlas(records, shipped)
