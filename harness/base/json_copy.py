"""A copy of parsed JSON or YAML (dicts, lists, strings, numbers, booleans, None), for a caller that may change it.

copy.deepcopy finds each value's way of copying and notes every object it copied (a value met twice is copied once):
that costs more than the copy here, which knows the shapes parsed data takes. A replay of every recording copies the
manifests it reads and creates thousands of times, and the tests that alter recordings copy pod objects.
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

T = TypeVar("T")
_IMMUTABLE = (str, int, float, type(None))  # bool is an int


def json_copy(value: T) -> T:
    """The value with every dict and list in it copied; anything else parsed data may hold (a YAML date) as
    copy.deepcopy copies it."""
    return _copied(value)  # type: ignore[no-any-return]


def _copied(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    if isinstance(value, _IMMUTABLE):
        return value
    return copy.deepcopy(value)
