"""make atlas [PROBE=...] [FROM=... TO=...] [ATLAS=runs/atlas]: the behaviour matrix of the recordings shipped in
probes/*/recordings/, without a cluster: every probe (or those PROBE selects) replayed as `make test` does, into
ATLAS/records/, then the report of those records in ATLAS/report/.

Every input is checked first (ATLAS a folder the suite may replace, PROBE selecting some probe, FROM and TO two
releases in order); the new atlas is written beside the last one and replaces it only once it is whole
(harness/base/outputs.py), so a refusal, a failed replay or Ctrl-C leaves the last atlas as it was.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from harness.base import outputs
from harness.base.inputs import BadInput
from harness.doors.commands.refusal import BAD, Refused, refuse, selection_problem


def workers(text: str) -> str:
    """TEST_WORKERS: pytest-xdist's -n, a whole number (0: in one process) or auto."""
    if text.strip() == "auto" or text.strip().isdigit():
        return text.strip()
    raise argparse.ArgumentTypeError(f"TEST_WORKERS must be a whole number or auto, not {text!r}")


def run_atlas_command(args: argparse.Namespace) -> int:
    """Check every input, replay into a new folder, report, then swap the new atlas in. The replay's and the
    report's modules are imported only once the inputs are known good: a refusal loads none of them."""
    try:
        atlas = outputs.check_output_dir(args.atlas, "ATLAS")
    except BadInput as err:
        return refuse(BAD, str(err))
    if args.from_version or args.to_version:
        from harness.doors.commands.upgrade import Refusal, releases

        try:
            releases(args.from_version, args.to_version, [])  # known from the recordings' names: no replay yet
        except (BadInput, Refusal) as err:
            return refuse(BAD, str(err))
    if args.probe:
        with tempfile.TemporaryDirectory(prefix="plp-atlas-selection-") as scratch:
            if not_selected := selection_problem(args.probe, scratch):
                return refuse(*not_selected)
    from harness.core import records as records_module
    from harness.doors.commands.housekeeping import report_matrix
    from harness.reports import report as report_module

    try:
        with outputs.replacing(atlas) as staging:
            code = _replay(staging / "records", args.probe, args.workers)
            if code != 0:
                print(
                    f"error: the replay ended with pytest's exit code {code}: the atlas at {atlas} is left as it was",
                    file=sys.stderr,
                )
                raise _ReplayFailed(code)
            records = records_module.load_records([staging / "records"])
            built, chosen = report_matrix(records, args.from_version, args.to_version, str(atlas / "records"))
            report_module.write_matrix(built, staging / "report", chosen)
    except _ReplayFailed as failed:
        return failed.code
    except Refused as refused:
        return refuse(refused.kind, refused.problem)
    print(f"{built.summary()}; {len(built.changed())} verdicts changed")
    print(f"report: {atlas / 'report' / 'report.html'} and {atlas / 'report' / 'report.md'}")
    return 0


class _ReplayFailed(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _replay(run_dir: Path, probe: str, worker_count: str) -> int:
    """pytest on the shipped recordings, its output shown as make test's; its exit code."""
    from harness.axis.replay import replay

    return replay(run_dir, select=probe, workers=worker_count, shown=True).returncode
