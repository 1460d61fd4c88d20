"""make report (harness/reports/report.py): the behaviour matrix from run records of several versions, and the
offline re-evaluation of recorded observations against changed expectations."""

from __future__ import annotations

import dataclasses
import html as html_module
import json
import re
import subprocess
import sys
from collections import Counter
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.base.families import all_recordings
from harness.base.run import safe_name
from harness.base.versions import KubeVersion
from harness.core import probe_helpers
from harness.core.expectations import Claim, Expectation, load_claims, pull_requests
from harness.core.records import load_records, origin_kind
from harness.core.transport_recording import RecordingText
from harness.doors import cli
from harness.reports import findings, report, report_provenance, timeline_layout, timeline_marks, timeline_svg
from harness.reports.report import render_html, render_markdown, write_report
from harness.reports.report_model import Matrix, Side, _behaviour, expected_value
from harness.reports.report_reading import build_matrix
from harness.reports.report_words import side_text
from harness.reports.wording import expected_text
from tests.chromium_pipe import ChromiumPage
from tests.live import as_version, live
from tests.pytest_here import pytest_here

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.conftest import ShippedReplay

REPO = Path(__file__).resolve().parent.parent
PHASES = "test_phase_after_deletion.py::test_always_pod_ignoring_sigterm"
# What a local cluster's recording says about itself (the shape the local provider's origin() writes).
LOCAL_ORIGIN: dict[str, Any] = {
    "kind": "live",
    "recorded_at": "2026-11-23T11:34:20+00:00",
    "cluster": "local",
    "cluster_name": "plp-1-27-test",
    "kubernetes": {
        "version": "v1.27.13",
        "commit": "25b4e43193bcda6c7328a6d147b1fb73a33f1598",
        "toolchain": "go1.22.12",
        "upstream_go": "go1.22.12",
        "how": "go build of k8s.io/kubernetes from the Go module proxy",
    },
    "containerd": "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3",
    "runc": "runc version 1.1.5+ds1",
    "kernel": "6.1.0",
    "suite_commit": "0123456789abcdef0123456789abcdef01234567",
    "suite_modified": False,
}


# What a run record made before derived recordings were retired names as its recording's origin.
OLD_DERIVED_ORIGIN: dict[str, Any] = {
    "kind": "derived",
    "note": "Derived, not recorded: no cluster ran.",
    "basis": "pod-phase-on-stop-1.27",
    "document": "pod-phase-on-stop-1.27",
    "node_access": True,
}


def matrix_cells(html: str) -> list[tuple[str, str, list[str], str]]:
    """The HTML matrix's cells as (claim, version, classes, the text of the behaviour the cell shows), row by row."""
    table = html[html.index('<table id="matrix"') :].split("</table>")[0]
    versions = re.findall(r'<th class="ver[^"]*" scope="col" data-version="([^"]+)"', table)
    out = []
    for claim, texts, body in re.findall(
        r'<tr data-row="\d+" data-claim="([^"]+)" data-t="([^"]*)">(.*?)</tr>', table, flags=re.S
    ):
        said = json.loads(html_module.unescape(texts))
        cells = re.findall(r'<td class="([^"]*)" data-b="(\d+)"', body)
        assert len(cells) == len(versions), claim
        out += [(claim, v, classes.split(), said[int(b)]) for v, (classes, b) in zip(versions, cells, strict=True)]
    return out


def by_version(versions: set[str]) -> list[str]:
    """Versions in the order the report puts them (as versions, not as text)."""
    return sorted(versions, key=lambda v: KubeVersion.parse(v).version)


@cache
def _recorded() -> tuple[tuple[str, str], ...]:
    """(probe, server version) of every checked-in recording, read once: the tests only read the recordings. Read off
    each file's text, not parsed whole (2.8 s of CPU for all of them, 0.3 s so): its probe from its head, its server
    version from its first server_version step, as Recording.server_git_version finds it (RecordingText)."""

    def read(path: Path) -> tuple[str, str]:
        written = RecordingText.of(path.read_text())
        version = written.server_git_version() if written is not None else None
        assert written is not None and version is not None, f"{path}: not laid out as written, or no server_version"
        return str(written.head["probe"]), version

    return tuple(map(read, all_recordings()))


def recorded_versions(*probes: str) -> list[str]:
    """The server versions of the live recordings (of these probes, 'module::function', if given), in order."""
    return by_version({version for probe, version in _recorded() if not probes or probe in probes})


def replay(recordings: Path, runs: Path) -> subprocess.CompletedProcess[str]:
    """Every probe on the recordings under `recordings`, as `make test` runs them; records go under `runs`. In this
    process (tests/pytest_here.py): a child pytest took 0.35 s of CPU more to replay the two recordings."""
    with pytest.MonkeyPatch.context() as patched:
        return pytest_here("probes", "--replay", str(recordings), "--run-dir", str(runs), "-q", monkeypatch=patched)


@pytest.fixture(scope="module")
def replayed_runs(shipped_replay: ShippedReplay) -> Path:
    """Run records of every probe on every recording (several versions), replayed once for the session
    (tests/conftest.py); the tests only read them."""
    return shipped_replay.runs


@pytest.fixture(scope="module")
def live_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run records of two synthetic alterations of live recordings (never put into recordings/), to set beside
    the checked-in ones:

    - the live local v1.27.3 Always pod with the origin an old run record names for a derived recording: a
      derived observation in the same cell as a live one, as `make report` on old run records shows it;
    - the live local v1.26.6 Always pod as if recorded on a local v1.27.13, where it disagrees: the phase stays Running.
    """
    made = tmp_path_factory.mktemp("live-recordings")
    old = live("phase_after_deletion/always_pod_ignoring_sigterm--v1.27.3-live-local.json")
    old.origin = {"namespace": old.origin["namespace"], "run_id": old.origin["run_id"], **OLD_DERIVED_ORIGIN}
    old.write(made / "always_pod_ignoring_sigterm--v1.27.3-derived.json")
    recording = as_version(
        live("phase_after_deletion/always_pod_ignoring_sigterm--v1.26.6-live-local.json"),
        LOCAL_ORIGIN["kubernetes"]["version"],
    )
    recording.origin = {**recording.origin, **LOCAL_ORIGIN}
    recording.write(made / "always_pod_ignoring_sigterm--v1.27.13-live.json")
    runs = tmp_path_factory.mktemp("live-runs")
    proc = replay(made, runs)
    assert "1 failed, 1 passed" in proc.stdout, proc.stdout  # the v1.27.13 one disagrees, as made
    return runs


@pytest.fixture(scope="module")
def replayed_records(shipped_replay: ShippedReplay) -> list[dict[str, Any]]:
    """The replayed runs' records, read once for the session (tests/conftest.py): building a matrix only reads them
    (each test that builds its own matrix of them, with other expectations or a subset, read them again before, 0.8 s
    of CPU each, and the copies made each full garbage collection longer)."""
    return shipped_replay.records


@pytest.fixture(scope="module")
def replayed_matrix(replayed_records: list[dict[str, Any]]) -> Matrix:
    """The matrix of the replayed runs, built once: the tests given it only read it."""
    return build_matrix(replayed_records)


@pytest.fixture(scope="module")
def replayed_html(replayed_matrix: Matrix) -> str:
    """report.html of the replayed runs' matrix, rendered once (the tests read it)."""
    return render_html(replayed_matrix)


@pytest.fixture(scope="module")
def replayed_markdown(replayed_matrix: Matrix) -> str:
    """report.md of the replayed runs' matrix, rendered once (the tests read it)."""
    return render_markdown(replayed_matrix)


@pytest.fixture(scope="module")
def written_report(replayed_runs: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Matrix, Path]:
    """`make report` on the replayed runs, once (drawing every probe's timeline is the slow part): matrix, directory.

    The tests that read its files share it and only read it.
    """
    directory = tmp_path_factory.mktemp("report")
    return write_report([replayed_runs], directory), directory


# ------------------------------------------------------------------------------------------ the matrix


def test_the_matrix_has_claims_by_versions_with_observed_values(replayed_matrix: Matrix) -> None:
    matrix = replayed_matrix
    assert len(matrix.versions) >= 3
    assert matrix.versions == recorded_versions()  # every recorded version, ordered as versions, not as text
    assert matrix.versions.index("v1.27.0-rc.0") < matrix.versions.index("v1.27.3")  # a pre-release first
    cell = matrix.cells[("always.sigterm-ignored.phases", "v1.26.6")]
    assert (cell.observed, cell.status, cell.changed) == (["Running"], "pass", False)
    assert matrix.cells[("always.sigterm-ignored.phases", "v1.27.3")].observed == ["Running", "Failed"]
    differences = {claim for claim, _, _ in matrix.differences("v1.26.6", "v1.27.3")}
    assert "always.sigterm-ignored.phases" in differences
    assert "onfailure.sigterm-handled.phases" not in differences  # Succeeded on both sides


