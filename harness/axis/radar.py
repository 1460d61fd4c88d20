"""make radar: the newest Kubernetes pre-release, probed beside the newest release, claim by claim.

The pre-release is found through the Go module proxy, the way local builds resolve releases
(harness/gobuild/): the proxy's list of k8s.io/kubernetes versions names the newest release, and the
pre-releases of its minor and the next two that the release catalog holds (harness/releases.json, read from the
CHANGELOGs) are asked for by name, since the list can lack pre-releases the proxy serves; a name the catalog lacks
was never published and is not asked for. The newest served one is built (CLUSTER=local: from its Go modules;
kind: a node image, SOURCE=release from the release binaries); one that cannot be built is said in one line and
the next newest is tried. Every probe runs on it (one `python -m harness probe`), and each claim is compared with
the newest release's observation (harness/axis/compare.py, as tools/compare_runs.py compares): the shipped live
recordings of the newest release they hold, replayed, or a run given or made beside it.

Each claim that differs is reported with what the expectations say of the pre-release: the range that holds it
and the PRs that range cites, or "no expectation yet" when no range holds it or the one range that does also
holds the newest release (the change is not in the expectations yet).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.axis.compare import Verdicts, differing, verdicts_of
from harness.axis.releases import published_releases
from harness.base import families
from harness.base.versions import KubeVersion
from harness.core.expectations import (
    FAIL,
    PASS,
    UNDECIDED,
    Claim,
    load_claims,
    pull_requests,
)
from harness.core.records import provider_of

JsonDict = dict[str, Any]
MINORS_AHEAD = (0, 1, 2)  # the newest release's minor and the next two: their x.y.0 pre-releases are asked for


def newest_release(listed: Iterable[str]) -> KubeVersion | None:
    """The newest release (not a pre-release) among versions, or None."""
    releases = [KubeVersion.parse(v) for v in listed if not KubeVersion.parse(v).version.is_prerelease]
    return max(releases, default=None)


def pre_release_candidates(listed: Sequence[str], release: KubeVersion) -> list[str]:
    """The pre-releases to ask the proxy about, newest first: those it lists, and the x.y.0 pre-releases the
    release catalog (harness/releases.json, from the CHANGELOGs) holds of the newest release's minor and the next
    two. No name is guessed: a pre-release newer than the catalog is found once tools/release_catalog.py reads it."""
    minors = {(release.version.major, release.version.minor + ahead) for ahead in MINORS_AHEAD}
    names = {
        f"v{name}"
        for name in published_releases()
        if (v := KubeVersion.parse(name).version).is_prerelease and (v.major, v.minor) in minors
    }
    names |= {v for v in listed if KubeVersion.parse(v).version.is_prerelease}
    return sorted(names, key=lambda v: KubeVersion.parse(v).version, reverse=True)


def newer_than(pre_releases: Sequence[str], release: KubeVersion) -> list[str]:
    """The pre-releases newer than the newest release, in their order: the only ones the radar builds."""
    return [v for v in pre_releases if KubeVersion.parse(v).version > release.version]


# The radar's own exit code when no pre-release newer than the newest release builds here (or none is served):
# nothing was probed, and no older pre-release is probed in its place (docs/refusals-and-interrupts.md).
NO_NEWER_PRE_RELEASE = 6


@dataclass
class Tried:
    """A pre-release the radar tried to build, and why it could not be (empty when it was built)."""

    version: str
    why_not: str = ""


def first_buildable(
    pre_releases: Sequence[str], build: Callable[[str], str], say: Callable[[str], None], tries: int
) -> tuple[str | None, list[Tried]]:
    """The newest pre-release that builds, trying at most `tries`, newest first; `build` returns why it cannot be
    built, or "" once built. Each one that cannot is said in one line."""
    tried: list[Tried] = []
    for version in pre_releases[:tries]:
        why_not = build(version)
        tried.append(Tried(version, why_not))
        if not why_not:
            return version, tried
        fallback = "; trying the next newest pre-release" if len(tried) < min(tries, len(pre_releases)) else ""
        say(f"{version} {why_not}{fallback}")
    return None, tried


def no_newer_pre_release(release: KubeVersion, tried: Sequence[Tried]) -> str:
    """The one line the radar ends with when no pre-release newer than the newest release builds here, and why."""
    if not tried:
        return f"no newer pre-release builds here: the Go module proxy serves none newer than {release}"
    newest = tried[0]
    others = f" (and {len(tried) - 1} older one{'s' if len(tried) > 2 else ''} tried)" if len(tried) > 1 else ""
    return (
        f"no newer pre-release builds here: {newest.version} {newest.why_not}{others}; "
        f"no pre-release older than {release} is probed instead"
    )


def baseline_records(records: Iterable[JsonDict], provider: str) -> tuple[str, list[JsonDict]]:
    """(the newest release the live records hold, their records): of `provider`'s records when it has one, else of
    any cluster's. ("", []) when none is of a release."""
    live = [
        r
        for r in records
        if r.get("server_version") and not KubeVersion.parse(str(r["server_version"])).version.is_prerelease
    ]
    own = [r for r in live if provider_of(r) == provider] or live
    newest = max((KubeVersion.parse(str(r["server_version"])) for r in own), default=None)
    if newest is None:
        return "", []
    return newest.text, [r for r in own if KubeVersion.parse(str(r["server_version"])).version == newest.version]


