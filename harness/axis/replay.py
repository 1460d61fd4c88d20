"""The one way the suite replays recordings outside make test's own run: the probes on recordings in a child pytest
(make atlas, make coverage, make upgrade, make radar and the offline tests' shared replay all come here).

The child is `python -m harness.axis.replay ANSWER PYTEST-ARGS...`: pytest with a plugin that notes every probe it
collected (with its family) and those that run only on the graceful-node-shutdown kind cluster, written as JSON to
ANSWER with pytest's exit code. Under pytest-xdist (`workers`) the controller collects nothing, so only the exit
code and the records are read then.
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

from harness.base import families, paths
from harness.base.json_read import read_json

if TYPE_CHECKING:
    import pytest

JsonDict = dict[str, Any]
KIND_ONLY_MARKER = "node_shutdown"  # probes that run only on the suite's graceful-node-shutdown kind cluster


@dataclass(frozen=True)
class Replayed:
    """What a replay gave: pytest's exit code (None when the child ended before pytest answered), the probe records
    under its run directory, the probes it collected (with their families) and those that run only on kind."""

    exit_code: int | None
    returncode: int  # the child's: pytest's, or Python's when it ended before pytest answered
    records: list[JsonDict]
    kind_only: list[str] = field(default_factory=list)
    collected: dict[str, str] = field(default_factory=dict)
    stdout: str = ""  # what the child said, when it was not shown
    stderr: str = ""


def replay(
    run_dir: Path,
    recordings: Path = families.FAMILIES_ROOT,
    *,
    select: str = "",
    workers: str | None = None,
    shown: bool = False,
    timeout: float | None = None,
) -> Replayed:
    """Every probe on the recordings under `recordings` (default: all the shipped ones), its run records left under
    `run_dir`. `select`: pytest's -k; `workers`: pytest-xdist's -n (else one process); `shown`: pytest's output goes
    to this terminal instead of being kept; `timeout`: a guard against a hang, in seconds."""
    argv = [str(families.FAMILIES_ROOT), "--replay", str(recordings), "--run-dir", str(run_dir)]
    argv += ["-n", workers] if workers else ["-p", "no:xdist"]
    argv += ["-q", "--disable-warnings", "-p", "no:cacheprovider"] if shown else ["-q", "-p", "no:cacheprovider"]
    if select:
        argv += ["-k", select]
    with tempfile.TemporaryDirectory(prefix="plp-replay-") as scratch:
        out = Path(scratch) / "answer.json"
        proc = subprocess.run(
            [sys.executable, "-m", "harness.axis.replay", str(out), *argv],
            capture_output=not shown,
            text=True,
            timeout=timeout,
            check=False,
            cwd=paths.REPO,
        )
        answer: JsonDict = json.loads(out.read_text()) if out.is_file() else {}
    records = [read_json(path) for path in sorted(run_dir.glob("*/probes/*.json"))]
    code = answer.get("exit_code")
    return Replayed(
        int(code) if isinstance(code, int) else None,
        proc.returncode,
        records,
        list(answer.get("kind_only", [])),
        dict(answer.get("collected", {})),
        proc.stdout or "",
        proc.stderr or "",
    )


def probe_id(module: str, function: str) -> str:
    """A probe as records name it: 'test_node_shutdown.py::test_daemonset_pod_after_graceful_node_shutdown'."""
    return f"{module}::{function}"


def probes_collected(items: Sequence[pytest.Item]) -> tuple[set[str], dict[str, str]]:
    """(the probes among `items` that run only on the graceful-node-shutdown kind cluster; every probe among them,
    with its family: its folder)."""
    kind_only: set[str] = set()
    collected: dict[str, str] = {}
    for item in items:
        probe = probe_id(item.path.name, getattr(item, "originalname", item.name))
        collected[probe] = item.path.parent.name
        if item.get_closest_marker(KIND_ONLY_MARKER):
            kind_only.add(probe)
    return kind_only, collected


class _Markers:
    """A pytest plugin noting every probe collected, with its family (its folder), and those marked to run only on
    the graceful-node-shutdown kind cluster."""

    def __init__(self) -> None:
        self.kind_only: set[str] = set()
        self.collected: dict[str, str] = {}

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.kind_only, self.collected = probes_collected(session.items)


def main(argv: Sequence[str]) -> int:
    """The child: pytest with argv[1:]; pytest's exit code, the kind-only probes and every probe collected with its
    family written as JSON to argv[0]; the child's own exit code is pytest's."""
    import pytest

    markers = _Markers()
    code = int(pytest.main(list(argv[1:]), plugins=[markers]))
    answer = {"exit_code": code, "kind_only": sorted(markers.kind_only), "collected": markers.collected}
    Path(argv[0]).write_text(json.dumps(answer))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
