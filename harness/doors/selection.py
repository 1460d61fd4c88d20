"""Which probes a selection (PROBE, a name or pytest -k expression) picks, known before any cluster is made.

pytest collects the probes in a child process (`python -m harness.doors.selection OUT ARGS...`), with its own
-k semantics, and nothing runs: about a second. The parent reads what was selected and deselected from OUT.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the parent only starts the child; pytest is imported where it collects (main)
    import pytest

PROBES = Path(__file__).resolve().parents[2] / "probes"
NO_TESTS_COLLECTED = 5


@dataclass
class Selection:
    """pytest's exit code for the collection, the test ids it kept and dropped, and its error lines."""

    exit_code: int
    selected: list[str] = field(default_factory=list)
    deselected: list[str] = field(default_factory=list)
    errors: str = ""
    node_shutdown: list[str] = field(default_factory=list)  # the selected ones marked node_shutdown
    alone: list[str] = field(default_factory=list)  # the selected ones marked alone (run after the others)

    def probe_names(self, limit: int = 5) -> list[str]:
        """A few probe names (test functions, without parameters), for a message."""
        names = dict.fromkeys(i.split("::")[-1].split("[")[0] for i in self.selected + self.deselected)
        return list(names)[:limit]

    @property
    def total(self) -> int:
        return len({i.split("[")[0] for i in self.selected + self.deselected})


def select(expression: str, run_dir: str, timeout: float = 120, extra: Sequence[str] = ()) -> Selection:
    """Collect the probes matching a pytest -k expression (and `extra` pytest arguments), in a child pytest;
    nothing runs."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "selection.json"
        argv = [str(PROBES), "-p", "no:cacheprovider", "-k", expression, "--run-dir", run_dir, *extra]
        proc = subprocess.run(
            [sys.executable, "-m", "harness.doors.selection", str(out), *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=PROBES.parent,
        )
        found: dict[str, Any] = json.loads(out.read_text()) if out.is_file() else {"exit_code": proc.returncode}
    lines = [line.strip() for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
    errors = "\n".join(line for line in lines if line.startswith("ERROR")) or "\n".join(lines[-5:])
    return Selection(
        int(found["exit_code"]),
        found.get("selected", []),
        found.get("deselected", []),
        errors,
        found.get("node_shutdown", []),
        found.get("alone", []),
    )


class _Names:
    """A pytest plugin that notes what collection kept and what -k dropped."""

    def __init__(self) -> None:
        self.selected: list[str] = []
        self.deselected: list[str] = []
        self.node_shutdown: list[str] = []
        self.alone: list[str] = []

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        self.deselected += [item.nodeid for item in items]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.selected = [item.nodeid for item in session.items]
        self.node_shutdown = [item.nodeid for item in session.items if item.get_closest_marker("node_shutdown")]
        self.alone = [item.nodeid for item in session.items if item.get_closest_marker("alone")]


def main(argv: Sequence[str]) -> int:
    """Collect with pytest's arguments argv[1:], write the result as JSON to argv[0]."""
    import pytest

    names = _Names()
    code = pytest.main([*argv[1:], "--collect-only", "-q"], plugins=[names])
    result: dict[str, Any] = {
        "exit_code": int(code),
        "selected": names.selected,
        "deselected": names.deselected,
        "node_shutdown": names.node_shutdown,
        "alone": names.alone,
    }
    Path(argv[0]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