def test_rows_are_grouped_by_document_then_probe_with_each_claims_sentence(
    replayed_matrix: Matrix, replayed_html: str
) -> None:
    matrix = replayed_matrix
    groups = matrix.groups()
    documents = [document for document, _ in groups]
    assert documents[:3] == ["pod-phase-on-stop-1.27", "active-deadline-pod-vs-job", "safe-pod-termination"]
    assert set(documents[3:]) == {  # the newer features' sources, cited claim by claim
        "sidecar-containers-kep-753",
        "native-sidecar-containers-blog-1.28",
        "sleep-action-kep-3960",
        "zero-sleep-kep-4818",
        "liveness-probe-grace-kep-2238",
        "kubernetes-1.27-release-blog",
    }
    # each group is headed by its document's public title, not its id
    heading = '<div class="stick">[Kubernetes 1.27] Pod 停止時のフェーズ遷移の変更: [Kubernetes 1.27] The change'
    assert heading in replayed_html
    first_document = [scenario for scenario, _ in groups[0][1]]
    assert first_document[0].probe == PHASES  # the document's own experiment first, in the module's order
    assert first_document[0].title == "Always pod ignoring SIGTERM"  # spelt as Kubernetes spells it
    assert "restartPolicy Always, finalizer, SIGTERM ignored, grace 5 s" in first_document[0].text
    assert {row.claim for row in matrix.rows} == set(matrix.claims)  # every claim has its row
    # a claim two probes check is a row under each of them
    assert sum(row.claim == "sigkilled.exit" for row in matrix.rows) == 2
    html = replayed_html
    statement = matrix.claims["always.sigterm-ignored.phases"]["statement"]
    assert statement in html
    order = [html.index(f'id="probe-{safe_name(s.probe, 100)}"') for _, scenarios in groups for s, _ in scenarios]
    assert order == sorted(order)  # the page shows them in that order


def test_every_cell_shows_a_value_the_expected_one_in_grey_where_nothing_was_recorded(
    replayed_matrix: Matrix, replayed_html: str
) -> None:
    matrix, html = replayed_matrix, replayed_html
    cells = matrix_cells(html)
    assert len(cells) == len(matrix.rows) * len(matrix.versions)  # no empty cell
    kinds = {(claim, version): classes[0] for claim, version, classes, _ in cells}
    assert kinds[("always.sigterm-ignored.phases", "v1.27.3")] == "o"
    assert kinds[("always.sigterm-ignored.phases", "v1.28.0")] == "o"
    # v1.27.7 is a live column, but only the StatefulSet probe ran there: this claim shows its expected value
    assert kinds[("always.sigterm-ignored.phases", "v1.27.7")] == "e"
    assert matrix.provenance["v1.27.7"]["kind"] == "live"
    texts = {(claim, version): text for claim, version, _, text in cells}
    assert texts[("always.sigterm-ignored.phases", "v1.27.7")] == "Running → Failed"
    # "none" only where no version range covers the version (a pre-release nobody checked)
    for (claim, version), kind in kinds.items():
        assert (kind == "n") == (
            matrix.expectation(claim, version) is None
            and not any(matrix.cell(r, version) for r in matrix.rows if r.claim == claim)
        )
    # a column where one probe ran is whole: every other row shows its expected value
    only_statefulset = {kind for (claim, version), kind in kinds.items() if version == "v1.27.7"}
    assert only_statefulset == {"o", "e"}
    assert sum(kinds[(row.claim, "v1.27.7")] == "e" for row in matrix.rows) >= len(matrix.rows) - 3


def test_columns_say_what_they_ran_on_and_every_value_shown_was_observed(
    replayed_matrix: Matrix, replayed_html: str, replayed_markdown: str
) -> None:
    matrix, html, markdown = replayed_matrix, replayed_html, replayed_markdown
    # Every recording is live: every column is, and names its cluster and when it was recorded.
    assert {v: p["kind"] for v, p in matrix.provenance.items()} == dict.fromkeys(recorded_versions(), "live")
    for version, p in matrix.provenance.items():
        when = r"2026-1[12]-\d\d \d\d:\d\d(–\d\d:\d\d| – 2026-1[12]-\d\d \d\d:\d\d)? UTC"  # one day, or several
        assert re.fullmatch(when, p["when"]), version  # when recorded
        assert all(w.startswith((f"local build of {version} at ", "kind node image plp-node")) for w in p["on_what"])
        # the first live runs name no suite commit (local v1.28.4 and most of v1.26.6, v1.27.3, v1.28.0); the
        # preStop probes were re-recorded on those from b352aa3 to measure on the container's clock, the
        # pod-deadline ones from 02da544; later runs name theirs (kind v1.28.4's)
        if version == "v1.28.4":  # and the later runs there name theirs
            assert "unknown" in p["suite"], p["suite"]
            assert all(re.fullmatch(r"[0-9a-f]{12}( \+ local changes)?|unknown", c) for c in p["suite"]), p["suite"]
        elif version in ("v1.26.6", "v1.27.3", "v1.28.0"):
            assert "unknown" in p["suite"] and "b352aa3ff4a4 + local changes" in p["suite"], version
            assert all(re.fullmatch(r"[0-9a-f]{12}( \+ local changes)?|unknown", c) for c in p["suite"]), version
        else:  # recorded after runs named their suite commit
            assert p["suite"] and all(re.fullmatch(r"[0-9a-f]{12}( \+ local changes)?", c) for c in p["suite"])
    assert matrix.provenance["v1.27.7"]["on_what"] == [
        "local build of v1.27.7 at 07a61d861519 (go1.20.10, staging modules substituted: cri-api v0.27.6, "
        "kube-controller-manager v0.27.4, kube-proxy v0.27.6, sample-apiserver v0.27.4, sample-controller v0.27.5, "
        "containerd 1.6.20~ds1-1+deb12u3)"
    ]
    assert matrix.provenance["v1.27.3"]["on_what"] == [  # by name
        "kind node image plp-node-shutdown:v1.27.3-5b983a86010d (kind v0.20.0)",
        "kind node image plp-node:v1.27.3 (kind v0.20.0)",
        "local build of v1.27.3 at 25b4e43193bc (go1.20.14, containerd 1.6.20~ds1-1+deb12u3)",
    ]
    assert matrix.provenance["v1.27.7"]["records"] == {"live": 1}
    # A matrix cell says "observed" where it was observed: every recorded cell is.
    table = html[html.index('<table id="matrix"') :].split("</table>")[0]
    seen = [classes for _, _, classes, _ in matrix_cells(html) if "o" in classes]
    assert seen and not any("derived" in classes for classes in seen)
    # Each column's head says what it holds and names its cluster.
    heads = {
        version: (classes, title)
        for classes, version, title in re.findall(
            r'<th class="ver([^"]*)" scope="col" data-version="([^"]+)" title="([^"]*)">', table
        )
    }
    assert set(heads) == set(matrix.versions)
    assert {classes for classes, _ in heads.values()} == {" live"}
    assert heads["v1.27.7"][1].startswith("v1.27.7: live: local build of v1.27.7 at 07a61d861519 (go1.20.10, staging ")
    # Nothing derived is named where no record is.
    shown = re.sub(r"<(style|script)\b.*?</\1>", "", html, flags=re.S)  # what the page says, not its styles
    assert "derived" not in shown.lower() and "📄" not in markdown
    assert "No version has been observed on a live cluster yet" not in html
    observed = f"{len(matrix.versions)} of the versions ({', '.join(recorded_versions())})"
    assert f"all {len(matrix.versions)} versions\nwere observed on a cluster" in html  # every column: not listed
    assert f"{observed} were observed on a live cluster" in markdown


def test_old_run_records_of_derived_recordings_are_never_called_observed(live_runs: Path) -> None:
    """Run records made before derived recordings were retired still name them: they are shown as derived."""
    old = [r for r in load_records([live_runs]) if origin_kind(r) == "derived"]
    assert len(old) == 1
    matrix = build_matrix(old)
    assert {v: p["kind"] for v, p in matrix.provenance.items()} == {"v1.27.3": "derived"}
    p = matrix.provenance["v1.27.3"]
    assert (p["when"], p["on_what"]) == (None, ["derived from documents, no cluster"])  # never the replay time
    html, markdown = render_html(matrix), render_markdown(matrix)
    assert "No version has been observed on a live cluster yet" in html
    observed = [classes for _, _, classes, _ in matrix_cells(html) if "o" in classes]
    assert observed and all("derived" in classes for classes in observed)
    table = html[html.index('<table id="matrix"') :].split("</table>")[0]
    assert '<th class="ver" scope="col" data-version="v1.27.3" title="v1.27.3: derived:' in table  # no live bar
    assert "not recorded (derived)" in html  # the column's "when"
    assert "✅ Running → Failed 📄" in markdown and "📄: derived from the documents (not observed)" in markdown
    title = "[Kubernetes 1.27] Pod 停止時のフェーズ遷移の変更"
    assert (
        f"| v1.27.3 | derived | derived from documents, no cluster ({title}) | none (nothing live) "
        "| not recorded (derived) |" in markdown
    )


