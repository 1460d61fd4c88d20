"""The run's end: its record's status (passed, failed, undecided, no probe ran, interrupted) and what was cleaned,
and the lines said after pytest's own summary (where the records are, what was kept, the spread with REPEAT)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.base.errors import INTERRUPTED
from harness.base.run import Run
from harness.doors.plugin.keys import (
    INTERRUPTED_LINE,
    NO_PROBE_RAN,
    OUTCOMES,
    RAN,
    REFUSED_LINE,
    RUN,
    SHARED_RUN_ID,
    UNDECIDED_OUTCOME,
)
from harness.reports.spread import render as render_spread
from harness.reports.spread import spread_of_run


@pytest.hookimpl(trylast=True)  # after pytest's own sessionfinish has torn the fixtures down (the cleanup)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if REFUSED_LINE in session.config.stash:  # pytest-xdist's controller: its workers refused the probes
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
    run = session.config.stash.get(RUN, None)
    if run is not None:
        status = {0: "passed", 1: "failed", 2: "interrupted"}.get(int(exitstatus), f"exit {int(exitstatus)}")
        counts = session.config.stash.get(OUTCOMES, {})
        if status == "failed" and counts.get(UNDECIDED_OUTCOME) and not counts.get("failed"):
            status = UNDECIDED_OUTCOME  # every failure was a claim left undecided: not evidence of a regression
        if status == "passed" and not counts.get(RAN):
            status = NO_PROBE_RAN  # every probe skipped (none recorded, no second cluster): not a pass
        cleanup = run.provenance.get("cleanup", [])
        run.write_provenance(
            cleaned={
                "namespaces_deleted": [c["namespace"] for c in cleanup if c.get("namespace_deleted")],
                "namespaces_left": [c["namespace"] for c in cleanup if not c.get("namespace_deleted")],
                "namespaces_kept": [k["namespace"] for k in run.provenance.get("namespaces_kept", [])],
                "finalizers_removed": sum(len(c.get("finalizers_removed", [])) for c in cleanup),
                "cluster_deleted": bool(run.provenance.get("cluster_deleted")),
                **(
                    {"shutdown_cluster_deleted": bool(run.provenance["shutdown_cluster"].get("cluster_deleted"))}
                    if "shutdown_cluster" in run.provenance
                    else {}
                ),
            }
        )
        run.finish(status)
        if status == "interrupted":
            session.config.stash[INTERRUPTED_LINE] = _interrupted_line(run)
            session.exitstatus = INTERRUPTED


def _interrupted_line(run: Run) -> str:
    """What an interrupt stopped and what the teardown removed, in one line."""
    cleaned = run.provenance.get("cleaned") or {}
    removed = [
        f"{len(cleaned.get('namespaces_deleted') or [])} namespaces deleted",
        f"{cleaned.get('finalizers_removed', 0)} finalizers removed",
    ]
    if cleaned.get("namespaces_left"):
        removed.append(f"namespaces left: {', '.join(cleaned['namespaces_left'])}")
    if cleaned.get("cluster_deleted"):
        removed.append("the cluster deleted")
    return f"interrupted: stopped the probes; {', '.join(removed)} (run record: {run.directory / 'run.json'})"


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if line := config.stash.get(INTERRUPTED_LINE, None):
        print(line, file=sys.stderr, flush=True)
    if refused := config.stash.get(REFUSED_LINE, None):
        print(f"ERROR: {refused}", file=sys.stderr, flush=True)  # as pytest says a usage error without workers


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    undecided = terminalreporter.stats.get(UNDECIDED_OUTCOME, [])
    if undecided:  # pytest lists only its own "failed" under FAILURES: these get their own section
        terminalreporter.write_sep("=", f"UNDECIDED ({len(undecided)}: no claim failed, but some could not be decided)")
        for report in undecided:
            terminalreporter.write_sep("_", report.head_line or report.nodeid)
            terminalreporter.write_line(report.longreprtext)
        for report in undecided:
            crash = getattr(report.longrepr, "reprcrash", None)
            terminalreporter.write_line(f"UNDECIDED {report.nodeid} - {getattr(crash, 'message', '')}")
    if RUN not in config.stash and SHARED_RUN_ID in config.stash and REFUSED_LINE not in config.stash:
        # pytest-xdist's controller: where its workers wrote
        terminalreporter.write_sep("-", "pod-lifecycle probes")
        shared = Path(config.getoption("--run-dir")) / config.stash[SHARED_RUN_ID]
        terminalreporter.write_line(f"run records, recordings and evidence: {shared}")
        _say_kept_namespaces(terminalreporter, shared)
        _say_spread(terminalreporter, config, shared)  # every worker's probe records are there by now
    run = config.stash.get(RUN, None)
    if run is not None:
        terminalreporter.write_sep("-", "pod-lifecycle probes")
        terminalreporter.write_line(f"run records, recordings and evidence: {run.directory}")
        for facts in (run.provenance, run.provenance.get("shutdown_cluster") or {}):
            if error := facts.get("cluster_delete_error"):
                name, kind = facts["cluster_name"], facts.get("cluster", "kind")
                terminalreporter.write_line(f"could not delete {kind} cluster {name}: {error}\n(make clean removes it)")
            if facts.get("cluster_kept"):
                terminalreporter.write_line(facts["cluster_kept_message"])
        _say_kept_namespaces(terminalreporter, run.directory)
        _say_spread(terminalreporter, config, run.directory)


def _say_spread(terminalreporter: Any, config: pytest.Config, run_directory: Path) -> None:
    """With --repeat: the spread of every measured interval over the runs, printed and kept as spread.json."""
    rows = spread_of_run(run_directory) if config.getoption("--repeat") > 1 else []
    if rows:
        (run_directory / "spread.json").write_text(json.dumps(rows, indent=1) + "\n")
        terminalreporter.write_line("spread of measured intervals (seconds):")
        terminalreporter.write_line(render_spread(rows))


def _say_kept_namespaces(terminalreporter: Any, run_directory: Path) -> None:
    """KEEP=1: the namespaces of failed probes left for a look, from every run record of the run (its workers')."""
    kept = [
        k for record in sorted(run_directory.glob("run*.json")) for k in _read_json(record).get("namespaces_kept", [])
    ]
    for entry in kept:
        terminalreporter.write_line(
            f"kept for a look (KEEP=1): namespace {entry['namespace']} of the failed probe {entry['probe']}"
        )
    if kept:
        terminalreporter.write_line(
            "(make clean with the cluster's KUBECONFIG_FILE and CONTEXT removes them, or they go with a kept cluster)"
        )


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}
