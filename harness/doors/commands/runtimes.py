"""make runtimes VERSION=1.27.16 [VALUES=1] [MARKDOWN=1]: one release's shipped kind recordings set side by side by the
container runtime they ran on (harness/axis/runtimes.py): the claims that differ, every timing with VALUES=1, a
docs/runtimes.md table row per pair of runtimes with MARKDOWN=1. Exit 1 when a claim differs."""

from __future__ import annotations

import argparse
import sys

from harness.axis import runtimes
from harness.axis.pinned import pinned_patch
from harness.axis.releases import check_published
from harness.base.versions import Release, VersionError


def release_of(given: str) -> str:
    """A minor's pinned patch or a published release, as '1.27.16'; VersionError otherwise."""
    if not given.strip():
        raise VersionError("no VERSION given: name a release with kind recordings, e.g. make runtimes VERSION=1.27.16")
    wanted = Release.parse(given)  # VERSION read here, once
    check_published(wanted.kube)
    return pinned_patch(wanted)


def run_runtimes_command(args: argparse.Namespace) -> int:
    """Refuse a bad VERSION in one line, then replay each runtime's recordings and print them side by side."""
    try:
        version = release_of(args.version)
        print(f"replaying the shipped kind recordings of v{version}, one replay per runtime ...", flush=True)
        found = runtimes.side_by_side(version)
    except (VersionError, runtimes.RuntimeAxisError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print("\n".join(runtimes.markdown_rows(found)) if args.markdown else runtimes.render(found, args.values))
    return 1 if any(row.differs for row in found.rows) else 0
