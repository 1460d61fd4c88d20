"""`make upgrade FROM=1.26 TO=1.28`: what changes for the suite's claims between two releases, in words.

Each side is a release: a minor resolves as `make probe` resolves it (its newest pinned node image), a patch is
itself. A claim's behaviour on a release is its expectation there (probes/*/expectations.yaml); where a live
recording of that very release exists its observation is said too, and whether it agrees. The releases where a
claim changes on the way are the boundaries of its expectations' version ranges between the two, with the PRs
their sources cite. A claim a race of the release decides (an expectation that is `one_of`) is kept apart: its
value may differ from run to run.

The live observations come from run records: by default those of the shipped recordings (the atlas), replayed
offline here (`replay_atlas`); `make upgrade RUNS=...` adds the run records of live runs.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import Version

from harness.base import families, paths
from harness.base.versions import KubeVersion, VersionError, resolve_image, version_range
from harness.core.expectations import FAIL, NOT_OBSERVABLE, PASS, Claim, Expectation, evaluate, load_claims
from harness.reports.records import load_records, origin_kind
from harness.reports.wording import expected_words, pull_requests, words

JsonDict = dict[str, Any]
PRE_RELEASE_WORDS = {"a": "alpha", "b": "beta", "rc": "rc"}


@dataclass(frozen=True)
class Release:
    """One side of an upgrade: what was asked (1.26) and the release it stands for (v1.26.15), and how."""

    asked: str
    version: KubeVersion
    how: str  # "the newest pinned node image of 1.26", "as given", ...

    @property
    def name(self) -> str:
        return "v" + str(self.version).lstrip("v")


@dataclass(frozen=True)
class Seen:
    """A live observation of a claim on a release, judged against the expectation there."""

    value: Any
    status: str  # pass, fail, undecided
    where: str  # the recording or run it comes from


@dataclass(frozen=True)
class Side:
    """A claim on one release: what is expected there and what was seen live there (possibly nothing)."""

    release: Release
    expectation: Expectation | None
    seen: tuple[Seen, ...]

    @property
    def live(self) -> bool:
        return bool(self.seen)

    @property
    def disagrees(self) -> bool:
        return any(s.status == FAIL for s in self.seen)


@dataclass(frozen=True)
class Step:
    """A release between the two where the claim's expectation changes: its first release and the new one."""

    release: str  # Kubernetes spelling: 1.27.0-rc.0
    expectation: Expectation | None
    reason: str  # "k/k#115331", or the new expectation's first source where it cites no PR


@dataclass(frozen=True)
class ClaimChange:
    """A claim between two releases: both sides and every release on the way where its expectation changes."""

    claim: Claim
    family: families.Family
    before: Side
    after: Side
    steps: tuple[Step, ...]

    @property
    def changes(self) -> bool:
        """The behaviour differs between the two releases."""
        return bool(outcome_key(self.before.expectation) != outcome_key(self.after.expectation))

    @property
    def race(self) -> bool:
        """A race of either release decides the value (a one_of expectation): it may differ run to run."""
        return any(side.expectation is not None and bool(side.expectation.one_of) for side in (self.before, self.after))


@dataclass
class Upgrade:
    """Every claim between two releases, sorted into what the upgrade changes and what it does not."""

    before: Release
    after: Release
    claims: list[ClaimChange]
    sources: list[str] = field(default_factory=list)  # where the live observations come from, in words

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


# ------------------------------------------------------------------------------------------ releases


def resolve(text: str, what: str, live_versions: Iterable[str] = ()) -> Release:
    """FROM or TO as a release: a minor as `make probe` resolves it (its newest pinned node image), a patch as
    given when it has a pinned image or a live recording; anything else is refused (VersionError)."""
    if not text.strip():
        raise VersionError(f"no {what} given: say which releases to compare, e.g. make upgrade FROM=1.26 TO=1.28")
    wanted = KubeVersion.parse(text)
    exact = wanted.text.lstrip("v").count(".") >= 2
    try:
        image = resolve_image(text)
    except VersionError as err:
        recorded = [KubeVersion.parse(v) for v in live_versions]
        if exact and any(v.version == wanted.version for v in recorded):
            return Release(text, wanted, "as given (a live recording, no pinned node image)")
        raise VersionError(str(err).replace("VERSION=", f"{what}=")) from None
    if exact:
        return Release(text, image.kubernetes, "as given")
    return Release(text, image.kubernetes, "a minor's newest pinned node image, as make probe resolves it")


def kubernetes_spelling(version: Version) -> str:
    """1.27.0rc0 as Kubernetes writes it: 1.27.0-rc.0."""
    base = ".".join(str(part) for part in (*version.release, 0, 0)[:3])
    if version.pre is None:
        return base
    return f"{base}-{PRE_RELEASE_WORDS[version.pre[0]]}.{version.pre[1]}"


def _successor(version: Version) -> Version:
    """The release right after one (1.23.0 -> 1.23.1, 1.24.0-alpha.1 -> 1.24.0-alpha.2): where an `==` range ends."""
    major, minor, patch = (*version.release, 0, 0)[:3]
    if version.pre is not None:
        return Version(f"{major}.{minor}.{patch}{version.pre[0]}{version.pre[1] + 1}")
    return Version(f"{major}.{minor}.{patch + 1}")


