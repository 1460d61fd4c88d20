"""Values and expectations in words: what report.py, upgrade_words.py and radar.py all say the same way.

Below the reports that use it (it imports none of them), so that each can import it without a cycle."""

from __future__ import annotations

import json
from typing import Any

from harness.core.expectations import Expectation

JsonDict = dict[str, Any]


def show(value: Any) -> str:
    """A value as JSON (strings as they are)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def short(value: Any) -> str:
    """A value the way a table cell shows it: sequences with arrows, objects as 'key value' pairs."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        if not value:
            return "none"
        if all(not isinstance(v, dict | list) for v in value):
            return " → ".join(short(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {short(v)}" for k, v in value.items())
    return show(value)


def expected_text(expectation: Expectation | JsonDict | None) -> str:
    """An expectation's value as a cell shows it (a range as 'low–high')."""
    if expectation is None:
        return "no expectation"
    if isinstance(expectation, Expectation):
        outcomes: list[Expectation | JsonDict] = list(expectation.one_of)
        between, value = expectation.between, expectation.value
    else:
        outcomes = list(expectation.get("one_of") or [])
        between, value = expectation.get("between"), expectation.get("value")
    if outcomes:
        return " or ".join(expected_text(outcome) for outcome in outcomes)
    return f"{between[0]:g} to {between[1]:g}" if between is not None else short(value)


def words(value: Any) -> str:
    """A value as a sentence says it: a sequence with ', then', yes / no, a mapping as 'key value' pairs."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        if not value:
            return "none"
        return ", then ".join(words(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {words(v)}" for k, v in value.items())
    return str(value)


def expected_words(expectation: Expectation | None) -> str:
    """An expectation in words: its value, 'between 9 and 13', or its outcomes joined with 'or'."""
    if expectation is None:
        return "no expectation"
    if expectation.one_of:
        return " or ".join(expected_words(o) for o in expectation.one_of)
    if expectation.between is not None:
        return f"between {expectation.between[0]:g} and {expectation.between[1]:g}"
    return words(expectation.value)
