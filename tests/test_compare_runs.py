"""tools/compare_runs.py --measurements: which timing claims moved between two runs (PARALLEL=auto against 1)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import compare_runs


def run_with(directory: Path, *observed: tuple[float, str]) -> Path:
    """A run directory whose probe records (one per repeat) measured the overrun claim as given."""
    for index, (value, status) in enumerate(observed):
        verdict: dict[str, Any] = {
            "claim": "prestop-overrun.sigterm-after-prestop-start",
            "observed": value,
            "status": status,
            "expected": {"between": [4.5, 6.5]},
        }
        record: dict[str, Any] = {"probe": "test_termination_order.py::test_prestop_overrunning_the_grace_period"}
        record |= {"server_version": "v1.38.0-beta.0", "verdicts": [verdict, {"claim": "x", "observed": "y"}]}
        (directory / "probes").mkdir(parents=True, exist_ok=True)
        (directory / "probes" / f"r{index}.json").write_text(json.dumps(record))
    return directory


def test_each_measured_claim_shows_its_bound_both_spreads_and_how_far_it_moved(tmp_path: Path) -> None:
    alone = run_with(tmp_path / "alone", (4.99, "pass"), (5.04, "pass"), (5.01, "pass"))
    together = run_with(tmp_path / "together", (4.2, "fail"))
    header, _, row = compare_runs.measurements(alone, together)
    assert header == "| probe | claim | bound | alone | together | median moved |"
    assert row == (
        "| prestop_overrunning_the_grace_period | prestop-overrun.sigterm-after-prestop-start | [4.5, 6.5] "
        "| 4.99-5.04 (3/3) | 4.20 (0/1) | -0.81 |"
    )
    assert compare_runs.main([str(alone), str(together), "--measurements"]) == 0
