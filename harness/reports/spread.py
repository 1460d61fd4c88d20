"""The spread of measured intervals over repeated runs of a probe (REPEAT=N), so a flaky edge shows as a
distribution, not a coin-flip."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def numeric_observations(records: Iterable[dict[str, Any]]) -> dict[tuple[str, str, str], list[float]]:
    """(probe, server version, claim) -> every numeric value observed for that claim, in record order."""
    values: dict[tuple[str, str, str], list[float]] = {}
    for record in records:
        for verdict in record.get("verdicts", []):
            observed = verdict.get("observed")
            if isinstance(observed, int | float) and not isinstance(observed, bool):
                key = (record["probe"], str(record.get("server_version")), verdict["claim"])
                values.setdefault(key, []).append(float(observed))
    return values


def spread(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per measured claim: how often it was measured, min, median, max, and how many passed."""
    records = list(records)
    passes: dict[tuple[str, str, str], int] = {}
    bounds: dict[tuple[str, str, str], list[float]] = {}
    for record in records:
        for verdict in record.get("verdicts", []):
            key = (record["probe"], str(record.get("server_version")), verdict["claim"])
            passes[key] = passes.get(key, 0) + (verdict.get("status") == "pass")
            between = (verdict.get("expected") or {}).get("between")
            if isinstance(between, list) and len(between) == 2:
                bounds[key] = [float(between[0]), float(between[1])]
    rows = []
    for (probe, version, claim), values in sorted(numeric_observations(records).items()):
        rows.append(
            {
                "probe": probe,
                "server_version": version,
                "claim": claim,
                "runs": len(values),
                "passed": passes.get((probe, version, claim), 0),
                "min": min(values),
                "median": statistics.median(values),
                "max": max(values),
                **({"bound": bounds[(probe, version, claim)]} if (probe, version, claim) in bounds else {}),
            }
        )
    return rows


def spread_of_run(run_dir: Path) -> list[dict[str, Any]]:
    return spread(json.loads(p.read_text()) for p in sorted((run_dir / "probes").glob("*.json")))


def render(rows: list[dict[str, Any]]) -> str:
    """One line a measured claim: its spread beside the bound it is checked against (when it has one)."""
    return "\n".join(
        f"{r['claim']:<52} {r['server_version']:<10} n={r['runs']:<3} passed={r['passed']:<3} "
        f"min={r['min']:.2f} median={r['median']:.2f} max={r['max']:.2f}"
        + (f"  bound [{r['bound'][0]:g}, {r['bound'][1]:g}]" if "bound" in r else "")
        for r in rows
    )