def boundaries(claim: Claim) -> list[Version]:
    """Every release where one of the claim's version ranges starts or ends, in order."""
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
    matching = [e for e in claim.expectations if version.satisfies(e.versions)]
    return matching[0] if len(matching) == 1 else None


def outcome_key(expectation: Expectation | None) -> Any:
    """What an expectation says, for comparing two: its value, its bounds, its outcomes (not its sources)."""
    if expectation is None:
        return None
    return (repr(expectation.value), expectation.between, tuple(outcome_key(o) for o in expectation.one_of))


def steps_between(claim: Claim, before: KubeVersion, after: KubeVersion) -> tuple[Step, ...]:
    """The releases in (before, after] where the claim's expectation changes, each with the new one."""
    current = expectation_on(claim, before)
    steps = []
    for point in boundaries(claim):
        if not before.version < point <= after.version:
            continue
        release = kubernetes_spelling(point)
        now = expectation_on(claim, KubeVersion.parse(release))
        if outcome_key(now) != outcome_key(current):
            steps.append(Step(release, now, step_reason(now)))
            current = now
    return tuple(steps)


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


def replay_atlas(out: Path, recordings: Path = paths.REPO / "probes") -> Path:
    """Every probe on the shipped recordings, offline (a few seconds): the run records go under `out`."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "probes",
            "--replay",
            str(recordings),
            "--run-dir",
            str(out),
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=paths.REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-15:])
        raise RuntimeError(f"replaying the shipped recordings failed (exit {proc.returncode}):\n{tail}")
    return out


def live_observations(records: Iterable[JsonDict]) -> dict[tuple[str, str], list[Seen]]:
    """(claim id, release) -> what live records observed there, judged against the current expectations."""
    found: dict[tuple[str, str], list[Seen]] = {}
    for record in records:
        version = record.get("server_version")
        if not version or origin_kind(record) != "live":
            continue
        try:
            claims = load_claims(record["family"])
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


def compare(before: Release, after: Release, records: Sequence[JsonDict], sources: Sequence[str] = ()) -> Upgrade:
    """Every claim of every family between the two releases."""
    seen = live_observations(records)
    out = []
    for family in families.families():
        for claim in load_claims(family.name).values():
            sides = [
                Side(
                    release,
                    expectation_on(claim, release.version),
                    tuple(seen.get((claim.id, str(release.version.version)), ())),
                )
                for release in (before, after)
            ]
            steps = steps_between(claim, before.version, after.version)
            out.append(ClaimChange(claim, family, sides[0], sides[1], steps))
    return Upgrade(before, after, out, list(sources))


# ------------------------------------------------------------------------------------------ words


def seen_words(side: Side) -> str:
    """What was seen live on a side where it differs from what is expected there, or where a race decides it."""
    race = side.expectation is not None and bool(side.expectation.one_of)
    shown = sorted({words(s.value) for s in side.seen if race or s.status != PASS})
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
        return f"changed in {change.steps[0].release} ({change.steps[0].reason})"
    return "on the way: " + "; ".join(
        f"from {s.release} {expected_words(s.expectation)} ({s.reason})" for s in change.steps
    )


def line(change: ClaimChange) -> str:
    """One claim's change as one line: before -> after, where it changed and why, and what it rests on."""
    before = expected_words(change.before.expectation) + seen_words(change.before)
    after = expected_words(change.after.expectation) + seen_words(change.after)
    what = f"{before} → {after}" if change.changes else f"{before} on both"
    parts = [what, steps_words(change) if change.steps else "", basis_words(change)]
    return f"{change.claim.id} — {observable_words(change.claim)}: " + "; ".join(p for p in parts if p)


def render_text(upgrade: Upgrade) -> str:
    """The terminal answer: what changes, then the race-decided claims, then what differs only on the way."""
    b, a = upgrade.before, upgrade.after
    how = f"both {b.how}" if b.how == a.how else f"{b.asked}: {b.how}; {a.asked}: {a.how}"
    out = [f"Upgrading Kubernetes {b.asked} → {a.asked}: {b.name} → {a.name}", f"  ({how})"]
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
    if upgrade.same_race:
        ids = ", ".join(c.claim.id for c in upgrade.same_race)
        out += ["", f"Decided by the same race on both (no change; may differ run to run): {ids}"]
    if upgrade.disagreeing:
        ids = ", ".join(c.claim.id for c in upgrade.disagreeing)
        out += ["", f"Seen live otherwise than expected on {b.name} or {a.name}: {ids}"]
    unchanged = len(upgrade.claims) - len(upgrade.changed) - len(upgrade.raced) - len(upgrade.on_the_way)
    out += ["", f"The other {unchanged} of the {len(upgrade.claims)} claims behave the same on both releases."]
    return "\n".join(out) + "\n"


def atlas_records() -> tuple[list[JsonDict], str]:
    """The run records of the shipped recordings, replayed now in a temporary directory, and how many."""
    with tempfile.TemporaryDirectory(prefix="plp-atlas-") as directory:
        records = load_records([replay_atlas(Path(directory))])
    return records, f"live: {len(records)} shipped recordings (probes/*/recordings/), replayed offline"
