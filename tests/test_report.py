"""make report (harness/report.py): the behaviour matrix from run records of several versions, and the
offline re-evaluation of recorded observations against changed expectations."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from harness.expectations import Claim, Expectation, load_claims
from harness.report import Matrix, build_matrix, load_records, render_html, render_markdown, write_report

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def replayed_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run records of every probe on every recording (several versions), as `make test` makes them."""
    runs = tmp_path_factory.mktemp("runs")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "probes",
            "--replay",
            "recordings",
            "--run-dir",
            str(runs),
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout
    return runs


@pytest.fixture(scope="module")
def report(replayed_runs: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Matrix, Path]:
    """`make report` on those runs, once (drawing every probe's timeline is the slow part): matrix, directory."""
    directory = tmp_path_factory.mktemp("report")
    return write_report([replayed_runs], directory), directory


def test_the_matrix_has_claims_by_versions_with_observed_values(replayed_runs: Path) -> None:
    matrix = build_matrix(load_records([replayed_runs]))
    assert len(matrix.versions) >= 3
    assert matrix.versions[:3] == ["v1.20.15", "v1.21.1", "v1.21.14"]  # ordered as versions, not as text
    cell = matrix.cells[("always.sigterm-ignored.phases", "v1.26.6")]
    assert (cell.observed, cell.status, cell.changed) == (["Running"], "pass", False)
    assert matrix.cells[("always.sigterm-ignored.phases", "v1.27.3")].observed == ["Running", "Failed"]
    differences = {claim for claim, _, _ in matrix.differences("v1.26.6", "v1.27.3")}
    assert "always.sigterm-ignored.phases" in differences
    assert "onfailure.sigterm-handled.phases" not in differences  # Succeeded on both sides


def test_markdown_and_html_show_the_matrix_and_provenance(report: tuple[Matrix, Path]) -> None:
    matrix, directory = report
    markdown = (directory / "report.md").read_text()
    assert "| `always.sigterm-ignored.phases` |" in markdown and '✅ ["Running", "Failed"]' in markdown
    assert "| v1.27.3 | derived |" in markdown
    html = (directory / "report.html").read_text()
    assert 'data-claim="always.sigterm-ignored.phases" data-version="v1.27.3"' in html
    assert "k/k#115331" in html  # the sources, one click away
    assert "<h3>v1.26.15 → v1.27.0-rc.0</h3>" in html  # consecutive versions, pre-releases in their place
    assert render_markdown(matrix) == markdown and render_html(matrix) == html


def test_a_corrected_expectation_re_evaluates_old_recordings_and_says_what_changed(replayed_runs: Path) -> None:
    def stricter(family: str) -> dict[str, Claim]:
        claims = dict(load_claims(family))
        if "always.sigterm-ignored.phases" in claims:
            claim = claims["always.sigterm-ignored.phases"]
            claims[claim.id] = dataclasses.replace(
                claim,
                expectations=(
                    Expectation(">=1.19", value=["Running"], sources=("what if the 1.27 change were reverted",)),
                ),
            )
        return claims

    matrix = build_matrix(load_records([replayed_runs]), claims_loader=stricter)
    changed = [(claim, version, cell.recorded_status, cell.status) for claim, version, cell in matrix.changed()]
    assert changed == [("always.sigterm-ignored.phases", "v1.27.3", "pass", "fail")]
    assert "(was pass)" in render_markdown(matrix)


CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    import os
    import shutil

    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs Debian's chromium for the browser test (.ci/run installs it)")
        pytest.skip("the browser test needs Debian's chromium (apt-get install chromium)")
    return found


def test_the_html_report_renders_in_a_browser_with_its_cells(report: tuple[Matrix, Path], tmp_path: Path) -> None:
    browser = chromium()
    page = (report[1] / "report.html").as_uri()
    profile = tmp_path / "profile"
    dom = subprocess.run(
        [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", page],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-claim="always.sigterm-ignored.phases"' in dom.stdout
    assert dom.stdout.count("<td class=") > 40
    assert dom.stdout.count('<figure class="timeline"') >= 19 and "<svg" in dom.stdout
    screenshot = tmp_path / "report.png"
    shot = subprocess.run(
        [
            browser,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            "--window-size=1600,1200",
            f"--screenshot={screenshot}",
            page,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert screenshot.stat().st_size > 10_000  # a rendered page, not an empty canvas
    kept = REPO / "runs" / "report" / "report-screenshot.png"  # kept beside a copy of the page, for a person
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_bytes(screenshot.read_bytes())
    (kept.parent / "report.html").write_text((report[1] / "report.html").read_text())


def test_each_probe_has_a_timeline_drawn_with_its_versions_stacked(report: tuple[Matrix, Path]) -> None:
    from harness.timeline_svg import marks

    matrix, directory = report
    series = matrix.timelines["test_phase_after_deletion.py::test_always_pod_ignoring_sigterm"]
    assert list(series) == ["v1.26.6", "v1.27.3"]
    assert (0.0, "delete") in marks(series["v1.27.3"])
    labels = [label for _, label in marks(series["v1.27.3"])]
    assert "running-pod Failed" in labels and "main exit 137" in labels
    assert "running-pod Failed" not in [label for _, label in marks(series["v1.26.6"])]
    html = (directory / "report.html").read_text()
    assert html.count('<figure class="timeline"') == len(matrix.timelines)
    assert "<svg" in html and "main exit 137" in html


def test_the_statefulset_timeline_marks_the_status_writes_that_matter(replayed_runs: Path) -> None:
    from harness.timeline_svg import marks

    matrix = build_matrix(load_records([replayed_runs]))
    series = matrix.timelines[
        "test_statefulset_status.py::test_statefulset_status_through_parallel_scale_up_and_partitioned_update"
    ]
    regression = [label for _, label in marks(series["v1.28.0"])]
    assert "replicas 1" in regression  # the too-small status.replicas of k/k#117865
    assert "currentRevision 7b4f9d6c58" in regression  # moved to the update revision too early
    fixed = [label for _, label in marks(series["v1.29.14"])]
    assert "currentRevision 7b4f9d6c58" not in fixed
