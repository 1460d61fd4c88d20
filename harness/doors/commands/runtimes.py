"""make runtimes VERSION=1.27.16 [VALUES=1] [MARKDOWN=1]: one release's shipped kind recordings set side by side by the
container runtime they ran on (harness/axis/runtimes.py): the claims that differ, every timing with VALUES=1, a
docs/runtimes.md table row per pair of runtimes with MARKDOWN=1. Exit 1 when a claim differs.

make runtimes RUNS="<run directories>" [VERSION=…]: the same of the recordings those runs wrote, for instance a make
matrix of one release on several runtimes (VERSIONS="1.27.16:debian 1.27.16:kind"); without VERSION, every release
the runs hold on two runtimes or more."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.axis import runtimes
from harness.axis.pinned import pinned_patch
from harness.axis.releases import check_published
from harness.base.versions import Release, VersionError

OF_RUNS = "recordings of the runs under RUNS"


def release_of(given: str) -> str:
    """A minor's pinned patch or a published release, as '1.27.16'; VersionError otherwise."""
    if not given.strip():
        raise VersionError("no VERSION given: name a release with kind recordings, e.g. make runtimes VERSION=1.27.16")
    wanted = Release.parse(given)  # VERSION read here, once
    check_published(wanted.kube)
    return str(pinned_patch(wanted))


def run_runtimes_command(args: argparse.Namespace) -> int:
    """Refuse a bad VERSION or RUNS in one line, then replay each runtime's recordings and print them side by side."""
    runs = [Path(run) for run in getattr(args, "runs", None) or []]
    if runs:
        return runtimes_of_runs(runs, args.version, args.values, args.markdown, refuse_when_none=True)
    try:
        version = release_of(args.version)
        print(f"replaying the shipped kind recordings of v{version}, one replay per runtime ...", flush=True)
        found = runtimes.side_by_side(version)
    except (VersionError, runtimes.RuntimeAxisError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print("\n".join(runtimes.markdown_rows(found)) if args.markdown else runtimes.render(found, args.values))
    return 1 if any(row.differs for row in found.rows) else 0


def runtimes_of_runs(
    runs: list[Path], version: str = "", values: bool = False, markdown: bool = False, refuse_when_none: bool = False
) -> int:
    """The recordings the runs under `runs` wrote, set side by side by runtime: VERSION's, or every release they hold
    on two runtimes or more (make matrix calls it after a matrix that ran one release on several). Exit 1 when a claim
    differs; 2, said in one line, when nothing can be set side by side (only with `refuse_when_none`: else a note)."""
    try:
        missing = [str(run) for run in runs if not run.is_dir()]
        if missing:
            raise runtimes.RuntimeAxisError(
                f"RUNS names no run directory: {', '.join(missing)} (make probe and make matrix write them)"
            )
        held = runtimes.run_recordings(runs)
        if version:
            release = release_of(version)
            chosen = [release]
        else:
            chosen = [release for release, groups in sorted(held.items()) if len(groups) > 1]
        if not chosen:
            said = "; ".join(f"v{r}: {', '.join(groups)}" for r, groups in sorted(held.items())) or "no recordings"
            raise runtimes.RuntimeAxisError(f"the runs under RUNS hold no release on two runtimes or more ({said})")
        differs = False
        for release in chosen:
            print(f"replaying the v{release} {OF_RUNS}, one replay per runtime ...", flush=True)
            found = runtimes.side_by_side(release, groups=held.get(release, {}), where=OF_RUNS)
            print("\n".join(runtimes.markdown_rows(found)) if markdown else runtimes.render(found, values, OF_RUNS))
            differs = differs or any(row.differs for row in found.rows)
    except (VersionError, runtimes.RuntimeAxisError) as err:
        print(f"{'error' if refuse_when_none else 'note'}: {err}", file=sys.stderr if refuse_when_none else sys.stdout)
        return 2 if refuse_when_none else 0
    return 1 if differs else 0