def test_live_and_derived_observations_are_kept_apart_with_their_provenance(
    replayed_records: list[dict[str, Any]], live_runs: Path
) -> None:
    matrix = build_matrix([*replayed_records, *load_records([live_runs])])
    both, live_only = matrix.provenance["v1.27.3"], matrix.provenance["v1.27.13"]
    assert both["kind"] == "live + derived" and live_only["kind"] == "live"
    assert live_only["when"] == "2026-11-23 11:34 UTC"  # when it was recorded, not replayed
    assert live_only["suite"] == ["0123456789ab"]
    assert live_only["on_what"] == [
        "local build of v1.27.13 at 25b4e43193bc (go1.22.12, containerd 1.6.20~ds1-1+deb12u3)"
    ]
    assert both["on_what"] == [  # live first, by name
        "kind node image plp-node-shutdown:v1.27.3-5b983a86010d (kind v0.20.0)",
        "kind node image plp-node:v1.27.3 (kind v0.20.0)",
        "local build of v1.27.3 at 25b4e43193bc (go1.20.14, containerd 1.6.20~ds1-1+deb12u3)",
        "derived from documents, no cluster",
    ]
    # the first live recordings and the old derived record name no suite commit; the re-recorded preStop and
    # pod-deadline probes and the kind recordings do (known commits first, by name)
    assert both["suite"] == [
        "02da5445d444 + local changes",
        "8fc5b7bbab99",
        "b352aa3ff4a4 + local changes",
        "ec7c225ddc68",
        "ff35d5ff0566 + local changes",
        "unknown",
    ]
    mixed = report_provenance.column_provenance(
        [report_provenance.record_provenance(r) for r in load_records([live_runs])]
    )
    assert mixed["suite"] == ["0123456789ab", "unknown"]  # a known commit first; the derived recording names none
    # the live observation is the one shown; the derived one stays behind it
    row = next(r for r in matrix.rows if r.probe == PHASES and r.claim == "always.sigterm-ignored.phases")
    cell = matrix.cell(row, "v1.27.3")
    assert cell is not None and cell.origin == "live"
    # behind it: the other live one (kind and local both observed v1.27.3), then the derived one
    assert [o["origin"] for o in cell.others] == ["live", "derived"]
    failing = matrix.cell(row, "v1.27.13")
    assert failing is not None and (failing.origin, failing.status, failing.observed) == ("live", "fail", ["Running"])
    html = render_html(matrix)
    cells = matrix_cells(html)
    first_row = [(v, c) for claim, v, c, _ in cells if claim == "always.sigterm-ignored.phases"][: len(matrix.versions)]
    classes = dict(first_row)  # the Always pod's own row (the claim's first)
    assert "fail" in classes["v1.27.13"] and "o" in classes["v1.27.13"]
    assert "fail" not in classes["v1.27.3"] and "o" in classes["v1.27.3"]
    assert not any("derived" in c for _, _, c, _ in cells)  # the derived observation stays behind the live one
    assert 'class="ver live" scope="col" data-version="v1.27.3" title="v1.27.3: live + derived:' in html
    assert "1 recorded value disagrees with the expectation" in html
    markdown = render_markdown(matrix)
    assert "✅ **Running → Failed**" in markdown  # live: bold
    assert "| v1.27.13 | live | local build of v1.27.13" in markdown
    # a disagreement on one version is a change against its neighbours, with the same expectation on both
    changes = {(a, b): found for a, b, found in matrix.changes()}
    before = matrix.versions[matrix.versions.index("v1.27.13") - 1]  # its neighbour column, whichever that is
    regression = next(c for c in changes[(before, "v1.27.13")] if c.claim == "always.sigterm-ignored.phases")
    assert not regression.expected_changed and regression.prs == ()
    # the neighbour's value is what it observed, or its expected value where this probe did not run on it
    was = "live" if matrix.cell(row, before) is not None else "expected"
    assert (regression.was.basis, regression.now.basis, regression.now.status) == (was, "live", "fail")
    # both observations of v1.27.3 are drawn, each row saying which it is
    drawn = by_version({*recorded_versions(PHASES), "v1.27.13"})
    at = drawn.index("v1.27.3")
    assert list(matrix.timelines[PHASES]) == [*drawn[:at], "v1.27.3 (live)", "v1.27.3 (derived)", *drawn[at + 1 :]]
    assert matrix.timeline_tags[PHASES]["v1.27.3 (derived)"] == "derived"


def test_provenance_of_a_live_run_record_comes_from_its_run() -> None:
    """A record written by a live run (transport live): the suite commit is the run's, when is the origin's."""
    record = {
        "transport": "live",
        "recording_origin": {
            "kind": "live",
            "recorded_at": "2026-11-23T10:00:00+00:00",
            "cluster": "kind",
            "node_image": "kindest/node:v1.27.3@sha256:3966",
            "kind_version": "0.20.0",
        },
        "provenance": {"run_id": "r", "started": "2026-11-23T09:59:00+00:00", "suite_commit": "f" * 40},
    }
    seen = report_provenance.record_provenance(record)
    assert seen["on_what"] == "kind node image kindest/node:v1.27.3@sha256:3966 (kind 0.20.0)"
    assert (seen["when"], seen["suite"]) == ("2026-11-23T10:00:00+00:00", "f" * 12)
    existing = report_provenance.record_provenance(
        {"transport": "live", "recording_origin": {"kind": "live", "cluster": "existing", "context": "prod"}}
    )
    assert (existing["on_what"], existing["suite"]) == ("existing cluster (context prod)", "unknown")


# ------------------------------------------------------------------------------------------ what changed


def test_what_changed_lists_each_claim_whose_value_changes_with_the_pr_behind_it(
    replayed_matrix: Matrix, replayed_html: str, replayed_markdown: str
) -> None:
    matrix = replayed_matrix
    changes = {(a, b): {c.claim: c for c in found} for a, b, found in matrix.changes()}
    assert list(changes) == list(zip(matrix.versions, matrix.versions[1:], strict=False))
    # the 1.27 boundary: the last version before 1.27.0-rc.0 and the first from it
    first_1_27 = KubeVersion.parse("1.27.0-alpha.0")
    boundary = next((a, b) for a, b in changes if KubeVersion.parse(a) < first_1_27 <= KubeVersion.parse(b))
    phases = changes[boundary]["always.sigterm-ignored.phases"]
    assert phases.expected_changed and phases.prs[0] == "115331"
    assert {r.probe for r in phases.rows} == {PHASES, PHASES + "_default_grace"}  # one change, both scenarios
    # observed live on both sides: the StatefulSet regression on v1.28.0, with the release notes that say so (its
    # first pre-release)
    before = matrix.versions[matrix.versions.index("v1.28.0") - 1]
    regression = changes[(before, "v1.28.0")]["statefulset.partition.current-revision-holds"]
    assert regression.prs[0] == "117865" and regression.release_notes == ("CHANGELOG-1.28 v1.28.0-alpha.4",)
    assert "120731" not in regression.prs  # the fix is cited on the other side, not here
    assert (regression.was.basis, regression.was.value) == ("live", True)
    assert (regression.now.basis, regression.now.value, regression.agrees) == ("live", False, True)
    # and its fix on v1.28.4 (the column before it may hold other probes only: its value is then the expected one)
    before_fix = matrix.versions[matrix.versions.index("v1.28.4") - 1]
    fixed = changes[(before_fix, "v1.28.4")]["statefulset.partition.current-revision-holds"]
    assert fixed.prs == ("120731",) and fixed.was.value is False
    assert (fixed.now.basis, fixed.now.value, fixed.agrees) == ("live", True, True)
    after = matrix.versions[matrix.versions.index("v1.28.4") + 1]
    assert "statefulset.partition.current-revision-holds" not in changes[("v1.28.4", after)]
    # a measurement that moves inside one expected range is not a change
    assert all("between" not in json.dumps(c.was.value) for found in changes.values() for c in found.values())
    markdown, html = replayed_markdown, replayed_html
    for text, heading in ((markdown, "### "), (html, "<h2>")):
        assert text.index(f"{heading}What changed between versions") < text.index(f"{heading}Behaviour matrix")
        assert "https://github.com/kubernetes/kubernetes/pull/115331" in text
    assert f"#### {boundary[0]} → {boundary[1]}" in markdown
    assert f"<b>{boundary[0]} → {boundary[1]}</b>" in html


def test_pull_requests_are_read_from_the_sources_release_notes_first() -> None:
    sources = [
        "document pod-phase-on-stop-1.27 and k/k#119684 / k/k#119685: the rolling update was judged complete",
        "CHANGELOG-1.26 v1.26.7: #119223 (cherry-pick of k/k#117865); no k/k#120731 in v1.26.11",
    ]
    assert pull_requests(sources) == ["119223", "117865", "119684", "119685"]
    assert pull_requests(["kubernetes.io feature-gates table"]) == []


# ------------------------------------------------------------------------------------------ files


def test_markdown_and_html_show_the_matrix_and_provenance(
    written_report: tuple[Matrix, Path], replayed_markdown: str, replayed_html: str
) -> None:
    matrix, directory = written_report
    markdown = (directory / "report.md").read_text()
    # the claim's row under the first probe: live and expected values, each marked as what it is
    statement = matrix.claims["always.sigterm-ignored.phases"]["statement"]
    row = next(line for line in markdown.splitlines() if line.startswith(f"| {statement} `always.sigterm"))
    values = dict(zip(matrix.versions, [v.strip() for v in row.rstrip(" |").split(" | ")[1:]], strict=True))
    assert values["v1.26.6"] == "✅ **Running**"
    assert values["v1.27.3"] == values["v1.28.0"] == "✅ **Running → Failed**"
    assert values["v1.27.7"] == "<sub>Running → Failed</sub>"
    assert f"| claim | {' | '.join(matrix.versions)} |" in markdown  # the head
    assert (
        "| v1.27.3 | live | kind node image plp-node-shutdown:v1.27.3-5b983a86010d (kind v0.20.0); kind "
        "node image plp-node:v1.27.3 (kind v0.20.0); local build of v1.27.3 at 25b4e43193bc (go1.20.14, containerd "
        "1.6.20~ds1-1+deb12u3) | kind v0.20.0 (runtime not recorded); local build (containerd 1.6.20, runc 1.1.5) | "
        "2026-11-23 12:09 – 2026-11-27 08:48 UTC |" in markdown
    )
    assert (  # several days: a local build with the tag's Go, kind, then a bisection's build with go1.20's newest
        "| v1.28.4 | live | kind node image plp-node-shutdown:v1.28.4-7b5a93ea20fe (kind v0.20.0); kind node image "
        "plp-node:v1.28.4 (kind v0.20.0); local build of v1.28.4 at bae2c62678db (go1.20.11, containerd "
        "1.6.20~ds1-1+deb12u3); local build of v1.28.4 at bae2c62678db (go1.20.14, containerd 1.6.20~ds1-1+deb12u3) "
        "| kind v0.20.0 (runtime not recorded); local build (containerd 1.6.20, runc 1.1.5) "
        "| 2026-11-23 12:08 – 2026-11-27 09:49 UTC |" in markdown
    )
    # a job summary's size: GitHub allows 1 MiB; the matrix grows by a column a version (6.7 kB at 45 versions; 7.6 kB
    # at 51 with the sidecar and preStop sleep rows; 8.6 kB at 52 with the Jobs' policy-field rows)
    assert len(markdown.encode()) < min(9_000 * len(matrix.versions), 900_000)
    html = (directory / "report.html").read_text()
    assert '<tr data-row="3" data-claim="always.sigterm-ignored.phases"' in html
    assert "k/k#115331" in html  # the sources, one click away
    # what write_report wrote is what rendering the same records' matrix gives (the shared, separately built one)
    assert replayed_markdown == markdown and replayed_html == html
    # the timelines are files next to report.md, linked from it
    links = re.findall(r"\]\((timelines/[^)]+\.svg)\)", markdown)
    assert len(set(links)) == len(matrix.timelines)
    for link in links:
        assert (directory / link).read_text().startswith("<svg")


