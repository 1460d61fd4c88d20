"""Which claim version ranges a live run has been seen in, and which releases to build next for the rest.

A claim's expectations are stated per version range (one range, or several joined by "||": each part is one
range here). A range is only as true as a live run inside it, so a range *holds a live run* when a live
recording of a probe that observed the claim was made on a server whose version is in it. Per claim, not
per family: a recording covers only the claims its probe observed in it (the replay's verdicts say which;
a claim the probe found "not observable" there is not covered by it). A claim no recorded probe observes, in a
family with a probe not recorded live yet (the replay skips it), is taken for that probe's: the plan runs it.

The recordings are read by replaying them (`pytest probes --replay probes` in a child process, a few
seconds), so the probes themselves say which claims they observe, and the version is the one the server
reported. `make report` uses the same counting on the records it reads (coverage_words.py `section_for_records`).

A row valued not observable (`not_observable: true`: the feature is absent or refused there) has nothing for a live
run to hold: its range is counted apart, neither among the ranges that hold a live run nor among those a run could
hold, and never planned.

A row that names the feature gates its value rests on (`gates:`) holds a live run only when every stretch of its
range over which those gates keep one state (the gate ledger, harness/axis/gates.py) holds one.

Which releases the suite knows and which of them build here is coverage_releases.py's; the build plan for the ranges
no live run holds (`make coverage PLAN=1`: a greedy set cover) coverage_plan.py's; the lines printed and the report's
section coverage_words.py's.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import Version

from harness.axis.gates import Stretch, stretches
from harness.axis.replay import replay
from harness.base import families
from harness.base.versions import KubeVersion, range_parts, version_range
from harness.core.expectations import NOT_OBSERVABLE, Claim, load_claims
from harness.core.records import provider_of
from harness.gobuild.kubernetes import OLDEST_BUILT_HERE

JsonDict = dict[str, Any]


class CoverageError(RuntimeError):
    """The recordings could not be replayed; the message says what the replay said."""


@dataclass(frozen=True, order=True)
class LiveRun:
    """A live recording in which a probe observed a claim: the server's version, the cluster kind, the verdict."""

    version: KubeVersion
    provider: str  # "local", "kind", or "existing"
    probe: str
    status: str  # the verdict of its replay: pass, fail or undecided
    recording: str


@dataclass
class Observed:
    """What replaying live records found: the runs per claim, which probes check each claim, which probes run
    only on kind (the graceful-node-shutdown cluster; a local cluster skips them), and which have no record."""

    runs: dict[tuple[str, str], list[LiveRun]] = field(default_factory=dict)  # (family, claim) -> runs
    # (family, claim) -> the live runs whose probe found the claim not observable (they cover nothing)
    unobservable: dict[tuple[str, str], list[LiveRun]] = field(default_factory=dict)
    probes: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # (family, claim) -> probes checking it
    kind_only: set[str] = field(default_factory=set)
    versions: set[str] = field(default_factory=set)  # every server version a live record names
    unrecorded: dict[str, set[str]] = field(default_factory=dict)  # family -> probes collected but never recorded


