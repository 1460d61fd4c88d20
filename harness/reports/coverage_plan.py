"""`make coverage PLAN=1`: which releases to build and probe next, in the order that covers the most claim ranges no
live run holds per build (a greedy set cover), with the make commands for each, and the ranges no build can cover
(older than what builds here, no known release inside, no probe checking the claim, already found not observable).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from packaging.version import Version

from harness.axis.pinned import pinned_releases
from harness.base.versions import KubeVersion, Release
from harness.clusters.kind.node_images import modules_tag
from harness.gobuild.kubernetes import OLDEST_BUILT_HERE
from harness.reports.coverage import ClaimRange, Coverage


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
    # Ranges are compared as the lists held them (by equality), through the index of each one's first equal in
    # `wanted`: sets of those indexes instead of lists searched range by range (the greedy loop compared ranges
    # 750,000 times over the shipped recordings' coverage, 15 s of CPU).
    same = equal_ranges(wanted)
    somewhere = {same[id(r)] for ranges in inside.values() for r in ranges}
    unplanned = [r for r in wanted if same[id(r)] not in somewhere]
    unobservable = [r for r in unplanned if r.unobservable]
    no_known_release = [r for r in unplanned if not r.unobservable]
    left_ids = set(somewhere)  # the ranges (by their first equal's index) a build still has to cover
    builds = []
    while left_ids:
        best = max(
            buildable,
            key=lambda v: (
                sum(same[id(r)] in left_ids for r in inside[v]),
                v.version in pinned,
                not v.version.is_prerelease,
                v.version,
            ),
        )
        covers = [r for r in inside[best] if same[id(r)] in left_ids]
        builds.append(PlannedBuild(best, covers, best.version in pinned))
        left_ids -= {same[id(r)] for r in covers}
    return Plan(builds, no_known_release, older, unchecked, passed_over, unobservable, coverage.nothing_to_hold())


def equal_ranges(ranges: Sequence[ClaimRange]) -> dict[int, int]:
    """For each range (by id()), the index in `ranges` of the first range equal to it: equal ranges share one."""
    first: dict[tuple[str, str, str], list[int]] = {}  # (family, claim, range text): the indexes of unequal ones
    same: dict[int, int] = {}
    for index, claim_range in enumerate(ranges):
        group = first.setdefault((claim_range.family, claim_range.claim, claim_range.text), [])
        equal = next((i for i in group if ranges[i] == claim_range), None)
        if equal is None:
            group.append(index)
        same[id(claim_range)] = index if equal is None else equal
    return same
