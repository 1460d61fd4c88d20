"""Committed records name paths relative to the checkout; the old ones, written with another machine's absolute
paths, are evidence and stay as written, and whatever reads them takes both."""

from __future__ import annotations

import json
from pathlib import Path

from harness.base import paths
from harness.reports import coverage_releases

BISECTIONS = paths.REPO / "bisections"


def test_a_path_inside_the_checkout_is_written_relative_and_read_back_under_the_checkout(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "bisect-20261206-000000-abcd" / "1.28.4"
    written = paths.in_checkout(run_dir, repo=tmp_path)
    assert written == "runs/bisect-20261206-000000-abcd/1.28.4"
    assert paths.from_record(written, repo=tmp_path) == tmp_path / written
    elsewhere = Path("/var/tmp/plp-runs/1.28.4")
    assert paths.in_checkout(elsewhere, repo=tmp_path) == str(elsewhere)  # outside the checkout: as given


def test_old_records_with_another_machines_paths_are_read_as_they_are() -> None:
    """An old record's absolute run directory is kept (it names nothing here), and the readers of the records
    (coverage's known releases and skips) take every committed record."""
    absolute = 0
    for record in sorted(BISECTIONS.glob("*.json")):
        data = json.loads(record.read_text())
        for tried in data["tried"]:
            if tried.get("run_dir"):
                path = paths.from_record(tried["run_dir"])
                absolute += path.is_absolute() and not path.is_relative_to(paths.REPO)
    assert absolute > 0  # the old records are still as they were written
    assert coverage_releases.bisection_versions(BISECTIONS)
    assert isinstance(coverage_releases.not_buildable(BISECTIONS), dict)
