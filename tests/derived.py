"""Derived recordings as tools/derive_recordings.py makes them, for tests that edit one into a contradiction.

On disk a derived recording is removed once a live recording of the same probe and version replaces it
(tools/adopt_recordings.py), so tests take the tool's output, not the file.
"""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path

from harness.transport import JsonDict, Recording

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import derive_recordings


@cache
def _all() -> dict[str, JsonDict]:
    return {k: json.loads(json.dumps(v)) for k, v in derive_recordings.all_recordings().items()}


def derived(relative: str) -> Recording:
    """A fresh copy of the derived recording at `relative` under recordings/ ('family/name.json')."""
    data = json.loads(json.dumps(_all()[relative]))
    return Recording(data["probe"], data["origin"], data["interactions"])


def write_derived(relative: str, directory: Path) -> Path:
    """The derived recording written into `directory` under its own name; returns the file."""
    path = directory / Path(relative).name
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_all()[relative], indent=1) + "\n")
    return path
