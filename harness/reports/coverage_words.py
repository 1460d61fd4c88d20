"""`make coverage`'s words: each claim range with the live runs inside it or why it has none, the closing figure, the
build plan (coverage_plan.py) in lines, and the same ranges as the data of the report's section.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from harness.axis.pinned import pinned_releases
from harness.base import families
from harness.core.expectations import PASS, Claim, load_claims
from harness.core.records import PROVIDER_ORDER
from harness.reports.coverage import ClaimRange, Coverage, LiveRun, claim_ranges, in_order, observed_in
from harness.reports.coverage_plan import Plan
from harness.reports.kept import KeptWith

JsonDict = dict[str, Any]
TERMINAL_VERSIONS = 8  # more versions of one cluster kind in a range: the terminal shows their count and ends


def runs_text(runs: Sequence[LiveRun], most: int | None = None) -> str:
    """'local 1.21.14 1.22.17; kind 1.26.6': each version once per cluster kind, oldest first; a verdict other
    than pass is said after its version. With `most`, a cluster kind with more versions shows its count, its
    three oldest and two newest: 'local 22: 1.21.14 1.22.17 1.23.17 … 1.37.0 1.37.2'."""
    by_provider: dict[str, dict[str, str]] = {}
    for run in in_order(runs):
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
    """The report's section for the records it reads: which claim ranges their live observations are in; the one
    made before for the very same records and claims (_SECTIONS)."""
    records = list(records)
    claims = {f.name: claims_loader(f.name) for f in families.families()}
    return _SECTIONS.get((*records, *claims.values()), lambda: section_data(claim_ranges(observed_in(records), claims)))


# The sections made in this process for the very same records and claims: a replay's records read again are the same
# records (load_records), which the tests report again and again in-process (72 ms of CPU a section of the shared
# replay).
_SECTIONS: KeptWith[JsonDict] = KeptWith(16)


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