def test_a_corrected_expectation_re_evaluates_old_recordings_and_says_what_changed(
    replayed_records: list[dict[str, Any]],
) -> None:
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

    matrix = build_matrix(replayed_records, claims_loader=stricter)
    changed = [(claim, version, cell.recorded_status, cell.status) for claim, version, cell in matrix.changed()]
    from_1_27 = [v for v in recorded_versions(PHASES) if KubeVersion.parse(v) >= KubeVersion.parse("1.27.0-rc.0")]
    assert len(from_1_27) >= 3
    assert changed == [("always.sigterm-ignored.phases", version, "pass", "fail") for version in from_1_27]
    before = matrix.cells[("always.sigterm-ignored.phases", "v1.26.6")]  # live, Running: still agrees
    assert (before.origin, before.status, before.changed) == ("live", "pass", False)
    assert "(was pass)" in render_markdown(matrix)
    html = render_html(matrix, svgs={})  # the cells are what is checked: the records' timelines are drawn elsewhere
    both_rows = [v for v in recorded_versions(PHASES + "_default_grace") if v in from_1_27]
    failed = [v for claim, v, c, _ in matrix_cells(html) if claim == "always.sigterm-ignored.phases" and "changed" in c]
    assert len(failed) == len(from_1_27) + len(both_rows)  # the claim's two rows


