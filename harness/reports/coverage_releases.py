"""The releases `make coverage` knows (`known_releases`: the release catalog's from 1.21 on, and before it the pinned
node images, the live records' versions and those the expectation ranges name, the numbering's gaps filled), and
those known not to build here, each with why (`not_buildable`), so that a range whose releases none builds says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from packaging.version import Version

from harness.axis.gates import refused_releases
from harness.axis.pinned import pinned_releases
from harness.axis.releases import first_catalogued, is_published, published_releases
from harness.base import paths
from harness.base.versions import KubeVersion, release_name, version_range
from harness.gobuild.kubernetes import OLDEST_BUILT_HERE
from harness.gobuild.not_built import not_built_here
from harness.reports.coverage import Coverage, Observed


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


def mark_unbuildable(coverage: Coverage, releases: Sequence[KubeVersion], not_built: Mapping[Version, str]) -> None:
    """Mark each uncovered range whose known releases (from 1.21) are all known not to build here."""
    for claim_range in coverage.uncovered():
        inside = [v for v in releases if v.version >= OLDEST_BUILT_HERE.version and claim_range.contains(v)]
        if inside and all(v.version in not_built for v in inside) and not claim_range.older:
            claim_range.none_builds = tuple(v.text for v in inside)
