"""Two sets of probe records compared claim by claim: tools/compare_runs.py (two runs of one version) and make radar
(a pre-release beside the newest release) read them the same way.

Each claim both observed is compared on its verdict (pass / fail / undecided / not observable) and its observed
value. Values that are measurements (numbers) agree when both verdicts agree, since two clusters never time
alike; any other value must be equal.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.core.records import load_records

JsonDict = dict[str, Any]
Verdicts = dict[str, dict[str, JsonDict]]  # probe -> claim -> verdict


def verdicts_of(records: Iterable[JsonDict]) -> Verdicts:
    """probe -> claim -> verdict, from probe records (repeats: the first)."""
    found: Verdicts = {}
    for record in records:
        found.setdefault(record["probe"], {v["claim"]: v for v in record["verdicts"]})
    return found


def verdicts(run_dir: Path) -> Verdicts:
    """probe -> claim -> verdict, from a run's probe records as the report reads them (repeats: the first)."""
    return verdicts_of(load_records([run_dir]))


def is_measurement(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    if isinstance(value, dict) and value:
        return all(is_measurement(v) or v is None for v in value.values())
    return False


def agree(one: JsonDict, other: JsonDict) -> bool:
    """Whether two verdicts of one claim agree: the same status, and the same value (or both measurements)."""
    same_value = one["observed"] == other["observed"] or (
        is_measurement(one["observed"]) and is_measurement(other["observed"])
    )
    return bool(one["status"] == other["status"] and same_value)


def differing(left: Verdicts, right: Verdicts) -> tuple[list[tuple[str, str, JsonDict, JsonDict]], int]:
    """(every (probe, claim, left verdict, right verdict) that disagrees, how many claims both observed)."""
    found, compared = [], 0
    for probe in sorted(set(left) & set(right)):
        for claim in sorted(set(left[probe]) & set(right[probe])):
            compared += 1
            if not agree(left[probe][claim], right[probe][claim]):
                found.append((probe, claim, left[probe][claim], right[probe][claim]))
    return found, compared
