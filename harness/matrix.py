"""`make matrix`: the probes on several Kubernetes versions, one kind cluster per version, a few at a time.

Each version runs as its own `python -m harness probe --version V` process with its own run directory,
so a version whose cluster does not come up is reported as such and the others go on.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.versions import known_images

EXIT_MEANING = {0: "passed", 1: "failed", 2: "interrupted or bad input", 3: "prerequisite missing", 5: "no probe ran"}


@dataclass
class VersionResult:
    version: str
    status: str
    exit_code: int | None
    run_dir: str
    seconds: float
    probes: dict[str, int] = field(default_factory=dict)  # outcome -> count, from the run's probe records
    detail: str = ""


def default_versions() -> list[str]:
    """Every Kubernetes minor with a pinned image, oldest first."""
    minors = {i.kubernetes.minor for i in known_images()}
    return sorted(minors, key=lambda m: tuple(int(p) for p in m.split(".")))


def summarize_run(run_dir: Path) -> tuple[dict[str, int], str]:
    """Probe outcomes of one version's run, and why its cluster failed if it did."""
    outcomes: dict[str, int] = {}
    for record in sorted(run_dir.glob("*/probes/*.json")):
        outcome = json.loads(record.read_text()).get("outcome", "unknown")
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    provenance: dict[str, Any] = {}
    for run_json in run_dir.glob("*/run.json"):
        provenance = json.loads(run_json.read_text())
    return outcomes, str(provenance.get("cluster_error", ""))


def run_version_process(version: str, base: Path, extra: Sequence[str] = ()) -> VersionResult:
    """One version: `python -m harness probe --version V -- --run-dir base/V`, its output in base/V.log."""
    run_dir = base / version
    run_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with (base / f"{version}.log").open("w") as log:
        code = subprocess.call(
            [sys.executable, "-m", "harness", "probe", "--version", version, "--", "--run-dir", str(run_dir), *extra],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    probes, cluster_error = summarize_run(run_dir)
    status = "cluster did not come up" if cluster_error else EXIT_MEANING.get(code, f"exit {code}")
    if status == "failed" and probes.get("undecided") and not probes.get("failed"):
        status = "undecided"  # only claims a watch gap left undecided: not evidence that the version fails
    return VersionResult(
        version, status, code, str(run_dir), round(time.monotonic() - started, 1), probes, cluster_error
    )


def run_matrix(versions: Sequence[str], jobs: int, run_one: Callable[[str], VersionResult]) -> list[VersionResult]:
    """Run every version, at most `jobs` at a time; one version's failure never stops the others."""

    def guarded(version: str) -> VersionResult:
        started = time.monotonic()
        try:
            return run_one(version)
        except Exception as err:  # a crash of one version's runner is that version's result
            return VersionResult(version, "error", None, "", round(time.monotonic() - started, 1), detail=repr(err))

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(guarded, versions))


def render(results: Sequence[VersionResult]) -> str:
    lines = [f"{'version':<10} {'status':<26} {'seconds':>8}  probes"]
    for r in results:
        probes = ", ".join(f"{n} {outcome}" for outcome, n in sorted(r.probes.items())) or "-"
        lines.append(f"{r.version:<10} {r.status:<26} {r.seconds:>8.1f}  {probes}")
    return "\n".join(lines)


def write_results(base: Path, results: Sequence[VersionResult]) -> Path:
    path = base / "matrix.json"
    path.write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n")
    return path
