"""REPEAT=N: the spread of each measured interval over repeated runs (harness/reports/spread.py)."""

from __future__ import annotations

from typing import Any

from harness.reports.spread import render, spread


def record(probe: str, version: str, observed: Any, status: str = "pass") -> dict[str, Any]:
    return {
        "probe": probe,
        "server_version": version,
        "verdicts": [
            {"claim": "delay", "observed": observed, "status": status},
            {"claim": "phase", "observed": ["Running"], "status": "pass"},
        ],
    }


def test_spread_reports_min_median_max_and_passes_per_claim_and_version() -> None:
    rows = spread(
        [
            record("p.py::test_a", "v1.27.3", 1.0),
            record("p.py::test_a", "v1.27.3", 3.0, status="fail"),
            record("p.py::test_a", "v1.27.3", 2.0),
            record("p.py::test_a", "v1.26.6", 9.0),
        ]
    )
    assert [(r["server_version"], r["runs"], r["passed"], r["min"], r["median"], r["max"]) for r in rows] == [
        ("v1.26.6", 1, 1, 9.0, 9.0, 9.0),
        ("v1.27.3", 3, 2, 1.0, 2.0, 3.0),
    ]
    assert "n=3   passed=2   min=1.00 median=2.00 max=3.00" in render(rows)


def test_non_numeric_and_boolean_observations_have_no_spread() -> None:
    assert spread([record("p.py::test_a", "v1.27.3", True), record("p.py::test_a", "v1.27.3", None)]) == []


def test_each_spread_is_shown_beside_the_bound_it_is_checked_against() -> None:
    measured = record("p.py::test_a", "v1.26.6", 3.05)
    measured["verdicts"][0]["expected"] = {"versions": ">=1.19", "value": None, "between": [2.9, 4.5]}
    (row,) = spread([measured, record("p.py::test_a", "v1.26.6", 3.13)])
    assert row["bound"] == [2.9, 4.5] and (row["min"], row["max"]) == (3.05, 3.13)
    assert render([row]).endswith("min=3.05 median=3.09 max=3.13  bound [2.9, 4.5]")