@dataclass
class ClaimRange:
    """One range of one claim's expectations, and the live runs inside it."""

    family: str
    claim: str
    text: str  # as written in expectations.yaml (one part of a "||" union)
    runs: list[LiveRun]
    probes: tuple[str, ...]  # the probes that check the claim
    kind_only: bool  # all of them run only on kind: a local cluster cannot cover the range
    unrecorded: bool = False  # `probes` are its family's probes not recorded live yet (none recorded checks it)
    none_builds: tuple[str, ...] = ()  # every known release inside is known not to build here (mark_unbuildable)
    unobservable: list[LiveRun] = field(default_factory=list)  # live runs inside that found the claim not observable
    # where the row names the gates its value rests on: the range cut where their states change (gate ledger)
    stretches: tuple[Stretch, ...] = ()
    valued_not_observable: bool = False  # the row says the claim cannot be observed there: nothing for a run to hold

    @property
    def lacking(self) -> list[Stretch]:
        """The gate stretches no live run is in (none when the row names no gate)."""
        return [s for s in self.stretches if not any(s.holds(run.version) for run in self.runs)]

    @property
    def covered(self) -> bool:
        """A live run inside, and one in every stretch of the named gates' states (never a range valued not
        observable: a run observing its claim there contradicts the row, it does not hold it)."""
        return bool(self.runs) and not self.lacking and not self.valued_not_observable

    @property
    def older(self) -> bool:
        """Every version in it is older than the oldest release built here (1.21): kind's pinned images only."""
        return older_than_built_here(self.text)

    def contains(self, version: KubeVersion) -> bool:
        """In the range, and, once a run is in it, in a gate stretch still without one (what a build would add)."""
        if not version.satisfies(self.text):
            return False
        lacking = self.lacking
        return not (self.runs and lacking) or any(s.holds(version) for s in lacking)

    @property
    def label(self) -> str:
        """'fam claim >=1.26.0-beta.0', and the gate stretches still without a run when others have one."""
        lacking = "; ".join(s.label for s in self.lacking) if self.runs else ""
        return f"{self.family} {self.claim} {self.text}" + (f" (no live run in {lacking})" if lacking else "")


@dataclass
class Coverage:
    """Every claim range, in the families' reading order, each with its live runs."""

    ranges: list[ClaimRange]

    @property
    def holdable(self) -> list[ClaimRange]:
        """The ranges a live run could hold: all but those valued not observable."""
        return [r for r in self.ranges if not r.valued_not_observable]

    @property
    def covered(self) -> int:
        return sum(r.covered for r in self.ranges)

    def figure(self) -> str:
        """'167 of 221 claim version ranges hold a live run': of the ranges a run could hold."""
        return f"{self.covered} of {len(self.holdable)} claim version ranges hold a live run"

    def uncovered(self) -> list[ClaimRange]:
        """The ranges a live run could hold and none does yet."""
        return [r for r in self.holdable if not r.covered]

    def nothing_to_hold(self) -> list[ClaimRange]:
        """The ranges valued not observable: counted apart, never planned."""
        return [r for r in self.ranges if r.valued_not_observable]


def older_than_built_here(text: str) -> bool:
    """Whether no version in the range can be built here: it holds no version from 1.21.0-alpha.0 on."""
    (specifiers,) = version_range(text)
    floor = OLDEST_BUILT_HERE.version
    if specifiers.contains(floor, prereleases=True):
        return False
    return not any(s.operator in (">", ">=", "==", "~=") and Version(s.version) >= floor for s in specifiers)


def observed_in(
    records: Iterable[JsonDict], kind_only: Iterable[str] = (), collected: Mapping[str, str] | None = None
) -> Observed:
    """The live runs per claim in probe records (replays of live recordings, or live runs themselves).
    `collected`: every probe the replay collected, with its family; those no record names are unrecorded."""
    records = list(records)
    found = Observed(kind_only=set(kind_only))
    named = {str(record.get("probe")) for record in records}
    for probe, family in (collected or {}).items():
        if probe not in named:
            found.unrecorded.setdefault(family, set()).add(probe)
    for record in records:
        origin = record.get("recording_origin") or {}
        live = origin.get("kind") == "live" or (not origin and record.get("transport") == "live")
        if not live or not record.get("server_version"):
            continue
        found.versions.add(str(record["server_version"]))
        where = str(origin.get("file") or (record.get("provenance") or {}).get("run_id") or "")
        provider = provider_of(record)  # the record's, read once for all its verdicts
        for verdict in record.get("verdicts") or []:
            key = (str(record["family"]), str(verdict["claim"]))
            found.probes.setdefault(key, set()).add(str(record["probe"]))
            version = KubeVersion.parse(str(verdict.get("server_version") or record["server_version"]))
            run = LiveRun(version, provider, str(record["probe"]), str(verdict.get("status")), where)
            held = found.unobservable if verdict.get("status") == NOT_OBSERVABLE else found.runs
            held.setdefault(key, []).append(run)
    return found


