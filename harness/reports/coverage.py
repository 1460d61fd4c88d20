"""Which claim version ranges a live run has been seen in, and which releases to build next for the rest.

A claim's expectations are stated per version range (one range, or several joined by "||": each part is one
range here). A range is only as true as a live run inside it, so a range *holds a live run* when a live
recording of a probe that observed the claim was made on a server whose version is in it. Per claim, not
per family: a recording covers only the claims its probe observed in it (the replay's verdicts say which;
a claim the probe found "not observable" there is not covered by it). A claim no recorded probe observes, in a
family with a probe not recorded live yet (the replay skips it), is taken for that probe's: the plan runs it.

The recordings are read by replaying them (`pytest probes --replay probes` in a child process, a few
seconds), so the probes themselves say which claims they observe, and the version is the one the server
reported. `make report` uses the same counting on the records it reads (`section_data`).

A row valued not observable (`not_observable: true`: the feature is absent or refused there) has nothing for a live
run to hold: its range is counted apart, neither among the ranges that hold a live run nor among those a run could
hold, and never planned.

A row that names the feature gates its value rests on (`gates:`) holds a live run only when every stretch of its
range over which those gates keep one state (the gate ledger, harness/axis/gates.py) holds one.

`make coverage --plan`: a greedy set cover of the ranges no live run holds, over the releases the suite knows
(every release of the release catalog from 1.21 on; before it the pinned node images and the versions the
recordings and expectation ranges name). A range older than what builds here (every version in it before 1.21)
is said so, not planned; so is a range no known release is in.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from harness.axis.gates import Stretch, refused_releases, stretches
from harness.axis.pinned import pinned_releases
from harness.axis.releases import first_catalogued, is_published, published_releases
from harness.axis.replay import replay
from harness.base import families, paths
from harness.base.versions import KubeVersion, Release, range_parts, release_name, version_range
from harness.clusters.kind.node_images import modules_tag
from harness.core.expectations import NOT_OBSERVABLE, PASS, Claim, load_claims
from harness.core.records import PROVIDER_ORDER, provider_of
from harness.gobuild.kubernetes import OLDEST_BUILT_HERE, not_built_here

if TYPE_CHECKING:
    pass

JsonDict = dict[str, Any]
TERMINAL_VERSIONS = 8  # more versions of one cluster kind in a range: the terminal shows their count and ends


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
        for verdict in record.get("verdicts") or []:
            key = (str(record["family"]), str(verdict["claim"]))
            found.probes.setdefault(key, set()).add(str(record["probe"]))
            version = KubeVersion.parse(str(verdict.get("server_version") or record["server_version"]))
            run = LiveRun(version, provider_of(record), str(record["probe"]), str(verdict.get("status")), where)
            held = found.unobservable if verdict.get("status") == NOT_OBSERVABLE else found.runs
            held.setdefault(key, []).append(run)
    return found


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
            runs, unobservable = observed.runs.get(key, []), observed.unobservable.get(key, [])
            for expectation in claim.expectations:
                for part in range_parts(expectation.versions):
                    inside = sorted(run for run in runs if run.version.satisfies(part))
                    missed = sorted(run for run in unobservable if run.version.satisfies(part))
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


# ----- The releases the suite knows, and the plan: which to build next.


def named_in_ranges(texts: Iterable[str]) -> set[Version]:
    """The versions ranges name as in them (>=, ==, <=): the releases that start or are a behaviour."""
    named = set()
    for text in texts:
        for specifiers in version_range(text):
            named |= {Version(s.version) for s in specifiers if s.operator in (">=", "==", "<=")}
    return named


def bisection_versions(directory: Path) -> set[Version]:
    """The releases the bisection records list as candidates (each between a known GOOD and BAD)."""
    found = set()
    for record in sorted(directory.glob("*.json")):
        data = json.loads(record.read_text())
        for version in [*(data.get("candidates") or []), *(t.get("version") for t in data.get("tried") or [])]:
            if version:
                found.add(KubeVersion.parse(str(version)).version)
    return found


KNOWN_NOT_BUILT_FILE = paths.REPO / "harness" / "known_not_built.json"


def known_not_built(path: Path = KNOWN_NOT_BUILT_FILE) -> dict[str, str]:
    """The committed releases tried here that did not build: release -> 'YYYY-MM-DD: why'."""
    releases = json.loads(path.read_text())["releases"]
    return {str(release): str(why) for release, why in releases.items()}


def not_buildable(
    bisections: Path | None = None, tools: Path | None = None, committed: Mapping[str, str] | None = None
) -> dict[Version, str]:
    """Releases known not to build here, each with why, from what is committed (so a fresh clone plans the same):
    the releases tried here that did not build (harness/known_not_built.json), the proxy's refusals of the tag
    that the gate ledger met, and the bisection records' skips that could not be built (only published releases:
    an old record also lists names that were never released, such as 1.31.0-alpha.4); then this machine's
    failed builds (.tools/kubernetes/not-built.json), which win, being newer. A release built here since is not
    one. `committed`: release -> why, instead of the two committed files."""
    tools = tools or paths.TOOLS
    if committed is None:
        committed = {**refused_releases(), **known_not_built()}
    found: dict[Version, str] = {KubeVersion.parse(r).version: why for r, why in committed.items()}
    for record in sorted((bisections or paths.REPO / "bisections").glob("*.json")):
        data = json.loads(record.read_text())
        finished = str((data.get("ran") or {}).get("finished") or "")[:10]
        for tried in data.get("tried") or []:
            why = str(tried.get("why") or "")
            published = is_published(KubeVersion.parse(str(tried["version"])).version)
            if tried.get("outcome") == "skip" and why.startswith("could not be built") and published:
                first_line = why.removeprefix("could not be built: ").splitlines()[0]
                found[KubeVersion.parse(str(tried["version"])).version] = f"{finished}: {first_line}"
    for release, why in not_built_here(tools).items():
        found[KubeVersion.parse(release).version] = why
    built = {KubeVersion.parse(b.parent.name.split("+")[0]).version for b in tools.glob("kubernetes/v*/build.json")}
    return {version: why for version, why in found.items() if version not in built}


def with_gaps_filled(versions: Iterable[Version]) -> set[Version]:
    """Releases numbered without gaps: a minor's patches from .0 up to the newest known, and a pre-release line's
    numbers (alpha.0 ... alpha.N) up to the newest known; every known minor also has its x.y.0."""
    known = set(versions)
    newest_patch: dict[tuple[int, int], int] = {}
    newest_pre: dict[tuple[int, int, int, str], int] = {}
    for v in known:
        if v.pre is None:
            newest_patch[(v.major, v.minor)] = max(newest_patch.get((v.major, v.minor), 0), v.micro)
        else:
            line = (v.major, v.minor, v.micro, v.pre[0])
            newest_pre[line] = max(newest_pre.get(line, 0), v.pre[1])
    filled = set(known)
    for (major, minor), newest in newest_patch.items():
        filled |= {Version(f"{major}.{minor}.{patch}") for patch in range(newest + 1)}
    for (major, minor, micro, word), newest in newest_pre.items():
        filled |= {Version(f"{major}.{minor}.{micro}{word}{n}") for n in range(newest + 1)}
    return filled


def known_releases(
    coverage: Coverage, observed: Observed, bisections: Path | None = None, also: Iterable[Version] = ()
) -> list[KubeVersion]:
    """The releases the suite knows, oldest first: every release of the release catalog (harness/releases.json,
    from 1.21.0-alpha.0 on), and before it the pinned node images, the server versions of live records and the
    versions the expectation ranges name, with the numbering's gaps filled. A name from 1.21 on that the catalog
    lacks (an old bisection record's 1.31.0-alpha.4, `also`) was never published and is not one."""
    named = {v.version for v in pinned_releases()} | set(also)
    named |= {KubeVersion.parse(v).version for v in observed.versions}
    named |= bisection_versions(bisections or paths.REPO / "bisections")
    named |= named_in_ranges(r.text for r in coverage.ranges)
    first = first_catalogued()
    older = {v for v in with_gaps_filled(v for v in named if v < first) if v < first}
    return sorted(KubeVersion.parse(release_name(v)) for v in older | {Version(r) for r in published_releases()})


@dataclass
class PlannedBuild:
    """One release to build and probe, the uncovered ranges it would cover, and how to run it."""

    release: KubeVersion
    covers: list[ClaimRange]
    pinned: bool  # a kind node image of it is pinned: kind runs it without a build

    def commands(self) -> list[str]:
        """The make commands that cover these ranges: a local cluster, and for kind-only probes a kind cluster."""
        version = self.release.text
        out = []
        if any(not r.kind_only for r in self.covers):
            out.append(f"make probe VERSION={version} CLUSTER=local")
        kind_families = sorted({r.family for r in self.covers if r.kind_only})
        if kind_families:
            selection = " or ".join(kind_families)
            if self.pinned:
                out.append(f'make probe VERSION={version} PROBE="{selection}"')
            else:
                tag = modules_tag(Release(self.release))
                out.append(f'make node-image VERSION={version} && make probe IMAGE={tag} PROBE="{selection}"')
        return out


@dataclass
class Plan:
    """Builds in the order that covers the most uncovered ranges per build, and the ranges no build covers."""

    builds: list[PlannedBuild]
    no_known_release: list[ClaimRange]
    older: list[ClaimRange]
    unchecked: list[ClaimRange]  # no probe checks the claim: no run can cover it
    passed_over: dict[str, str] = field(default_factory=dict)  # release -> why it does not build here
    # ranges whose only buildable releases were run and found the claim not observable: running them again won't do
    unobservable: list[ClaimRange] = field(default_factory=list)
    # ranges valued not observable: nothing for a live run to hold, so no build is planned for them
    nothing_to_hold: list[ClaimRange] = field(default_factory=list)

    @property
    def planned(self) -> int:
        return sum(len(b.covers) for b in self.builds)


def plan_builds(
    coverage: Coverage, releases: Sequence[KubeVersion], not_built: Mapping[Version, str] | None = None
) -> Plan:
    """A greedy set cover of the uncovered ranges by releases built here: each step takes the release inside the
    most ranges still uncovered (ties: a pinned kind image first, then a release before a pre-release, then the
    newest). A release known not to build here (`not_built`: release -> why) is not planned unless kind runs it
    from a pinned image; those it passed over for a range are listed with their reason. A range valued not
    observable is never planned: no run can add it."""
    uncovered = coverage.uncovered()
    older = [r for r in uncovered if r.older]
    unchecked = [r for r in uncovered if not r.older and not r.probes]
    wanted = [r for r in uncovered if not r.older and r.probes]
    not_built = not_built or {}
    pinned = {v.version for v in pinned_releases()}
    buildable = [
        v
        for v in releases
        if v.version >= OLDEST_BUILT_HERE.version and (v.version not in not_built or v.version in pinned)
    ]
    passed_over = {
        v.text: not_built[v.version]
        for v in releases
        if v not in buildable and v.version in not_built and any(r.contains(v) for r in wanted)
    }

    def tried(r: ClaimRange, v: KubeVersion) -> bool:
        return any(run.version.version == v.version for run in r.unobservable)

    inside = {v: [r for r in wanted if r.contains(v) and not tried(r, v)] for v in buildable}
    unplanned = [r for r in wanted if not any(r in ranges for ranges in inside.values())]
    unobservable = [r for r in unplanned if r.unobservable]
    no_known_release = [r for r in unplanned if not r.unobservable]
    left = [r for r in wanted if r not in unplanned]
    builds = []
    while left:
        best = max(
            buildable,
            key=lambda v: (
                sum(r in left for r in inside[v]),
                v.version in pinned,
                not v.version.is_prerelease,
                v.version,
            ),
        )
        covers = [r for r in inside[best] if r in left]
        builds.append(PlannedBuild(best, covers, best.version in pinned))
        left = [r for r in left if r not in covers]
    return Plan(builds, no_known_release, older, unchecked, passed_over, unobservable, coverage.nothing_to_hold())


# ----- Terminal output and the report's section.


def runs_text(runs: Sequence[LiveRun], most: int | None = None) -> str:
    """'local 1.21.14 1.22.17; kind 1.26.6': each version once per cluster kind, oldest first; a verdict other
    than pass is said after its version. With `most`, a cluster kind with more versions shows its count, its
    three oldest and two newest: 'local 22: 1.21.14 1.22.17 1.23.17 … 1.37.0 1.37.2'."""
    by_provider: dict[str, dict[str, str]] = {}
    for run in sorted(runs):
        shown = by_provider.setdefault(run.provider, {})
        version = run.version.text.lstrip("v")
        if run.status != PASS or version not in shown:
            shown[version] = version if run.status == PASS else f"{version} ({run.status})"
    parts = []
    for provider in sorted(by_provider, key=lambda p: (p not in PROVIDER_ORDER, p)):
        versions = list(by_provider[provider].values())
        if most is not None and len(versions) > most:
            parts.append(f"{provider} {len(versions)}: {' '.join(versions[:3])} … {' '.join(versions[-2:])}")
        else:
            parts.append(f"{provider} {' '.join(versions)}")
    return "; ".join(parts)


NOTHING_TO_HOLD = "valued not observable: nothing for a live run to hold"


def nothing_to_hold_text(claim_range: ClaimRange) -> str:
    """'valued not observable: nothing for a live run to hold; found so in the 2 live runs inside it: kind 1.21.14',
    and the runs that observed the claim there anyway (each contradicts the row)."""
    runs = [replace(run, status=PASS) for run in claim_range.unobservable]  # runs_text says other statuses
    found = f"; found so in the {len(runs)} live runs inside it: {runs_text(runs)}" if runs else ""
    observed = f"; yet observed in {runs_text(claim_range.runs)}" if claim_range.runs else ""
    return f"{NOTHING_TO_HOLD}{found}{observed}"


def why_not(claim_range: ClaimRange) -> str:
    """Why a range holds no live run, when the reason is not just that nobody ran it yet."""
    if claim_range.valued_not_observable:
        return f" ({nothing_to_hold_text(claim_range)})"
    if claim_range.older:
        return " (older than what builds here)"
    if not claim_range.probes:
        return " (no probe checks this claim)"
    if claim_range.unrecorded:
        return f" (no live recording yet of {', '.join(claim_range.probes)})"
    if claim_range.unobservable:
        runs = [replace(run, status=PASS) for run in claim_range.unobservable]  # runs_text says other statuses
        return f" (not observable in the {len(runs)} live runs inside it: {runs_text(runs)})"
    if claim_range.none_builds:
        return f" (none of the releases known in it builds here: {', '.join(claim_range.none_builds)}; PLAN=1 says why)"
    return ""


def mark_unbuildable(coverage: Coverage, releases: Sequence[KubeVersion], not_built: Mapping[Version, str]) -> None:
    """Mark each uncovered range whose known releases (from 1.21) are all known not to build here."""
    for claim_range in coverage.uncovered():
        inside = [v for v in releases if v.version >= OLDEST_BUILT_HERE.version and claim_range.contains(v)]
        if inside and all(v.version in not_built for v in inside) and not claim_range.older:
            claim_range.none_builds = tuple(v.text for v in inside)


def render(coverage: Coverage, uncovered_only: bool = False) -> str:
    """Family, then claim, then one line per range with its live runs or 'not seen live'; the figure last."""
    lines: list[str] = []
    width = max((len(r.text) for r in coverage.ranges), default=0) + 2
    family = claim = ""
    for r in coverage.ranges:
        if uncovered_only and r.covered:
            continue
        if r.family != family:
            family, claim = r.family, ""
            lines.append(r.family)
        if r.claim != claim:
            claim = r.claim
            lines.append(f"  {r.claim}")
        if r.valued_not_observable:
            seen = nothing_to_hold_text(r)
        elif r.runs:
            seen = runs_text(r.runs, most=TERMINAL_VERSIONS)
        else:
            seen = f"not seen live{why_not(r)}"
        lines.append(f"    {r.text:<{width}}{seen}")
        lines += [f"    {'':<{width}}no live run in the gate stretch {s.label}" for s in r.lacking if r.runs]
    return "\n".join(lines)


def summary(coverage: Coverage) -> str:
    """The closing figure, how it is counted, how many of the ranges without a run cannot be built here, and how
    many are valued not observable (not counted)."""
    older = sum(r.older for r in coverage.uncovered())
    return (
        f"{coverage.figure()} (per claim: a recording covers the claims its probe observed in it); of the "
        f"{len(coverage.uncovered())} without, {older} are older than what builds here (1.19, 1.20: kind only); "
        f"{len(coverage.nothing_to_hold())} more are {NOTHING_TO_HOLD}, not counted"
    )


def render_plan(plan: Plan, coverage: Coverage) -> str:
    """The builds in order, each with its commands and the ranges it covers, then what no build can cover."""
    uncovered = len(coverage.uncovered())
    lines = [
        f"plan: {len(plan.builds)} releases cover {plan.planned} of the {uncovered} ranges no live run holds "
        "(greedy: the most uncovered ranges per build)"
    ]
    for number, build in enumerate(plan.builds, 1):
        pinned = " (kind image pinned)" if build.pinned else ""
        lines.append(f"{number:>3}. {build.release.text:<18} +{len(build.covers)}{pinned}")
        lines += [f"       {command}" for command in build.commands()]
        lines += [f"         {r.label}" for r in build.covers]
    if plan.passed_over:
        lines.append(
            f"passed over, not built here (the proxy's answers change: `make probe VERSION=...` tries again): "
            f"{len(plan.passed_over)}"
        )
        lines += [f"         {release:<18} {why}" for release, why in plan.passed_over.items()]
    for title, ranges in (
        (
            "not observable on the releases inside that build here (run there already; see UNCOVERED=1)",
            plan.unobservable,
        ),
        ("no known release inside (or none that builds here)", plan.no_known_release),
        ("no probe checks the claim", plan.unchecked),
        ("older than what builds here (not planned; kind runs the pinned images inside)", plan.older),
    ):
        if ranges:
            lines.append(f"{title}: {len(ranges)}")
            lines += [f"         {r.label}{pinned_inside(r)}" for r in ranges]
    if plan.nothing_to_hold:
        lines.append(f"{NOTHING_TO_HOLD} (not planned, not counted): {len(plan.nothing_to_hold)}")
        lines += [f"         {r.label}" for r in plan.nothing_to_hold]
    return "\n".join(lines)


def pinned_inside(claim_range: ClaimRange) -> str:
    """' (pinned kind images: 1.19.16, 1.20.15)', or '' when no pinned image is in the range."""
    inside = sorted({v.version for v in pinned_releases() if claim_range.contains(v)})
    return f" (pinned kind images: {', '.join(str(v) for v in inside)})" if inside else ""


def section_for_records(
    records: Iterable[JsonDict], claims_loader: Callable[[str], Mapping[str, Claim]] = load_claims
) -> JsonDict:
    """The report's section for the records it reads: which claim ranges their live observations are in."""
    claims = {f.name: claims_loader(f.name) for f in families.families()}
    return section_data(claim_ranges(observed_in(records), claims))


def section_data(coverage: Coverage) -> JsonDict:
    """The report's section: the figure, and per family and claim each range with its runs or why not."""
    claims: list[JsonDict] = []
    for r in coverage.ranges:
        if not claims or (claims[-1]["family"], claims[-1]["claim"]) != (r.family, r.claim):
            claims.append({"family": r.family, "claim": r.claim, "ranges": []})
        claims[-1]["ranges"].append(
            {
                "versions": r.text,
                "covered": r.covered,
                "runs": runs_text(r.runs),
                "why_not": why_not(r).strip(" ()"),
                "nothing_to_hold": r.valued_not_observable,
            }
        )
    return {
        "figure": coverage.figure(),
        "covered": coverage.covered,
        "total": len(coverage.holdable),
        "nothing_to_hold": len(coverage.nothing_to_hold()),
        "claims": claims,
    }
