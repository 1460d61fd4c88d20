"""make coverage: every claim version range with the live runs inside it, or "not seen live"; with PLAN=1, which
releases to build next to cover the most of the rest (harness/reports/coverage.py and its coverage_*.py)."""

from __future__ import annotations

import argparse
import sys

from harness.reports import coverage, coverage_plan, coverage_releases, coverage_words


def run_coverage_command(args: argparse.Namespace) -> int:
    """Replay the shipped recordings (seconds), then print the ranges (UNCOVERED=1: only those without a run; with
    PLAN=1 alone, none), the build plan with PLAN=1, and last the figure "N of M claim version ranges hold a live
    run"."""
    print("replaying the live recordings under probes/ to see which claims each observed ...", flush=True)
    try:
        observed = coverage.replay_recordings()
    except coverage.CoverageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    found = coverage.claim_ranges(observed)
    not_built = coverage_releases.not_buildable()
    releases = coverage_releases.known_releases(found, observed, also=not_built)
    coverage_releases.mark_unbuildable(found, releases, not_built)
    if args.uncovered or not args.plan:
        print(coverage_words.render(found, uncovered_only=args.uncovered))
    if args.plan:
        print(coverage_words.render_plan(coverage_plan.plan_builds(found, releases, not_built), found))
    print(coverage_words.summary(found))
    return 0
