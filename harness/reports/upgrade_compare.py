"""What live records saw, by claim and release (Observations), and the claims compared between two releases over
them (compare): the reading upgrade_model.py models, made for `make upgrade`, report.md and report.html alike."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from packaging.version import Version

from harness.base import families
from harness.base.versions import KubeVersion
from harness.core.basis import Doubt
from harness.core.expectations import NOT_OBSERVABLE, Claim, evaluate, load_claims
from harness.core.records import JsonDict, origin_kind, origin_of
from harness.reports.kept import KeptWith
from harness.reports.upgrade_model import (
    ClaimChange,
    Seen,
    Side,
    Upgrade,
    UpgradeEnd,
    claim_reading,
    claim_steps,
    nearest_live,
    release_key,
    worked_out_once,
)


def live_observations(
    records: Iterable[JsonDict], claims_loader: Any = load_claims
) -> dict[tuple[str, str], list[Seen]]:
    """(claim id, release) -> what live records observed there, judged against the current expectations."""
    found: dict[tuple[str, str], list[Seen]] = {}
    for record in records:
        for key, seen in _judged(record, claims_loader):
            found.setdefault(key, []).append(seen)
    return found


# What each record's live observations were judged with the claims' loader they were judged by: make upgrade's
# command run in-process (the offline tests: a pair of releases after another, the records of each read once,
# load_records) judged the same records again at each run.
_JUDGED: KeptWith[list[tuple[tuple[str, str], Seen]]] = KeptWith(10_000)  # four replays of every shipped recording


def _judged(record: JsonDict, claims_loader: Any) -> list[tuple[tuple[str, str], Seen]]:
    """A record's live observations, each (claim id, release) with what was seen, judged once a record and loader."""
    return _JUDGED.get((record, claims_loader), lambda: _judge(record, claims_loader))


def _judge(record: JsonDict, claims_loader: Any) -> list[tuple[tuple[str, str], Seen]]:
    version = record.get("server_version")
    if not version or origin_kind(record) != "live":
        return []
    try:
        claims = claims_loader(record["family"])
    except families.FamilyError:
        return []
    release = str(KubeVersion.parse(version).version)
    where = str((record.get("recording_origin") or {}).get("file") or (record.get("provenance") or {}).get("run_id"))
    out = []
    for verdict in record.get("verdicts", []):
        claim = claims.get(verdict["claim"])
        if claim is None or verdict["status"] == NOT_OBSERVABLE:
            continue
        doubt = Doubt.from_record(verdict.get("detail"))  # the gaps it was judged with, as the report reads them
        judged = evaluate(claim, KubeVersion.parse(version), verdict["observed"], doubt)
        out.append(((claim.id, release), Seen(verdict["observed"], judged.status, where)))
    return out


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

    def sides_on(self, release: UpgradeEnd) -> dict[int, tuple[Claim, Side, int]]:
        """The claims on a release as compare made them for these observations, by the claim's id() (the claim kept
        beside its side, so that its id() is not reused), each with how many of its boundaries are at or before the
        release (claim_reading): make upgrade's every pair of releases, and a report's every pair of columns, meet each
        release again and again."""
        sides: dict[UpgradeEnd, dict[int, tuple[Claim, Side, int]]] = worked_out_once(self, "_sides", dict)
        return sides.setdefault(release, {})


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
    keys = [release_key(release.version) for release in (before, after)]  # str() of a Version is slow: once
    made_before, made_after = observed.sides_on(before), observed.sides_on(after)
    out = []
    for family in families.families():
        try:
            claims = claims_loader(family.name)
        except (families.FamilyError, KeyError):  # a report's loader may know only the families it read
            continue
        for claim in claims.values():
            if only is not None and claim.id not in only:
                continue
            # each side as made before for the release (most, at every pair of releases), else _side makes it
            known = made_before.get(id(claim))
            if known is None or known[0] is not claim:
                known = _side(claim, before, keys[0], observed, made_before)
            _, side_before, first_before = known
            known = made_after.get(id(claim))
            if known is None or known[0] is not claim:
                known = _side(claim, after, keys[1], observed, made_after)
            _, side_after, first_after = known
            if rollback:  # as steps_between: the boundaries in (after, before], from the expectation on after
                steps = claim_steps(claim, side_after.expectation, first_after, first_before)
            else:
                steps = claim_steps(claim, side_before.expectation, first_before, first_after)
            out.append(ClaimChange(claim, family, side_before, side_after, steps, rollback))
    return Upgrade(before, after, out, list(sources))


def _side(
    claim: Claim, release: UpgradeEnd, key: str, observed: Observations, made: dict[int, tuple[Claim, Side, int]]
) -> tuple[Claim, Side, int]:
    """The claim on a release (`key`: its release_key) with what was seen live there, and how many of its
    boundaries are at or before the release, made once (`made`: Observations.sides_on the release)."""
    known = made.get(id(claim))
    if known is None or known[0] is not claim:
        expectation, first = claim_reading(claim, release.version)
        side = Side(release, expectation, tuple(observed.seen.get((claim.id, key), ())))
        known = made[id(claim)] = (claim, side, first)
    return known


def _with_runtimes(release: UpgradeEnd, observed: Observations) -> UpgradeEnd:
    """The release with the runtimes it ran on live, or the nearest releases that did."""
    ran = observed.runtimes.get(release_key(release.version), ())
    nearest = () if ran else nearest_live(release.version, observed.releases)
    return UpgradeEnd(release.asked, release.version, release.how, ran, nearest)
