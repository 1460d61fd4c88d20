"""make report (harness/report.py): the behaviour matrix from run records of several versions, and the
offline re-evaluation of recorded observations against changed expectations."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from harness.expectations import Claim, Expectation, load_claims
from harness.report import build_matrix, load_records, render_html, render_markdown, write_report

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


def test_markdown_and_html_show_the_matrix_and_provenance(replayed_runs: Path, tmp_path: Path) -> None:
    matrix = write_report([replayed_runs], tmp_path)
    markdown = (tmp_path / "report.md").read_text()
    assert "| `always.sigterm-ignored.phases` |" in markdown and '✅ ["Running", "Failed"]' in markdown
    assert "| v1.27.3 | derived |" in markdown
    html = (tmp_path / "report.html").read_text()
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


def test_the_html_report_renders_in_a_browser_with_its_cells(replayed_runs: Path, tmp_path: Path) -> None:
    browser = chromium()
    write_report([replayed_runs], tmp_path)
    page = (tmp_path / "report.html").as_uri()
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
    (kept.parent / "report.html").write_text((tmp_path / "report.html").read_text())


def test_each_probe_has_a_timeline_drawn_with_its_versions_stacked(replayed_runs: Path) -> None:
    from harness.timeline_svg import marks

    matrix = build_matrix(load_records([replayed_runs]))
    series = matrix.timelines["test_phase_after_deletion.py::test_always_pod_ignoring_sigterm"]
    assert list(series) == ["v1.26.6", "v1.27.3"]
    assert (0.0, "delete") in marks(series["v1.27.3"])
    labels = [label for _, label in marks(series["v1.27.3"])]
    assert "running-pod Failed" in labels and "main exit 137 (SIGKILL)" in labels
    assert "running-pod Failed" not in [label for _, label in marks(series["v1.26.6"])]
    html = render_html(matrix)
    assert html.count('<figure class="timeline"') == len(matrix.timelines)
    assert "<svg" in html and "main exit 137 (SIGKILL)" in html


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


def test_termination_order_timelines_show_prestop_sigterm_sigkill_and_the_grace_on_one_axis(
    replayed_runs: Path,
) -> None:
    from harness import timeline_svg

    matrix = build_matrix(load_records([replayed_runs]))
    within = matrix.timelines["test_termination_order.py::test_prestop_within_the_grace_period"]["v1.33.12"]
    marks, spans = timeline_svg.events(within)
    at = {m.label: m.t for m in marks}
    # the container's instants, placed with preStop start where the watch first showed the deletion (0.03)
    assert at["≈ preStop start"] == pytest.approx(0.03)
    assert at["≈ preStop end"] - at["≈ preStop start"] == pytest.approx(3.02)
    assert at["≈ SIGTERM"] - at["≈ preStop start"] == pytest.approx(3.1)
    assert at["main exit 137 (SIGKILL)"] > at["≈ SIGTERM"] > at["delete"] == 0.0
    assert [(s.kind, s.start, s.end, s.label) for s in spans] == [
        ("grace", 0.0, 10.0, "grace 10 s"),
        ("prestop", pytest.approx(0.03), pytest.approx(3.05), "preStop 3.02 s"),
    ]
    overrun = matrix.timelines["test_termination_order.py::test_prestop_overrunning_the_grace_period"]["v1.33.12"]
    _, spans = timeline_svg.events(overrun)
    assert [(s.kind, s.label) for s in spans] == [("grace", "grace 5 s"), ("prestop", "preStop, cut off")]
    endpoints = matrix.timelines["test_termination_order.py::test_endpoint_removal_while_the_container_still_runs"]
    labels = {label for _, label in timeline_svg.marks(endpoints["v1.33.12"])}
    assert {"q2x7k out of Endpoints", "q2x7k EndpointSlice: not ready, serving, terminating"} <= labels
    assert "q2x7k out of EndpointSlice" in {label for _, label in timeline_svg.marks(endpoints["v1.21.14"])}
    assert {"create service web", "create deployment web"} <= labels  # two creates, told apart
    svg = timeline_svg.draw("prestop", {"v1.33.12": within})
    assert 'class="span grace"' in svg and 'class="span prestop"' in svg and "≈ SIGTERM" in svg


def test_no_two_timeline_labels_overlap(replayed_runs: Path) -> None:
    """On every row of every drawing, the labels' boxes (as placed, with their estimated widths) are apart."""
    import re

    from harness import timeline_svg

    matrix = build_matrix(load_records([replayed_runs]))
    for probe, series in matrix.timelines.items():
        svg = timeline_svg.draw(probe, series)
        for row in re.findall(r'<g class="row".*?</g>(?=<g class="row"|<line|<path)', svg, flags=re.S):
            boxes = [
                (float(x0), float(x1), float(y))
                for y, x0, x1 in re.findall(
                    r'<text class="label" x="[^"]+" y="([^"]+)".*?data-x0="([^"]+)" data-x1="([^"]+)"', row
                )
            ]
            assert boxes, probe
            for i, (a0, a1, ay) in enumerate(boxes):
                for b0, b1, by in boxes[i + 1 :]:
                    assert ay != by or a1 <= b0 or b1 <= a0, (probe, row[:80])


def test_label_placement_stacks_labels_that_would_touch() -> None:
    from harness import timeline_svg

    marks = [
        timeline_svg.Mark(t, label, "phase") for t, label in ((0.0, "a long label"), (0.1, "another"), (15, "far"))
    ]
    placed = timeline_svg.place_labels([(100 + 10 * m.t, m) for m in marks], right_edge=1000)
    assert [p.level for p in placed] == [0, 1, 0]
    near_the_end = timeline_svg.place_labels([(995.0, marks[0])], right_edge=1000)[0]
    assert near_the_end.x1 < 995.0  # ends left of its instant rather than running off the drawing


def test_a_long_idle_stretch_is_cut_short_but_never_a_grace_period() -> None:
    from harness import timeline_svg

    scale = timeline_svg.Scale.over([-5.0, 0.0, 1.0, 6.0, 45.0], 0.0, 1000.0)
    assert [p.cut for p in scale.pieces] == [False, True, False]
    assert scale.x(6.0) > 700  # the events before the cut get most of the width
    kept = timeline_svg.Scale.over([-5.0, 0.0, 1.0, 6.0, 45.0], 0.0, 1000.0, keep=[(0.0, 45.0)])
    assert [p.cut for p in kept.pieces] == [False]
