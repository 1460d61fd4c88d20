"""The nightly workflow: valid against GitHub's workflow schema (check-jsonschema's vendored copy, in
`make lint`) and doing what the suite needs: every version, fail-fast off, records always uploaded."""

from __future__ import annotations

from pathlib import Path

import yaml

from harness.matrix import default_versions

WORKFLOW = Path(__file__).resolve().parent.parent / ".github" / "workflows" / "nightly.yml"


def test_the_nightly_matrix_covers_every_version_and_does_not_fail_fast() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    strategy = workflow["jobs"]["probe"]["strategy"]
    assert strategy["fail-fast"] is False
    assert strategy["matrix"]["version"] == default_versions()


def test_each_job_runs_make_probe_and_always_uploads_its_records() -> None:
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["probe"]["steps"]
    runs = [s.get("run", "") for s in steps]
    assert any(r.startswith("make probe VERSION=${{ matrix.version }}") and "--junitxml" in r for r in runs)
    uploads = {s["name"]: s for s in steps if s.get("uses", "").startswith("actions/upload-artifact")}
    assert uploads["Upload run records and JUnit XML"]["if"] == "always()"
    assert uploads["Upload kind logs"]["if"] == "failure()"


def test_the_summary_runs_after_every_version_even_failed_ones() -> None:
    summary = yaml.safe_load(WORKFLOW.read_text())["jobs"]["summary"]
    assert summary["needs"] == "probe"
    assert summary["if"] == "always()"