def in_order(runs: Iterable[LiveRun]) -> list[LiveRun]:
    """The runs in LiveRun's order (version, cluster kind, probe, verdict, recording), sorted by a key of plain
    values: each release ranked once, so a comparison is not three dataclasses' methods and packaging's (a report's
    claim ranges sort the verdicts of every live record, some ten thousand runs)."""
    runs = list(runs)
    rank = {version: i for i, version in enumerate(sorted({run.version.version for run in runs}))}
    return sorted(
        runs, key=lambda r: (rank[r.version.version], r.version.text, r.provider, r.probe, r.status, r.recording)
    )


def claim_ranges(observed: Observed, claims: Mapping[str, Mapping[str, Claim]] | None = None) -> Coverage:
    """Every range of every claim with the live runs inside it. `claims`: family -> claims (default: probes/)."""
    by_family = claims if claims is not None else {f.name: load_claims(f.name) for f in families.families()}
    ranges = []
    for family, family_claims in by_family.items():
        for claim in family_claims.values():
            key = (family, claim.id)
            probes = tuple(sorted(observed.probes.get(key, ())))
            unrecorded = not probes and bool(observed.unrecorded.get(family))
            if unrecorded:
                probes = tuple(sorted(observed.unrecorded[family]))
            kind_only = bool(probes) and all(p in observed.kind_only for p in probes)
            runs, unobservable = in_order(observed.runs.get(key, [])), in_order(observed.unobservable.get(key, []))
            for expectation in claim.expectations:
                for part in range_parts(expectation.versions):
                    inside = [run for run in runs if run.version.satisfies(part)]
                    missed = [run for run in unobservable if run.version.satisfies(part)]
                    cut = tuple(stretches(expectation.gates, part)[0]) if expectation.gates else ()
                    ranges.append(
                        ClaimRange(
                            family,
                            claim.id,
                            part,
                            inside,
                            probes,
                            kind_only,
                            unrecorded,
                            unobservable=missed,
                            stretches=cut if len(cut) > 1 else (),
                            valued_not_observable=expectation.not_observable,
                        )
                    )
    return Coverage(ranges)


# ----- Reading the shipped recordings: a replay of every one, in a child pytest.


def replay_recordings(recordings: Path | None = None, timeout: float = 1800) -> Observed:
    """Replay the probes on every recording under `recordings` (default: probes/, all the shipped ones) in a child
    pytest, and read what each observed."""
    records, kind_only, collected = replay_records(recordings, timeout)
    return observed_in(records, kind_only, collected)


def replay_records(
    recordings: Path | None = None, timeout: float = 1800, run_dir: Path | None = None
) -> tuple[list[JsonDict], list[str], dict[str, str]]:
    """(the probe records of a replay of every recording under `recordings`, default probes/; the probes that run
    only on kind; every probe collected, with its family), from a child pytest (harness/axis/replay.py). The run
    records are left under `run_dir` when it is given (the offline tests share one replay so), else in a scratch
    folder removed after. A replay that could not run raises CoverageError with pytest's last words."""
    root = recordings or families.FAMILIES_ROOT
    with tempfile.TemporaryDirectory(prefix="plp-coverage-") as scratch:
        replayed = replay(run_dir or Path(scratch) / "runs", root, timeout=timeout)
    if replayed.exit_code not in (0, 1) or not replayed.records:
        lines = [line for line in (replayed.stderr + replayed.stdout).splitlines() if line.strip()]
        raise CoverageError(f"replaying the recordings under {root} failed: {' | '.join(lines[-3:])}")
    return replayed.records, replayed.kind_only, replayed.collected