def ids_on(page: str) -> Counter[str]:
    """Every id attribute of a page's elements, counted."""
    found: Counter[str] = Counter()

    class Ids(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.update(value for name, value in attrs if name == "id" and value is not None)

    Ids().feed(page)
    return found


def test_no_id_is_on_the_page_twice(written_report: tuple[Matrix, Path]) -> None:
    ids = ids_on((written_report[1] / "report.html").read_text())
    assert len(ids) > 250 and [i for i, n in ids.items() if n > 1] == []


def test_a_probe_checking_claims_of_two_documents_shows_under_each_and_keeps_one_anchor(
    replayed_records: list[dict[str, Any]],
) -> None:
    """A synthetic case: one claim of the SIGTERM-ignoring pod's probe said to come from another document (the
    safe-termination write-up). Its probe heads a group under each document; the first keeps #probe-..., where
    the page's links go, the other's id is its own."""
    moved = "sigterm-ignored.killed-after-grace"

    def two_documents(family: str) -> dict[str, Claim]:
        claims = dict(load_claims(family))
        if moved in claims:
            claims[moved] = dataclasses.replace(claims[moved], document="safe-pod-termination")
        return claims

    matrix = build_matrix(replayed_records, claims_loader=two_documents)
    probe = next(row.probe for row in matrix.rows if row.claim == moved)
    page = render_html(matrix, svgs={})
    headings = re.findall(r'<tr class="scenario" id="([^"]+)">', page)
    anchor = f"probe-{safe_name(probe, 100)}"
    own = [i for i in headings if i == anchor or i.startswith(f"{anchor}--")]
    assert own == [anchor, f"{anchor}--safe-pod-termination"]
    ids = ids_on(page)
    assert [i for i, n in ids.items() if n > 1] == []


# ------------------------------------------------------------------------------------------ timelines


def test_each_probe_has_a_timeline_drawn_with_its_versions_stacked(written_report: tuple[Matrix, Path]) -> None:
    matrix, directory = written_report
    series = matrix.timelines[PHASES]
    assert list(series) == recorded_versions(PHASES)
    assert matrix.timeline_tags[PHASES] == dict.fromkeys(series, "live")
    for version in ("v1.27.3", "v1.28.0"):
        assert (0.0, "delete") in timeline_marks.marks(series[version])
        labels = [label for _, label in timeline_marks.marks(series[version])]
        assert "running-pod Failed" in labels and "main exit 137 (SIGKILL)" in labels
    assert "running-pod Failed" not in [label for _, label in timeline_marks.marks(series["v1.26.6"])]
    svg = (directory / report.timeline_file(PHASES)).read_text()
    tags = re.findall(r'<g class="row" data-version="([^"]+)">.*?font-size="10">(\w+)</text>', svg)
    assert tags == [(version, "live") for version in series]  # under each row's version
    html = (directory / "report.html").read_text()
    assert html.count('<figure class="timeline"') == len(matrix.timelines)
    packed = page_drawings(html)  # carried packed, each the very drawing written beside the page
    assert len(packed) == len(matrix.timelines) and "main exit 137 (SIGKILL)" in packed[PHASES]
    assert all(svg == (directory / report.timeline_file(probe)).read_text() for probe, svg in packed.items())


def page_drawings(html: str) -> dict[str, str]:
    """The timelines report.html carries packed, unpacked, by probe."""
    found = re.findall(
        r'<figure class="timeline" id="[^"]+" data-probe="([^"]+)"><div class="drawing"[^>]*>'
        r'<script type="text/plain" class="packed">([^<]+)</script>',
        html,
    )
    return {probe.replace("&gt;", ">").replace("&amp;", "&"): report.unpacked(text) for probe, text in found}


def test_a_container_end_the_kubelet_lost_is_not_drawn_as_an_exit(replayed_matrix: Matrix) -> None:
    """The kind v1.26.6 run whose kubelet lost the container's end (ContainerStatusUnknown, exit 137, no finishedAt:
    the matrix's exit claims are not observable there) drew a SIGKILL at +14.19 s: the kubelet's placeholder. It is
    drawn as a lost end now, in that drawing and in every other where a status says so."""
    series = replayed_matrix.timelines[PHASES]
    lost = timeline_marks.events(series["v1.26.6"])[0]
    assert "main end lost" in [mark.label for mark in lost]
    assert not [mark for mark in lost if mark.kind == "exit"]
    assert replayed_matrix.cells[("sigterm-ignored.exit", "v1.26.6")].status == "not observable"
    placeholders = 0
    for probe, by_version in replayed_matrix.timelines.items():
        for version, entries in by_version.items():
            statuses = [
                (entry["t"], container["name"])
                for entry in entries
                for container in (entry.get("detail") or {}).get("containers") or []
                if container.get("reason") == probe_helpers.LOST_END_REASON
            ]
            placeholders += len(statuses)
            marks = timeline_marks.events(entries)[0]
            exits = {(mark.t, mark.label.split(" exit ")[0]) for mark in marks if mark.kind == "exit"}
            assert not exits & set(statuses), (probe, version)
    assert placeholders >= 2  # the check saw such statuses


def test_the_statefulset_timeline_marks_the_status_writes_that_matter(replayed_matrix: Matrix) -> None:
    matrix = replayed_matrix
    series = matrix.timelines[
        "test_statefulset_status.py::test_statefulset_status_through_parallel_scale_up_and_partitioned_update"
    ]

    def labels(version: str) -> list[str]:
        return [label for _, label in timeline_marks.marks(series[version])]

    def after_scale_up(version: str) -> list[str]:
        return labels(version)[labels(version).index("replicas 3") :]

    def revisions(version: str) -> list[str]:
        return [label for label in labels(version) if label.startswith("currentRevision ")]

    tags = matrix.timeline_tags[
        "test_statefulset_status.py::test_statefulset_status_through_parallel_scale_up_and_partitioned_update"
    ]
    assert set(tags.values()) == {"live"}
    # the too-small status.replicas of k/k#117865: a write below the 3 pods after status.replicas reached 3, each
    # time the controller recreates a pod (the probe deletes parallel-web-2, -1, then parallel-web-0 twice)
    for version in ("v1.28.0", "v1.28.4"):
        assert after_scale_up(version).count("replicas 2") == 4, version
    assert not {"replicas 0", "replicas 1", "replicas 2"} & set(after_scale_up("v1.27.3"))  # before the regression
    # the partition bug (k/k#120731): currentRevision moves to the update revision when parallel-web-0, below the
    # partition, is recreated; on v1.28.4 it holds, as it does on v1.27.3 and v1.37.2
    moved = revisions("v1.28.0")
    assert len(moved) == 2 and moved[0] != moved[1]
    for version in ("v1.27.3", "v1.28.4", "v1.37.2"):
        assert len(revisions(version)) == 1, version


def test_termination_order_timelines_show_prestop_sigterm_sigkill_and_the_grace_on_one_axis(
    replayed_records: list[dict[str, Any]],
) -> None:
    """The figures below are those of the local recordings (a version with a kind recording too shows the first)."""
    matrix = build_matrix(
        r for r in replayed_records if "-live-local" in str((r.get("recording_origin") or {}).get("file"))
    )
    within = matrix.timelines["test_termination_order.py::test_prestop_within_the_grace_period"]["v1.37.2"]
    marks, spans = timeline_marks.events(within)
    at = {m.label: m.t for m in marks}
    # the container's instants (live local v1.37.2), placed with preStop start where the watch first showed the
    # deletion (0.11 s after the delete)
    assert at["≈ preStop start"] == pytest.approx(0.11)
    assert at["≈ preStop end"] - at["≈ preStop start"] == pytest.approx(3.01)
    assert at["≈ SIGTERM"] - at["≈ preStop start"] == pytest.approx(3.08)
    assert at["main exit 137 (SIGKILL)"] > at["≈ SIGTERM"] > at["delete"] == 0.0
    assert [(s.kind, s.start, s.end, s.label) for s in spans] == [
        ("grace", 0.0, 10.0, "grace 10 s"),
        ("prestop", pytest.approx(0.11), pytest.approx(3.12), "preStop 3.01 s"),
    ]
    overrun = matrix.timelines["test_termination_order.py::test_prestop_overrunning_the_grace_period"]["v1.37.2"]
    _, spans = timeline_marks.events(overrun)
    assert [(s.kind, s.label) for s in spans] == [("grace", "grace 5 s"), ("prestop", "preStop, cut off")]
    endpoints = matrix.timelines["test_termination_order.py::test_endpoint_removal_while_the_container_still_runs"]
    labels = {label for _, label in timeline_marks.marks(endpoints["v1.37.2"])}
    assert {"zzt6z out of Endpoints", "zzt6z EndpointSlice: not ready, serving, terminating"} <= labels
    assert "f6h7k out of EndpointSlice" in {label for _, label in timeline_marks.marks(endpoints["v1.21.14"])}
    assert {"create service web", "create deployment web"} <= labels  # two creates, told apart
    svg = report.drawings(matrix)["test_termination_order.py::test_prestop_within_the_grace_period"]
    assert 'class="span grace"' in svg and 'class="span prestop"' in svg and "≈ SIGTERM" in svg


def test_no_two_timeline_labels_overlap(replayed_matrix: Matrix) -> None:
    """On every row of every drawing, the labels' boxes (as placed, with their estimated widths) are apart. A row may
    have none (a pod the API server refused, before its field's release); every drawing has labelled rows."""
    for probe, svg in report.drawings(replayed_matrix).items():
        labelled = 0
        for row in re.findall(r'<g class="row".*?</g>(?=<g class="row"|<line|<path)', svg, flags=re.S):
            boxes = [
                (float(x0), float(x1), float(y))
                for y, x0, x1 in re.findall(
                    r'<text class="label" x="[^"]+" y="([^"]+)".*?data-x0="([^"]+)" data-x1="([^"]+)"', row
                )
            ]
            labelled += bool(boxes)
            for i, (a0, a1, ay) in enumerate(boxes):
                for b0, b1, by in boxes[i + 1 :]:
                    assert ay != by or a1 <= b0 or b1 <= a0, (probe, row[:80])
        assert labelled, probe


def test_label_placement_stacks_labels_that_would_touch() -> None:
    marks = [
        timeline_marks.Mark(t, label, "phase") for t, label in ((0.0, "a long label"), (0.1, "another"), (15, "far"))
    ]
    placed = timeline_layout.place_labels([(100 + 10 * m.t, m) for m in marks], right_edge=1000)
    assert [p.level for p in placed] == [0, 1, 0]
    near_the_end = timeline_layout.place_labels([(995.0, marks[0])], right_edge=1000)[0]
    assert near_the_end.x1 < 995.0  # ends left of its instant rather than running off the drawing


def test_a_wait_that_ended_without_its_outcome_is_marked_and_drawn() -> None:
    """A TIMEOUT entry (the end of a wait is the observation, judged by the claims) is an instant of its own."""
    entries = [
        {"t": 0.0, "source": "probe", "what": "delete", "detail": {"pod": "web"}},
        {"t": 30.0, "source": "pods", "what": "TIMEOUT", "detail": {"awaited": "pod web gone"}},
    ]
    assert (30.0, "wait ended") in timeline_marks.marks(entries)
    svg = timeline_svg.draw("a probe", {"v1.27.3": entries})
    assert 'class="mark timeout"' in svg and ">wait ended</text>" in svg
    assert "a wait ended without what it awaited" in timeline_svg.legend()


def test_a_long_idle_stretch_is_cut_short_but_never_a_grace_period() -> None:
    scale = timeline_layout.Scale.over([-5.0, 0.0, 1.0, 6.0, 45.0], 0.0, 1000.0)
    assert [p.cut for p in scale.pieces] == [False, True, False]
    assert scale.x(6.0) > 700  # the events before the cut get most of the width
    kept = timeline_layout.Scale.over([-5.0, 0.0, 1.0, 6.0, 45.0], 0.0, 1000.0, keep=[(0.0, 45.0)])
    assert [p.cut for p in kept.pieces] == [False]


# ------------------------------------------------------------------------------------------ the browser

# Run in the page once it is loaded, as `(CHECK_SCRIPT)(dx, scan)`: scroll into the matrix (dx px sideways), check
# the sticky parts, open a cell, and with `scan` measure every timeline label and every word as the browser laid them
# out. END (what the page does next) runs before it answers.
CHECK_SCRIPT = """async (dx, scan) => {
  await window.reportReady;  // the cells' data and every drawing unpacked
  await window.drawTimelines();
  const out = {};
  const rect = (el) => el.getBoundingClientRect();
  // the first screen, before anything scrolls: what the suite found, and the links from it into the page
  const found = document.getElementById("findings");
  out.firstSection = document.querySelector("body > section").id;
  out.innerHeight = window.innerHeight;
  out.findingsTop = rect(found).top;
  out.findingsBottom = rect(found).bottom;
  out.findingsRows = found.querySelectorAll("tbody tr").length;
  out.findingsTargets = [...found.querySelectorAll('a[href^="#"]')].map((a) => a.getAttribute("href").slice(1));
  out.findingsMissing = out.findingsTargets.filter((id) => !document.getElementById(id));
  const corner = document.querySelector("#matrix thead th.corner");
  const heads = document.querySelectorAll("#matrix thead th.ver");
  out.innerWidth = window.innerWidth;
  out.lastColumnRight = rect(heads[heads.length - 1]).right;
  out.columnWidths = [...heads].map((th) => rect(th).width);
  out.headerTopBefore = rect(corner).top;
  const deep = document.querySelectorAll("#matrix tbody tr th.claim")[40].closest("tr");
  window.scrollTo(dx, rect(deep).top + window.scrollY - 300);
  out.scrollX = window.scrollX;
  out.scrollY = window.scrollY;
  out.cornerTop = rect(corner).top;
  out.cornerLeft = rect(corner).left;
  out.versionHeadTop = rect(heads[heads.length - 1]).top;
  out.claimLeft = rect(deep.querySelector("th.claim")).left;
  out.deepRowTop = rect(deep).top;
  const column = (v) => [...heads].findIndex((th) => th.dataset.version === v) + 1;
  const cellOf = (claim, v) => document.querySelector(`#matrix tr[data-claim="${claim}"]`).cells[column(v)];
  const cell = cellOf("always.sigterm-ignored.phases", "v1.27.3");
  const panel = document.getElementById("panel");
  out.panelHiddenBefore = panel.hidden;
  cell.click();
  out.panelHidden = panel.hidden;
  out.panelWidth = rect(panel).width;
  out.panelText = panel.innerText;
  out.panelLinks = [...panel.querySelectorAll("a")].map((a) => a.href);
  cellOf("always.sigterm-ignored.phases", "v1.27.7").click();
  out.expectedPanelText = panel.innerText;
  if (scan) {
    // the page as Chromium built it, counted here (its 2 MB outerHTML sent back to be searched took 0.8 s of CPU)
    out.built = {
      phasesRows: document.querySelectorAll('[data-claim="always.sigterm-ignored.phases"]').length,
      classedCells: document.querySelectorAll("td[class]").length,
      timelines: document.querySelectorAll("figure.timeline").length,
      svgs: document.querySelectorAll("svg").length,
    };
    let overlaps = [], labels = 0;
    for (const row of document.querySelectorAll("figure.timeline g.row")) {
      const boxes = [...row.querySelectorAll("text.label")].map((t) => [t.textContent, t.getBBox()]);
      labels += boxes.length;
      boxes.forEach(([na, a], i) => boxes.slice(i + 1).forEach(([nb, b]) => {
        const apart = (p, q, lo, size) => p[lo] + p[size] - 0.5 <= q[lo] || q[lo] + q[size] - 0.5 <= p[lo];
        if (!apart(a, b, "x", "width") && !apart(a, b, "y", "height"))
          overlaps.push([row.dataset.version, na, nb]);
      }));
    }
    out.labels = labels;
    out.overlaps = overlaps;
    // Words broken across lines: a word (between spaces and the zero-width spaces report.py puts into long tokens)
    // whose text the browser laid out on more than one line, in the matrix's values, version and claim columns and
    // the table of what changed.
    const broken = [];
    let words = 0;
    const where = "#matrix td .t, #matrix thead th.ver a, #matrix th.claim, table.changes td, table.changes th";
    for (const el of document.querySelectorAll(where)) {
      if (el.closest("[hidden]") || !el.getClientRects().length) continue;
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (const m of node.data.matchAll(/[^\\s\\u200b-]+-*/g)) {
          const range = document.createRange();
          range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
          const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0)
            .map((r) => Math.round(el.closest(".up, th.ver a") ? r.left : r.top)));
          words++;
          if (lines.size > 1) broken.push(m[0]);
        }
      }
    }
    out.words = words;
    out.brokenWords = broken.slice(0, 20);
    out.brokenCount = broken.length;
  }
  out.upright = document.querySelectorAll("#matrix td .t.up").length;
  END
  return out;
}"""


def chromium() -> str:
    import os
    import shutil

    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs Debian's chromium for the browser test (.ci/run installs it)")
        pytest.skip("the browser test needs Debian's chromium (apt-get install chromium)")
    return found


# What the page does once checked at each width, before its screenshot (evidence for a person): at 1400 px it goes
# back to the top as a newcomer first sees it; at 900 px it stays scrolled sideways and down with a cell's sources
# open; at 1600 px a range of versions is chosen (NARROWED) and the page goes back to the top.
TO_THE_TOP = "panel.hidden = true; window.scrollTo(0, 0);"
CELL_OPEN = "cell.click();"  # v1.27.3's, observed live
NARROWED = """
out.fitsBefore = out.lastColumnRight <= out.innerWidth;
const pick = (id, v) => { const s = document.getElementById(id);
  s.value = [...s.options].find((o) => o.textContent === v).value; s.dispatchEvent(new Event("change")); };
pick("range-from", "v1.26.15"); pick("range-to", "v1.28.0");
const shown = [...document.querySelectorAll("#matrix thead th.ver")].filter((th) => !th.hidden);
out.shownVersions = shown.map((th) => th.dataset.version);
out.shownWidth = shown[0].getBoundingClientRect().width;
out.fitsAfter = shown[shown.length - 1].getBoundingClientRect().right <= out.innerWidth;
const phases = document.querySelector('#matrix tr[data-claim="always.sigterm-ignored.phases"]');
out.phasesShown = [...phases.cells].slice(1).filter((td) => !td.hidden).map(
  (td) => [td.classList.contains("moved"), td.textContent]);
panel.hidden = true; window.scrollTo(0, 0);
"""


def checked(page: ChromiumPage, scroll_x: int, end: str, scan: bool = False) -> dict[str, Any]:
    """What CHECK_SCRIPT measures in the page as it stands, `end` run after."""
    script = CHECK_SCRIPT.replace("END", end)
    found: dict[str, Any] = page.evaluate(f"({script})({scroll_x}, {json.dumps(scan)})")
    return found


@pytest.fixture(scope="module")
def browsed_report(
    written_report: tuple[Matrix, Path], tmp_path_factory: pytest.TempPathFactory
) -> Callable[[], dict[str, Any]]:
    """report.html in Debian's headless Chromium, one launch for the tests below, made when first called (in the test,
    so that a missing chromium fails or skips the test itself): loaded in a 1400 × 900 window and checked with every
    label and word measured, what it built counted ("built"), the top of the page shot (screenshot-1400.png); then the
    viewport narrowed to 900 × 900 (the page's layout runs on a resize as on its load) and checked scrolled with a cell
    open, shot as it stands (screenshot-900.png); then the window widened to 1600 × 900 and a range of versions chosen.
    Answers what each check measured, by width, and the folder ("dir") of the page and its shots."""

    @cache
    def browsed() -> dict[str, Any]:
        browser = chromium()
        folder = tmp_path_factory.mktemp("browser")
        page = folder / "report.html"  # a copy: the shots are written beside it
        page.write_text((written_report[1] / "report.html").read_text())
        with ChromiumPage(browser, folder / "profile", 1400, 900) as window:
            window.load(page)
            wide = checked(window, 0, TO_THE_TOP, scan=True)
            window.resize(1400, 900)  # the whole window's height painted, as Chromium's --screenshot paints it
            window.screenshot(folder / "screenshot-1400.png")
            window.resize(900, 900)
            narrow = checked(window, 400, CELL_OPEN)
            window.screenshot(folder / "screenshot-900.png")
            window.evaluate('document.getElementById("panel").hidden = true; window.scrollTo(0, 0);')  # as loaded
            window.resize(1600, 900, window=True)
            at_1600 = checked(window, 0, NARROWED)
        return {"wide": wide, "narrow": narrow, "1600": at_1600, "dir": folder}

    return browsed


def test_the_html_report_renders_in_a_browser_sticky_parts_stay_and_a_cell_opens_its_sources(
    written_report: tuple[Matrix, Path], browsed_report: Callable[[], dict[str, Any]]
) -> None:
    wide, narrow = browsed_report()["wide"], browsed_report()["narrow"]
    built = wide["built"]  # the page as Chromium built it
    # The first screen (1,400 × 900) answers what the suite found, whole, and where to look for each finding: its
    # probe's rows, its timeline and its claims, every link landing on this page
    assert wide["firstSection"] == "findings"
    assert 0 < wide["findingsTop"] < wide["findingsBottom"] <= wide["innerHeight"] <= 900
    assert wide["findingsRows"] == len(findings.findings())
    assert len(wide["findingsTargets"]) > 3 * wide["findingsRows"] and wide["findingsMissing"] == []
    assert built["phasesRows"] > 0
    assert built["classedCells"] > 1000
    assert built["timelines"] >= 19 and built["svgs"] > 0

    least, most = report.COLUMN_PX["version"]
    # The version columns share a 1400 px window, none narrower than the least a value needs: every recorded
    # version fits while they can at the least width (68 can), else the matrix scrolls sideways with the claim
    # column staying put (as at 900 px, below); no word is broken across lines (values too wide for their run
    # are written upright, version names always).
    columns = len(wide["columnWidths"])
    assert columns == len(written_report[0].versions)
    can_fit = report.COLUMN_PX["claim"] + columns * least <= wide["innerWidth"] - 32
    assert (wide["lastColumnRight"] <= wide["innerWidth"]) == can_fit
    assert wide["words"] > 5_000 and wide["brokenCount"] == 0, wide["brokenWords"]
    assert 0 < wide["upright"] < 200  # some values are upright, most are not
    assert least <= min(wide["columnWidths"]) <= max(wide["columnWidths"]) <= most
    assert max(wide["columnWidths"]) - min(wide["columnWidths"]) < 1  # shared evenly
    assert wide["headerTopBefore"] > 500  # the header starts further down: the check below is not vacuous
    assert abs(wide["cornerTop"]) < 1 and abs(wide["versionHeadTop"]) < 1  # and stays at the top when scrolled
    assert wide["deepRowTop"] > 0
    assert wide["panelHiddenBefore"] and not wide["panelHidden"] and wide["panelWidth"] > 300
    assert "Observed on a live cluster: ✓ pass" in wide["panelText"]  # v1.27.3: on kind and on a local build
    assert (
        "live: kind node image plp-node-shutdown:v1.27.3-5b983a86010d (kind v0.20.0); kind node image "
        "plp-node:v1.27.3 (kind v0.20.0); local build of v1.27.3 at 25b4e43193bc (go1.20.14, containerd "
        "1.6.20~ds1-1+deb12u3)" in wide["panelText"]
    )
    # v1.27.7, where only the StatefulSet probe ran: the expected value, said to be one
    assert "Nothing recorded on this version; the expected value is shown." in wide["expectedPanelText"]
    assert "Observed" not in wide["expectedPanelText"].split("Expected, by version range")[0]
    assert "k/k#115331" in wide["panelText"] and ">=1.27.0-rc.0" in wide["panelText"]
    assert "https://github.com/kubernetes/kubernetes/pull/115331" in wide["panelLinks"]
    assert wide["labels"] > 300 and wide["overlaps"] == []  # measured as drawn, not as estimated

    assert narrow["scrollX"] > 100  # the matrix is wider than the window, and the page scrolled sideways
    assert min(narrow["columnWidths"]) >= least  # the columns keep their least width rather than squeeze
    assert abs(narrow["claimLeft"]) < 1 and abs(narrow["cornerLeft"]) < 1  # the claim column stays put
    assert abs(narrow["cornerTop"]) < 1

    # Evidence for a person: the top of the page as a newcomer sees it in a 1400 px window, and the matrix
    # scrolled in a 900 px one with a cell's sources open (both shot by browsed_report).
    page = browsed_report()["dir"] / "report.html"
    top, scrolled = page.with_name("screenshot-1400.png"), page.with_name("screenshot-900.png")
    assert top.stat().st_size > 50_000 and scrolled.stat().st_size > 50_000  # rendered, not an empty canvas
    kept = REPO / "runs" / "report"
    kept.mkdir(parents=True, exist_ok=True)
    (kept / "report-screenshot.png").write_bytes(top.read_bytes())
    (kept / "report-scrolled.png").write_bytes(scrolled.read_bytes())
    (kept / "report.html").write_text(page.read_text())


def _record(
    probe: str, observed: object, gaps: list[str] | None, recorded: str, version: str = "v1.27.3"
) -> dict[str, object]:
    verdict = {"claim": "always.sigterm-ignored.phases", "status": recorded, "observed": observed}
    if gaps:
        verdict["detail"] = {"watch_gaps": gaps}
    return {"probe": probe, "family": "phase_after_deletion", "server_version": version, "verdicts": [verdict]}


GAP = ["watch expired (410 Gone)"]
CLAIM = "always.sigterm-ignored.phases"


def test_undecided_cells_are_counted_apart_from_failed_ones_and_the_worst_verdict_shows() -> None:
    undecided = build_matrix([_record("a", ["Running"], GAP, "undecided")])
    assert undecided.counts() == {"pass": 0, "not observable": 0, "undecided": 1, "fail": 0}
    assert undecided.summary() == "1 claims × 1 versions: 0 pass, 0 not observable, 1 undecided, 0 fail"
    assert (undecided.overview()["failed"], undecided.overview()["undecided"]) == (0, 1)
    markdown = render_markdown(undecided)
    assert undecided.summary() in markdown and "| ❔ Running 📄 |" in markdown  # the matrix cell, not observed live
    assert "0 recorded values disagree with the expectation; 1 undecided" in markdown
    assert "❌" not in markdown.split("Legend:")[0] and "❌ Running" not in markdown
    html = render_html(undecided)
    assert undecided.summary() in html and "0 recorded values disagree with the expectation; 1 undecided" in html
    ((_, _, classes, text),) = matrix_cells(html)
    assert "undecided" in classes and "derived" in classes and text == "Running"  # origin unknown: not live
    assert '<span class="t">? Running</span>' in html and 'class="v live undecided"' not in html
    assert 'class="val failed"' not in html
    # Two probes check the claim on one version: a failure outranks an undecided, whatever the order.
    for records in (
        [_record("a", ["Running"], GAP, "undecided"), _record("b", ["Running", "Succeeded"], None, "fail")],
        [_record("b", ["Running", "Succeeded"], None, "fail"), _record("a", ["Running"], GAP, "undecided")],
    ):
        matrix = build_matrix(records)
        cell = matrix.cells[(CLAIM, "v1.27.3")]
        assert (cell.status, cell.observed, cell.changed) == ("fail", ["Running", "Succeeded"], False)
        assert matrix.counts() == {"pass": 0, "not observable": 0, "undecided": 0, "fail": 1}  # the claim's cell
        # In the matrix each probe keeps its own row, and its own verdict.
        rows = {row.probe: matrix.cell(row, "v1.27.3") for row in matrix.rows}
        assert {probe: c.status for probe, c in rows.items() if c} == {"a": "undecided", "b": "fail"}
        assert (matrix.overview()["failed"], matrix.overview()["undecided"]) == (1, 1)


def test_what_changed_keeps_undecided_apart_from_disagreements() -> None:
    """A change whose recorded end is undecided is said to be undecided, never to disagree; a failed one is."""
    fixed = _record(PHASES, ["Running", "Failed"], None, "pass", "v1.28.0")
    undecided = build_matrix([_record(PHASES, ["Running"], GAP, "undecided"), fixed])
    ((a, b, (change,)),) = undecided.changes()
    assert (a, b, change.claim) == ("v1.27.3", "v1.28.0", CLAIM)
    assert (change.undecided, change.disagrees, change.agrees) == (True, False, False)
    markdown = render_markdown(undecided)
    assert "**❔ 1 undecided**" in markdown and "disagree**" not in markdown
    html = render_html(undecided)
    assert "? 1 undecided" in html and "✗ 1 disagree" not in html

    failed = build_matrix([_record(PHASES, ["Running", "Succeeded"], None, "fail"), fixed])
    ((_, _, (change,)),) = failed.changes()
    assert (change.undecided, change.disagrees, change.agrees) == (False, True, False)
    assert "**❌ 1 disagrees**" in render_markdown(failed)
    assert "✗ 1 disagrees" in render_html(failed)


def test_a_one_of_expectation_shows_its_outcomes_and_a_value_counts_as_the_outcome_it_matches() -> None:
    racy = Expectation(
        "<1.22.12", one_of=(Expectation("", value=[True]), Expectation("", value=[False])), sources=("s",), note="n"
    )
    fixed = Expectation(">=1.22.12", value=[True], sources=("s",))
    assert expected_text(racy) == "true or false"
    assert expected_text({"one_of": [{"value": None, "between": [-1, 3]}, {"value": [False]}]}) == "-1 to 3 or false"
    assert expected_value(racy) == {"one of": [[True], [False]]}
    assert side_text(Side("v1.21.14", [False], "live", "pass", racy)) == "false (in true or false)"
    # observed [True] before and after the fix: the same behaviour; [False] before it: a change
    assert _behaviour(Side("v1.21.14", [True], "live", "pass", racy)) == _behaviour(
        Side("v1.22.17", [True], "live", "pass", fixed)
    )
    assert _behaviour(Side("v1.21.14", [False], "live", "pass", racy)) != _behaviour(
        Side("v1.22.17", [True], "live", "pass", fixed)
    )
    assert _behaviour(Side("v1.21.14", expected_value(racy), "expected", None, racy)) != _behaviour(
        Side("v1.22.17", [True], "expected", None, fixed)
    )


# ------------------------------------------------------------------------------------------ what changed, in values


def test_what_changed_shows_each_claims_values_before_and_after_and_keeps_race_flips_apart(
    replayed_matrix: Matrix, replayed_html: str
) -> None:
    changes = {(a, b): found for a, b, found in replayed_matrix.changes()}
    # 1.25.12 → 1.25.16: the exit-status-kept claims are one of true / false on both and flip: race flips only
    flips = changes[("v1.25.12", "v1.25.16")]
    assert flips and all(f.claim.endswith("exit-status-kept") for f in flips)
    assert all(f.race_flip and not f.expected_changed for f in flips)
    row = re.search(r'<tr id="change-v1-25-12-v1-25-16" class="race-only">(.*?)</tr>', replayed_html, re.S)
    assert row is not None and "Only race flips, no change of behaviour" in row.group(1)
    assert '<ul class="deltas">' not in row.group(1)
    # the 1.27 boundary: the last live v1.26 phase beside the expected one of 1.27.0-rc.0, each said to be what it is
    boundary = next(pair for pair in changes if pair[1] == "v1.27.0-rc.0")
    phases = next(c for c in changes[boundary] if c.claim == "always.sigterm-ignored.phases")
    assert phases.bases == "live → expected" and not phases.race_flip
    row = re.search(rf'<tr id="change-{safe_name(boundary[0])}-v1-27-0-rc-0">(.*?)</tr>', replayed_html, re.S)
    assert row is not None
    assert (
        '>always.sigterm-ignored.phases</a>:\n<span class="v live" title="v1.26.15: observed live, pass">Running'
        '<sup>live ✓</sup></span> → <span class="v expected" title="v1.27.0-rc.0: expected, nothing recorded">'
        "Running, then Failed<sup>expected</sup></span>" in row.group(1)
    )
    assert "k/k#115331" in row.group(1)
    # the headline says what changed, not which scenarios: no scenario column any more
    assert "in the scenarios" not in replayed_html


def test_report_with_from_and_to_puts_what_changes_between_them_on_top(
    replayed_runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """make report's command, run in this process as `python -m harness report` runs it (the child process is
    test_a_report_goes_beside_the_records_it_reads_not_under_the_suites_runs's), where the suite is loaded already and
    what it works out once a process (templates, gate stretches, claims) is at hand."""
    argv = ["report", str(replayed_runs), "--out", str(tmp_path), "--from", "1.26", "--to", "1.27"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    html = (tmp_path / "report.html").read_text()
    top = html.index('<section id="upgrade">')
    assert top < html.index('<section id="changes">') < html.index('<section id="matrix-section">')
    section = html[top : html.index("</section>", top)]
    assert "What changes from 1.26 to 1.27: v1.26.15 → v1.27.16" in section
    assert (
        ">always.sigterm-ignored.phases</a>" in section and "from <b>1.27.0-rc.0</b>: Running, then Failed" in section
    )
    assert '<a href="#upgrade">1.26 → 1.27</a>' in html  # and the page's links lead to it first
    capsys.readouterr()
    assert cli.main(["report", str(replayed_runs), "--out", str(tmp_path / "x"), "--from", "1.26"]) == 2
    assert capsys.readouterr().err.startswith("error: bad input: no TO given")
    assert not (tmp_path / "x").exists()


def test_a_report_goes_beside_the_records_it_reads_not_under_the_suites_runs(
    replayed_runs: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    source = next(replayed_runs.rglob("probes/*.json"))
    (elsewhere / "run" / "probes").mkdir(parents=True)
    (elsewhere / "run" / "probes" / source.name).write_text(source.read_text())
    suite_runs = REPO / "runs"
    before = set(suite_runs.glob("report-*")) if suite_runs.exists() else set()
    done = subprocess.run(
        [sys.executable, "-m", "harness", "report", str(elsewhere)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    written = list(elsewhere.glob("report-*/report.html"))
    assert len(written) == 1 and str(written[0]) in done.stdout
    after = set(suite_runs.glob("report-*")) if suite_runs.exists() else set()
    assert after == before


def test_a_deleted_pods_exit_mark_sits_where_its_claim_measures_the_kill_and_the_axis_is_on_top_too(
    replayed_matrix: Matrix,
) -> None:
    """The SIGKILL mark is at finishedAt after the delete (server clock), the value killed-after-delete gives; the
    instant the API showed the exit (12.6 s later on v1.26.7, the latest among the shipped timelines) is a mark of
    its own."""
    checked = 0
    for probe, claim in (
        ("test_termination_order.py::test_prestop_within_the_grace_period", "prestop-in-time.killed-after-delete"),
        ("test_termination_order.py::test_prestop_overrunning_the_grace_period", "prestop-overrun.killed-after-delete"),
    ):
        row = next(r for r in replayed_matrix.rows if r.probe == probe and r.claim == claim)
        for label, entries in replayed_matrix.timelines[probe].items():
            cell = replayed_matrix.cell(row, label)
            if cell is None or not isinstance(cell.observed, float):
                continue
            marks, _ = timeline_marks.events(entries)
            (kill,) = [m.t for m in marks if m.label == "main exit 137 (SIGKILL)"]
            assert kill == pytest.approx(cell.observed, abs=0.01), (probe, label)
            checked += 1
    assert checked >= 30
    within = replayed_matrix.timelines["test_termination_order.py::test_prestop_within_the_grace_period"]
    seen_after_kill = {}
    for label, entries in within.items():
        at = {m.label: m.t for m in timeline_marks.events(entries)[0]}
        if "main exit seen" in at:
            seen_after_kill[label] = at["main exit seen"] - at["main exit 137 (SIGKILL)"]
    assert max(seen_after_kill.values()) > 10, seen_after_kill  # two marks, apart where the API was late
    svg = report.drawings(replayed_matrix)["test_termination_order.py::test_prestop_within_the_grace_period"]
    ticks = re.findall(r'<text x="([\d.]+)" y="([\d.]+)" text-anchor="middle" fill="#444">(-?[\d.]+)</text>', svg)
    rows_y = [float(y) for y in re.findall(r'<g class="row"[^>]*>\s*<text x="\d+" y="([\d.]+)"', svg)]
    above = {t for _, y, t in ticks if float(y) < min(rows_y)}
    below = {t for _, y, t in ticks if float(y) > max(rows_y)}
    assert above == below and "10" in above  # the same numbers on top as at the bottom


# ------------------------------------------------------------------------------------------ the matrix, as seen


def test_the_matrix_marks_a_change_of_behaviour_along_a_row_and_not_a_race_flip(replayed_html: str) -> None:
    cells = matrix_cells(replayed_html)
    columns = len(recorded_versions())
    row = [(v, c, text) for claim, v, c, text in cells if claim == "always.sigterm-ignored.phases"][:columns]
    moved = [v for v, c, _ in row if "moved" in c]
    assert moved == ["v1.27.0-rc.0"]  # the one change of this row: k/k#115331
    colour = {v: next(x for x in c if re.fullmatch(r"b\d", x)) for v, c, _ in row}
    assert colour["v1.26.15"] != colour["v1.27.0-rc.0"] == colour["v1.37.2"]
    race = [(v, c) for claim, v, c, _ in cells if claim == "exit-status-kept"][:columns]
    flips = dict(race)
    assert "race" in flips["v1.22.17"] and "race" in flips["v1.23.17"]  # seen true, then false: one behaviour
    assert "moved" not in flips["v1.23.17"] and "moved" in flips["v1.27.0-rc.0"]
    # a cell where the claim was not observable is no change either way
    exit_row = [(v, c) for claim, v, c, _ in cells if claim == "sigterm-ignored.exit"][:columns]
    assert "nobs" in dict(exit_row)["v1.26.6"] and not any("moved" in c for _, c in exit_row)


def test_the_report_stays_one_file_well_under_its_old_size(written_report: tuple[Matrix, Path]) -> None:
    """81 claims × 31 versions with 24 timelines were 4.4 MB before the matrix drew runs and the drawings shared a
    style; 2.73 MB after, 4.3 MB with 52 versions and 34 timelines (2.5 MB of drawings, 0.9 MB of data), 1.4 MB
    with the drawings and the data packed (gzip, base64) and unpacked in the browser; 2.0 MB with 68 versions."""
    page = written_report[1] / "report.html"
    assert page.stat().st_size <= 2_500_000  # every shipped recording, the timelines and the data packed
    assert "<link" not in page.read_text() and 'src="http' not in page.read_text()  # one file, nothing fetched


def test_at_1600_px_the_versions_fit_while_they_can_and_a_range_of_versions_narrows_the_columns(
    written_report: tuple[Matrix, Path], browsed_report: Callable[[], dict[str, Any]]
) -> None:
    """At 1600 px every recorded version fits while they can at the least column width (41 could); with more (44
    now) the page scrolls sideways, the claim column staying put (the 1400 px test), and a range fits again."""
    seen = browsed_report()["1600"]
    columns = len(seen["columnWidths"])
    assert columns == len(written_report[0].versions) == len(recorded_versions())
    least = report.COLUMN_PX["version"][0]
    assert seen["fitsBefore"] == (report.COLUMN_PX["claim"] + columns * least <= seen["innerWidth"] - 32)
    assert seen["fitsAfter"]  # the range chosen below fits whole
    assert seen["shownVersions"][0] == "v1.26.15" and seen["shownVersions"][-1] == "v1.28.0"
    assert seen["shownWidth"] > 60  # fewer columns, wider
    # the row's runs are found again in the range: a value where a run starts, the change marked at 1.27.0-rc.0
    assert seen["phasesShown"][0] == [False, "Running"]
    changed = [i for i, (moved, _) in enumerate(seen["phasesShown"]) if moved]
    assert [seen["shownVersions"][i] for i in changed] == ["v1.27.0-rc.0"]
    assert seen["phasesShown"][changed[0]][1] == "Running → Failed"
    assert all(text == "" for moved, text in seen["phasesShown"][1:] if not moved and text != "Running → Failed")


def test_what_changed_is_one_reading_in_report_md_report_html_and_make_upgrade(
    replayed_matrix: Matrix, replayed_html: str, replayed_markdown: str
) -> None:
    """Every consecutive pair of the shipped recordings' versions: report.md and report.html count what changes in
    the same words as make upgrade between those two releases, and list the same claims as changes of behaviour."""
    from harness.reports import upgrade_compare, upgrade_ends

    markdown = replayed_markdown  # the module's rendering of the same matrix: rendered once
    observed = replayed_matrix.observations
    assert observed is not None
    pairs = [(a, b, found) for a, b, found in replayed_matrix.changes()]
    assert len(pairs) == len(replayed_matrix.versions) - 1 > 40
    for a, b, found in pairs:
        # the page's claims: a family with no recording yet has no row in it, make upgrade answers for it too
        before, after = (
            upgrade_ends.resolve(upgrade_ends.read_end(a, "FROM"), "FROM"),
            upgrade_ends.resolve(upgrade_ends.read_end(b, "TO"), "TO"),
        )
        terminal = upgrade_compare.compare(before, after, observed, only=replayed_matrix.claims)
        counts = terminal.counts()
        assert replayed_matrix.pair(a, b).counts() == counts, (a, b)
        if not found:
            assert not terminal.changed and not terminal.disagreeing, (a, b)
            continue
        row = re.search(
            rf'<tr id="change-{safe_name(a, 100)}-{safe_name(b, 100)}"[^>]*>(.*?)</tr>', replayed_html, re.S
        )
        assert row is not None, (a, b)
        assert f'<span class="basis counts">{counts}' in row.group(1), (a, b)
        assert f"| {a} → {b} | {counts}" in markdown, (a, b)
        listed = set(re.findall(r'<li[^>]*><a class="cid" href="#claim-[^"]*"[^>]*>([^<]+)</a>', row.group(1)))
        expected = {c.claim.id for c in [*terminal.changed, *terminal.raced, *terminal.disagreeing]}
        assert listed <= expected, (a, b, listed - expected)
        assert {c.claim.id for c in terminal.changed} <= listed, (a, b)
        section = markdown.split(f"#### {a} → {b}\n", 1)[1].split("\n####", 1)[0]
        assert {c.claim.id for c in terminal.changed} <= set(re.findall(r"`([^`]+)`", section)), (a, b)


def _matrix_of_one_release_on_three_runtimes(base: Path) -> None:
    """A make matrix's folder as run_matrix_command leaves it: v1.27.16 on its pinned image, on the Debian image and
    on containerd v2.3.4, each entry its folder with one run, and matrix.json naming each entry's runtime."""
    from harness.axis.matrix import VersionResult

    seen = {"": ["Running", "Failed"], "debian": ["Running"], "kind=v0.25.0,containerd=v2.3.4": ["Running", "Failed"]}
    results = []
    for number, (runtime, observed) in enumerate(seen.items()):
        folder = base / ("1.27.16" + (f"-{safe_name(runtime)}" if runtime else ""))
        run_id = f"20261207-01000{number}-abcd"
        (folder / run_id / "probes").mkdir(parents=True)
        (folder / run_id / "run.json").write_text(json.dumps({"run_id": run_id}))
        record = {**_record("p", observed, None, "pass", "v1.27.16"), "provenance": {"run_id": run_id}}
        (folder / run_id / "probes" / "p.json").write_text(json.dumps(record))
        results.append(VersionResult("1.27.16", "passed", 0, str(folder), 1.0, release="1.27.16", runtime=runtime))
    versions = [dataclasses.asdict(result) for result in results]
    (base / "matrix.json").write_text(json.dumps({"cluster": "kind", "versions": versions}))


def test_a_matrix_of_one_release_on_several_runtimes_gives_each_entry_its_column(tmp_path: Path) -> None:
    """make matrix VERSIONS="1.27.16 1.27.16:debian 1.27.16:containerd=2.3.4": its report (make report on the
    matrix's folder) heads a column by release and runtime for each entry, each with what its own run observed,
    where all three runs answered v1.27.16 (before, one column showed the worst of the three)."""
    from harness.doors import cli

    base = tmp_path / "matrix-20261207-010000-abcd"
    _matrix_of_one_release_on_three_runtimes(base)
    assert cli.main(["report", str(base), "--out", str(tmp_path / "report")]) == 0
    html = (tmp_path / "report" / "report.html").read_text()
    columns = ["v1.27.16", "v1.27.16:debian", "v1.27.16:kind=v0.25.0,containerd=v2.3.4"]
    cells = {version: text for _, version, _, text in matrix_cells(html)}
    assert list(cells) == columns
    assert cells == dict(zip(columns, ["Running → Failed", "Running", "Running → Failed"], strict=True))
    # the Debian entry's Running alone disagrees, in its own column
    assert [version for _, version, classes, _ in matrix_cells(html) if "fail" in classes] == ["v1.27.16:debian"]
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "| claim | v1.27.16 | v1.27.16:debian | v1.27.16:kind=v0.25.0,containerd=v2.3.4 |" in markdown
    # the same runs read without their matrix record are runs of one release: one column, as make atlas shows them
    runs = sorted(base.glob("*/*/probes/p.json"))
    assert build_matrix(load_records(runs)).versions == ["v1.27.16"]
