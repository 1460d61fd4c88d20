"""A run of the suite: its id, its directory of records and evidence, and its provenance."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SUITE_LABEL = "pod-lifecycle-probes.test/suite"
RUN_LABEL = "pod-lifecycle-probes.test/run-id"
# The finalizer the probes put on their own objects on purpose; teardown removes exactly this one.
PROBE_FINALIZER = "pod-lifecycle-probes.test/hold"


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
        except OSError as err:
            raise OSError(f"cannot create the run directory {directory}: {err.strerror}") from err
        run = cls(
            run_id, directory, {"run_id": run_id, "started": _now()}, f"run-{worker}.json" if worker else "run.json"
        )
        run.write_provenance()
        return run

    def write_provenance(self, **updates: Any) -> None:
        self.provenance.update(updates)
        (self.directory / self.provenance_file).write_text(json.dumps(self.provenance, indent=2, default=str) + "\n")

    def finish(self, status: str) -> None:
        self.write_provenance(finished=_now(), status=status)

    def path(self, *parts: str) -> Path:
        target = self.directory.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        return target


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
