"""The version matrix scheduler (harness/axis/matrix.py), with each version's run stood in by a function."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from harness.axis.matrix import VersionResult, render, run_matrix, summarize_run
from harness.axis.pinned import pinned_minors


class Concurrency:
    """Counts how many stand-in version runs are in progress at once."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.changed = threading.Condition()
        self.current = 0
        self.highest = 0
        self.gave_up = False

    def run(self, version: str) -> VersionResult:
        """Hold each run until `jobs` have run at once: overlap without a wall-clock bound. A scheduler that never
        runs `jobs` at once is given up on after 60 s, once (a loaded machine may start a thread seconds late)."""
        with self.changed:
            self.current += 1
            self.highest = max(self.highest, self.current)
            self.changed.notify_all()
            if not self.gave_up and not self.changed.wait_for(lambda: self.highest >= self.jobs, timeout=60.0):
                self.gave_up = True
            self.current -= 1
        if version == "1.20":
            raise RuntimeError("kind exploded")
        status = "cluster did not come up" if version == "1.21" else "passed"
        return VersionResult(version, status, 0 if status == "passed" else 1, "", 0.05)


def test_versions_run_at_most_jobs_at_a_time_and_a_failure_stops_nothing() -> None:
    versions = [f"1.{m}" for m in range(19, 38)]
    concurrency = Concurrency(jobs=3)
    results = run_matrix(versions, 3, concurrency.run)
    assert [r.version for r in results] == versions
    assert concurrency.highest == 3  # three at a time, never more (one at a time would give up once: 1)
    statuses = {r.version: r.status for r in results}
    assert statuses["1.20"] == "error" and "kind exploded" in results[1].detail
    assert statuses["1.21"] == "cluster did not come up"
    assert sum(s == "passed" for s in statuses.values()) == 17
    (row,) = [line for line in render(results, 2.0).splitlines() if line.startswith("v1.21 ")]
    assert "cluster did not come up" in row


def test_default_versions_are_every_minor_oldest_first() -> None:
    versions = pinned_minors()
    assert versions[0] == "1.19" and versions[-1] == "1.37" and len(versions) == 19


def test_a_runs_probe_outcomes_and_cluster_error_are_read_back(tmp_path: Path) -> None:
    run = tmp_path / "1.27" / "20261122-000000-abcd"
    (run / "probes").mkdir(parents=True)
    for i, outcome in enumerate(["passed", "passed", "failed"]):
        (run / "probes" / f"p{i}.json").write_text(json.dumps({"outcome": outcome}))
    (run / "run.json").write_text(json.dumps({"cluster_error": "kind could not create cluster"}))
    outcomes, cluster_error = summarize_run(tmp_path / "1.27")
    assert outcomes == {"passed": 2, "failed": 1}
    assert cluster_error == "kind could not create cluster"