@dataclass
class Finding:
    """A claim observed otherwise on the pre-release than on the newest release, and what the expectations say."""

    probe: str
    claim: str
    release: JsonDict  # the newest release's verdict: status, observed
    pre_release: JsonDict
    expectation: str  # the pre-release's range and value, or "no expectation yet: ..."
    prs: list[str] = field(default_factory=list)  # k/k#N the pre-release's range cites

    @property
    def unexpected(self) -> bool:
        """A change the expectations do not state yet, or one the pre-release's own verdict does not pass."""
        return self.expectation.startswith("no expectation yet") or self.pre_release.get("status") in (FAIL, UNDECIDED)


def what_expectations_say(claim: Claim | None, release: KubeVersion, pre_release: KubeVersion) -> tuple[str, list[str]]:
    """(what the expectations say of the pre-release, the PRs its range cites)."""
    if claim is None:
        return "no expectation yet: no claim of that id in the expectations", []
    on_pre, on_release = claim.expectation_or_none(pre_release), claim.expectation_or_none(release)
    if on_pre is None:
        return f"no expectation yet: no range holds {pre_release}", []
    if on_pre == on_release:
        return f"no expectation yet: one range ({on_pre.versions}) holds both {pre_release} and {release}", []
    prs = [f"k/k#{n}" for n in pull_requests(on_pre.sources)]
    return f"expected {on_pre.describe()} ({on_pre.versions})", prs


def claims_by_id() -> dict[str, Claim]:
    """Every claim of every family, by id."""
    return {claim_id: c for f in families.families() for claim_id, c in load_claims(f.name).items()}


def findings(
    baseline: Verdicts,
    candidate: Verdicts,
    release: str,
    pre_release: str,
    claims: dict[str, Claim] | None = None,
) -> tuple[list[Finding], int]:
    """(every claim whose observation differs between the newest release and the pre-release, how many claims
    both observed)."""
    known = claims if claims is not None else claims_by_id()
    on_release, on_pre = KubeVersion.parse(release), KubeVersion.parse(pre_release)
    found = []
    pairs, compared = differing(baseline, candidate)
    for probe, claim_id, was, now in pairs:
        said, prs = what_expectations_say(known.get(claim_id), on_release, on_pre)
        keep = ("status", "observed")
        found.append(Finding(probe, claim_id, {k: was.get(k) for k in keep}, {k: now.get(k) for k in keep}, said, prs))
    return found, compared


@dataclass
class RadarReport:
    """What one radar run found: the pre-release probed, those that could not be built, what it was compared with."""

    pre_release: str
    release: str
    baseline: str  # where the newest release's observations come from
    tried: list[Tried]
    findings: list[Finding]
    compared: int
    without_baseline: list[str]  # probes the pre-release ran that the baseline has no record of
    failed_on_pre_release: list[str] = field(default_factory=list)  # probe: claim, verdicts not passed

    def render(self) -> str:
        lines = [
            f"{self.pre_release} beside {self.release} ({self.baseline}): {self.compared} claims observed by both, "
            f"{len(self.findings)} differ, {sum(f.unexpected for f in self.findings)} not in the expectations yet "
            "or not passed"
        ]
        for f in self.findings:
            prs = f" [{', '.join(f.prs)}]" if f.prs else ""
            lines.append(
                f"  {f.claim} ({f.probe}): {f.release['status']} {json.dumps(f.release['observed'])} -> "
                f"{f.pre_release['status']} {json.dumps(f.pre_release['observed'])}; {f.expectation}{prs}"
            )
        if self.without_baseline:
            lines.append(f"  no observation of {self.release} to compare: {', '.join(self.without_baseline)}")
        for line in self.failed_on_pre_release:
            lines.append(f"  not passed on {self.pre_release}: {line}")
        return "\n".join(lines)

    def to_json(self) -> JsonDict:
        return asdict(self)

    @property
    def exit_code(self) -> int:
        """1 when a claim changed in a way the expectations do not state yet, or did not pass; else 0."""
        return 1 if any(f.unexpected for f in self.findings) or self.failed_on_pre_release else 0


def compare_with_baseline(
    candidate_records: Sequence[JsonDict],
    release: str,
    baseline: Sequence[JsonDict],
    baseline_said: str,
    pre_release: str,
    tried: list[Tried],
    claims: dict[str, Claim] | None = None,
) -> RadarReport:
    """The radar's report from the pre-release's probe records and the newest release's."""
    candidate, known = verdicts_of(candidate_records), verdicts_of(baseline)
    found, compared = findings(known, candidate, release, pre_release, claims)
    differing_claims = {(f.probe, f.claim) for f in found}
    failed = [
        f"{probe} {claim_id} {verdict['status']}"
        for probe, claims_seen in sorted(candidate.items())
        for claim_id, verdict in sorted(claims_seen.items())
        if verdict.get("status") not in (PASS, "not observable") and (probe, claim_id) not in differing_claims
    ]
    return RadarReport(
        pre_release,
        release,
        baseline_said,
        tried,
        found,
        compared,
        sorted(set(candidate) - set(known)),
        failed,
    )
