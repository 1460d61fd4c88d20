"""A run of the suite: its id, its directory of records and evidence, and its provenance."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from harness.base import outputs

SUITE_LABEL = "pod-lifecycle-probes.test/suite"
RUN_LABEL = "pod-lifecycle-probes.test/run-id"
# The finalizer the probes put on their own objects on purpose; teardown removes exactly this one.
PROBE_FINALIZER = "pod-lifecycle-probes.test/hold"
# The suite's own checkout: its git commit goes into every run record (which suite code measured what).
SUITE_DIR = Path(__file__).resolve().parents[2]
SUITE_KEYS = ("suite_commit", "suite_modified")


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def safe_name(text: str, limit: int = 120) -> str:
    """A file- and DNS-friendly name: lower case, [a-z0-9-], no leading/trailing dash.

    A name longer than `limit` is cut and ends with 8 hex of the whole text, so two long names that share a
    beginning (one probe, several recordings) stay distinct.
    """
    name = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{name[: max(limit - 9, 1)].strip('-')}-{digest}"


@dataclass
class Run:
    """Where a run writes: runs/<run-id>/{run.json, probes/, recordings/, evidence/}."""

    run_id: str
    directory: Path
    provenance: dict[str, Any] = field(default_factory=dict)
    provenance_file: str = "run.json"  # "run-<worker>.json" for each parallel worker sharing a run

    @classmethod
    def start(cls, base: Path, run_id: str | None = None, worker: str | None = None) -> Run:
        run_id = run_id or new_run_id()
        directory = base / run_id
        try:
            directory.mkdir(parents=True, exist_ok=True)
            if not outputs.is_ours(directory):  # the suite's own: make test keeps the last 3 (outputs.prune)
                outputs.mark(directory)
        except OSError as err:
            raise OSError(f"cannot create the run directory {directory}: {err.strerror}") from err
        run = cls(
            run_id,
            directory,
            {"run_id": run_id, "started": _now(), **suite_version()},
            f"run-{worker}.json" if worker else "run.json",
        )
        run.write_provenance()
        return run

    def write_provenance(self, **updates: Any) -> None:
        self.provenance.update(updates)
        (self.directory / self.provenance_file).write_text(json.dumps(self.provenance, indent=2, default=str) + "\n")

    def finish(self, status: str) -> None:
        self.write_provenance(finished=_now(), status=status)

    def suite(self) -> dict[str, Any]:
        """The suite's commit and whether tracked files differed from it, as recorded (empty when unknown)."""
        return {key: self.provenance[key] for key in SUITE_KEYS if key in self.provenance}

    def path(self, *parts: str) -> Path:
        target = self.directory.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        return target


def suite_version(directory: Path = SUITE_DIR) -> dict[str, Any]:
    """`git rev-parse HEAD` of the suite's checkout and whether its tracked files differ from that commit.

    Empty when there is no git, or the suite does not run from its own checkout (an installed copy): a run
    record then says nothing rather than naming another repository's commit. The suite's own checkout is asked
    once a process (_own_checkout); any other directory each time (checkout_version).
    """
    if directory == SUITE_DIR:
        return dict(_own_checkout())
    return checkout_version(directory)


@cache
def _own_checkout() -> dict[str, Any]:
    """The suite's checkout as this process first asked it (a process runs the code it found then). Once, not at
    every Run.start: the two git commands took 10-12 ms of CPU a start, and make test's workers started some 100
    runs (most tests that replay a recording start their own)."""
    return checkout_version(SUITE_DIR)


def checkout_version(directory: Path) -> dict[str, Any]:
    """What suite_version says of `directory`, asked of git now."""
    try:
        head = subprocess.run(
            ["git", "-C", str(directory), "rev-parse", "--show-toplevel", "HEAD"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        if head.returncode != 0:
            return {}
        top, commit = head.stdout.split()
        if Path(top).resolve() != directory.resolve():
            return {}
        status = subprocess.run(
            ["git", "-C", str(directory), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return {}
    modified = None if status.returncode != 0 else bool(status.stdout.strip())
    return {"suite_commit": commit, "suite_modified": modified}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
