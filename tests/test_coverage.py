"""make coverage: which claim version ranges a live run is in, and the plan of builds for the rest.

The counting and the plan run on probe records written here (what a replay of live recordings writes); the
replay itself is run once on a folder without recordings (refused) and, for the figure the docs state, on
the shipped recordings, for the figure the docs state.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.base.versions import KubeVersion, Release, release_name
from harness.core.expectations import Claim, Expectation
from harness.reports import coverage, coverage_plan, coverage_releases, coverage_words

if TYPE_CHECKING:
    from tests.conftest import ShippedReplay

REPO = Path(__file__).resolve().parent.parent


def claim(claim_id: str, *ranges: str) -> Claim:
    return Claim(claim_id, "a claim", "an observable", "doc", tuple(Expectation(versions=r, value=1) for r in ranges))


def record(
    probe: str, version: str, verdicts: dict[str, str], cluster: str = "local", family: str = "fam"
) -> dict[str, Any]:
    """A probe record as a replay of a live recording writes it: claim -> verdict status."""
    return {
        "probe": probe,
        "family": family,
        "server_version": version,
        "transport": "replay",
        "recording_origin": {"kind": "live", "cluster": cluster, "file": f"probes/{family}/recordings/{probe}.json"},
        "verdicts": [{"claim": c, "status": s, "server_version": version} for c, s in verdicts.items()],
    }


CLAIMS = {
    "fam": {
        "a": claim("a", "<1.27", ">=1.27"),
        "b": claim("b", ">=1.21,<1.22.12 || >=1.23.0-alpha.0,<1.23.9", ">=1.22.12,<1.23.0-alpha.0 || >=1.23.9"),
        "c": claim("c", "<1.21", ">=1.21"),
        "unchecked": claim("unchecked", ">=1.19"),
    }
}


def ranges_by_label(found: coverage.Coverage) -> dict[str, coverage.ClaimRange]:
    return {r.label: r for r in found.ranges}


def test_a_recording_covers_only_the_claims_its_probe_observed_in_it() -> None:
    records = [
        record("test_m.py::test_x", "v1.26.6", {"a": "pass", "b": "not observable"}),
        record("test_m.py::test_y", "v1.27.3", {"b": "pass"}, cluster="kind"),
    ]
    found = coverage.claim_ranges(coverage.observed_in(records), CLAIMS)
    by = ranges_by_label(found)
    assert [run.version.text for run in by["fam a <1.27"].runs] == ["v1.26.6"]
    assert not by["fam a >=1.27"].covered  # test_y's 1.27.3 recording did not check claim a
    # "not observable" in test_x's recording: that recording does not hold claim b's range
    assert not by["fam b >=1.21,<1.22.12"].covered
    assert by["fam b >=1.22.12,<1.23.0-alpha.0"].covered is False
    assert [r.provider for r in by["fam b >=1.23.9"].runs] == ["kind"]
    assert by["fam b >=1.21,<1.22.12"].probes == ("test_m.py::test_x", "test_m.py::test_y")
    # each part of a "||" union is one range: 2 + 4 + 2 + 1
    assert len(found.ranges) == 9
    assert found.figure() == "2 of 9 claim version ranges hold a live run"


def test_a_record_of_a_derived_recording_or_without_a_version_covers_nothing() -> None:
    derived = record("test_m.py::test_x", "v1.26.6", {"a": "pass"})
    derived["recording_origin"]["kind"] = "derived"
    unversioned = record("test_m.py::test_x", "", {"a": "pass"})
    live_now = record("test_m.py::test_x", "v1.28.0", {"a": "fail"})
    live_now.update(recording_origin=None, transport="live", provenance={"kubernetes_build": {"version": "v1.28.0"}})
    found = coverage.claim_ranges(coverage.observed_in([derived, unversioned, live_now]), CLAIMS)
    by = ranges_by_label(found)
    assert not by["fam a <1.27"].covered
    assert [(r.provider, r.status) for r in by["fam a >=1.27"].runs] == [("local", "fail")]
    assert coverage_words.runs_text(by["fam a >=1.27"].runs) == "local 1.28.0 (fail)"


def test_many_versions_of_one_cluster_kind_are_counted_with_their_ends_in_the_terminal() -> None:
    runs = [coverage.LiveRun(KubeVersion.parse(f"v1.{m}.0"), "local", "p", "pass", "f") for m in range(21, 31)]
    runs.append(coverage.LiveRun(KubeVersion.parse("v1.27.3"), "kind", "p", "pass", "f"))
    assert coverage_words.runs_text(runs, most=8) == "local 10: 1.21.0 1.22.0 1.23.0 … 1.29.0 1.30.0; kind 1.27.3"
    assert coverage_words.runs_text(runs).startswith("local 1.21.0 1.22.0 1.23.0 1.24.0 1.25.0 1.26.0 1.27.0 1.28.0 ")


def test_ranges_wholly_before_1_21_are_older_than_what_builds_here() -> None:
    assert coverage.older_than_built_here("<1.21")
    assert coverage.older_than_built_here(">=1.19,<1.20.3")
    assert coverage.older_than_built_here("==1.20.15")
    assert not coverage.older_than_built_here("<1.21.0-alpha.1")
    assert not coverage.older_than_built_here(">=1.21,<1.22")
    assert not coverage.older_than_built_here("<1.25.12")
    assert not coverage.older_than_built_here("==1.23.0")
    assert not coverage.older_than_built_here(">=1.28.0-alpha.0,<1.28.0-alpha.4")


def test_known_releases_fill_the_numbering_gaps_of_patches_and_pre_releases() -> None:
    named = {KubeVersion.parse(v).version for v in ("1.22.3", "1.22.1", "1.28.0-alpha.2", "1.28.0-rc.0")}
    filled = sorted(release_name(v) for v in coverage_releases.with_gaps_filled(named))
    assert filled == [
        "1.22.0",
        "1.22.1",
        "1.22.2",
        "1.22.3",
        "1.28.0-alpha.0",
        "1.28.0-alpha.1",
        "1.28.0-alpha.2",
        "1.28.0-rc.0",
    ]
    # a range names the releases in it (>=, ==, <=), not the first one after it (<)
    assert coverage_releases.named_in_ranges([">=1.22.5,<1.23.0", "==1.24.0-alpha.1"]) == {
        KubeVersion.parse("1.22.5").version,
        KubeVersion.parse("1.24.0-alpha.1").version,
    }


def test_the_plan_takes_the_release_inside_the_most_uncovered_ranges_first() -> None:
    claims = {
        "fam": {
            "x": claim("x", ">=1.22.0,<1.22.5", ">=1.22.5"),
            "y": claim("y", ">=1.22.3,<1.23", ">=1.23"),
            "z": claim("z", ">=1.28.0-alpha.0,<1.28.0-alpha.2", ">=1.28.0-alpha.2"),
            "old": claim("old", "<1.21", ">=1.21"),
            "nowhere": claim("nowhere", ">=1.26.3,<1.26.4", ">=1.26.4"),
            "unchecked": claim("unchecked", ">=1.19"),
        },
        "shut": {"s": claim("s", ">=1.22.0,<1.22.5", ">=1.22.5")},
    }
    records = [
        record("test_m.py::test_x", "v1.30.0", {"x": "pass", "y": "pass", "z": "pass", "old": "pass"}),
        record("test_m.py::test_x", "v1.30.0", {"nowhere": "pass"}),
        record("test_s.py::test_s", "v1.30.0", {"s": "pass"}, cluster="kind", family="shut"),
    ]
    observed = coverage.observed_in(records, kind_only=["test_s.py::test_s"])
    found = coverage.claim_ranges(observed, claims)
    releases = [KubeVersion.parse(v) for v in ("1.21.14", "1.22.2", "1.22.4", "1.26.2", "1.28.0-alpha.1", "1.30.0")]
    plan = coverage_plan.plan_builds(found, releases)
    first = plan.builds[0]
    # 1.22.4 is inside x's, y's and s's first ranges; 1.22.2 only in x's and s's
    assert first.release.text == "1.22.4"
    assert sorted(r.label for r in first.covers) == [
        "fam x >=1.22.0,<1.22.5",
        "fam y >=1.22.3,<1.23",
        "shut s >=1.22.0,<1.22.5",
    ]
    assert first.commands() == [
        "make probe VERSION=1.22.4 CLUSTER=local",
        'make node-image VERSION=1.22.4 && make probe IMAGE=plp-node:v1.22.4-kind.v0.20.0 PROBE="shut"',
    ]
    planned = [b.release.text for b in plan.builds]
    assert planned == ["1.22.4", "1.28.0-alpha.1"]  # a pre-release range needs a pre-release build
    assert [r.label for r in plan.no_known_release] == ["fam nowhere >=1.26.3,<1.26.4"]
    assert [r.label for r in plan.older] == ["fam old <1.21"]
    assert [r.label for r in plan.unchecked] == ["fam unchecked >=1.19"]
    assert plan.planned + len(plan.no_known_release) + len(plan.older) + len(plan.unchecked) == len(found.uncovered())
    text = coverage_words.render_plan(plan, found)
    assert text.splitlines()[0].startswith("plan: 2 releases cover 4 of the 7 ranges no live run holds")
    assert "fam old <1.21 (pinned kind images: 1.19.16, 1.20.15)" in text


def test_a_pinned_release_goes_first_among_equals_and_kind_runs_it_without_a_build() -> None:
    claims = {"shut": {"s": claim("s", ">=1.21,<1.22", ">=1.22")}}
    records = [record("test_s.py::test_s", "v1.30.0", {"s": "pass"}, cluster="kind", family="shut")]
    found = coverage.claim_ranges(coverage.observed_in(records, kind_only=["test_s.py::test_s"]), claims)
    releases = [KubeVersion.parse(v) for v in ("1.21.13", "1.21.14", "1.21.15")]  # 1.21.14 is pinned
    (build,) = coverage_plan.plan_builds(found, releases).builds
    assert build.pinned and build.release.text == "1.21.14"
    assert build.commands() == ['make probe VERSION=1.21.14 PROBE="shut"']


def test_a_release_known_not_to_build_here_is_passed_over_for_the_next_best_and_said_so() -> None:
    claims = {"fam": {"z": claim("z", ">=1.28.0-alpha.0,<1.28.0-alpha.4", ">=1.28.0-alpha.4")}}
    records = [record("test_m.py::test_x", "v1.30.0", {"z": "pass"})]
    found = coverage.claim_ranges(coverage.observed_in(records), claims)
    releases = [KubeVersion.parse(f"1.28.0-alpha.{n}") for n in range(4)]
    assert [b.release.text for b in coverage_plan.plan_builds(found, releases).builds] == ["1.28.0-alpha.3"]
    refused = {KubeVersion.parse(v).version: f"2026-11-27: {v} refused" for v in ("1.28.0-alpha.2", "1.28.0-alpha.3")}
    plan = coverage_plan.plan_builds(found, releases, refused)
    assert [b.release.text for b in plan.builds] == ["1.28.0-alpha.1"]
    assert plan.passed_over == {v.text: refused[v.version] for v in releases[2:]}
    assert "1.28.0-alpha.3     2026-11-27: 1.28.0-alpha.3 refused" in coverage_words.render_plan(plan, found)
    every = {v.version: "refused" for v in releases}
    nothing = coverage_plan.plan_builds(found, releases, every)
    coverage_releases.mark_unbuildable(found, releases, every)
    (z,) = found.uncovered()
    assert coverage_words.why_not(z) == (
        " (none of the releases known in it builds here: 1.28.0-alpha.0, 1.28.0-alpha.1, 1.28.0-alpha.2, "
        "1.28.0-alpha.3; PLAN=1 says why)"
    )
    assert not nothing.builds
    assert [r.label for r in nothing.no_known_release] == ["fam z >=1.28.0-alpha.0,<1.28.0-alpha.4"]


def test_releases_not_built_here_come_from_bisection_skips_and_this_machines_failed_builds(tmp_path: Path) -> None:
    from harness.gobuild.not_built import not_built_here, remember_not_built

    bisections = tmp_path / "bisections"
    bisections.mkdir()
    tried = [
        {"version": "1.31.0-alpha.1", "outcome": "skip", "why": "could not be built: the proxy refused it\nmore"},
        {"version": "1.31.0-alpha.2", "outcome": "skip", "why": "did not start: apiserver"},
        {"version": "1.31.0", "outcome": "bad"},
    ]
    (bisections / "b.json").write_text(json.dumps({"tried": tried, "ran": {"finished": "2026-11-26T10:00:00+00:00"}}))
    tools = tmp_path / "tools"
    failed = "building Kubernetes v1.28.0-alpha.3 failed (go build); last lines of build.log:\ngo: x\nno package y\n"
    remember_not_built(Release.parse("1.28.0-alpha.3"), failed, tools)
    remember_not_built(Release.parse("1.28.0-alpha.2"), "refused", tools)
    remember_not_built(Release.parse("1.28.0-alpha.2"), None, tools)  # built since
    assert list(not_built_here(tools)) == ["1.28.0-alpha.3"]
    found = {str(v): why for v, why in coverage_releases.not_buildable(bisections, tools, committed={}).items()}
    assert found["1.31.0a1"] == "2026-11-26: the proxy refused it"
    assert found["1.28.0a3"].endswith(": building Kubernetes v1.28.0-alpha.3 failed (go build): no package y")
    assert sorted(found) == ["1.28.0a3", "1.31.0a1"]
    (tools / "kubernetes" / "v1.31.0-alpha.1").mkdir(parents=True)
    (tools / "kubernetes" / "v1.31.0-alpha.1" / "build.json").write_text("{}")  # served and built since
    assert sorted(str(v) for v in coverage_releases.not_buildable(bisections, tools, committed={})) == ["1.28.0a3"]


def test_a_fresh_clone_knows_what_does_not_build_here_from_committed_files(tmp_path: Path) -> None:
    """Nothing in .tools/: the releases tried here that did not build (harness/known_not_built.json) and the proxy's
    refusals the gate ledger met are still known, and an old record's skip of a release that was never published
    (1.31.0-alpha.4) is not."""
    bisections = tmp_path / "bisections"
    bisections.mkdir()
    tried = [
        {"version": v, "outcome": "skip", "why": "could not be built: 403"}
        for v in ("1.31.0-alpha.4", "1.31.0-alpha.2")
    ]
    (bisections / "b.json").write_text(json.dumps({"tried": tried, "ran": {"finished": "2026-11-26T10:00:00+00:00"}}))
    found = {release_name(v): why for v, why in coverage_releases.not_buildable(bisections, tmp_path / "tools").items()}
    assert "1.31.0-alpha.4" not in found and found["1.31.0-alpha.2"] == "2026-11-26: 403"
    assert found["1.27.0-alpha.3"].startswith("2026-11-27: ") and "v1alpha2" in found["1.27.0-alpha.3"]
    assert "the Go module proxy refuses k8s.io/kubernetes@v1.21.0-alpha.1" in found["1.21.0-alpha.1"]


def test_a_probe_not_recorded_yet_is_taken_for_the_claims_no_recorded_probe_of_its_family_checks() -> None:
    """The replay skips a probe without recordings, so no record says what it checks: a claim of its family that no
    recorded probe observes is its own; the plan runs it, and the listing says it has no recording yet."""
    records = [record("test_m.py::test_x", "v1.26.6", {"a": "pass"})]
    collected = {"test_m.py::test_x": "fam", "test_m.py::test_new": "fam", "test_o.py::test_o": "other"}
    observed = coverage.observed_in(records, collected=collected)
    assert observed.unrecorded == {"fam": {"test_m.py::test_new"}, "other": {"test_o.py::test_o"}}
    by = ranges_by_label(coverage.claim_ranges(observed, CLAIMS))
    assert by["fam a >=1.27"].probes == ("test_m.py::test_x",) and not by["fam a >=1.27"].unrecorded
    new = by["fam unchecked >=1.19"]
    assert new.probes == ("test_m.py::test_new",) and new.unrecorded
    assert coverage_words.why_not(new) == " (no live recording yet of test_m.py::test_new)"
    plan = coverage_plan.plan_builds(coverage.Coverage([new]), [KubeVersion.parse("1.27.3")])
    assert [b.commands() for b in plan.builds] == [["make probe VERSION=1.27.3 CLUSTER=local"]]
    assert not plan.unchecked


def test_the_listing_names_each_range_once_with_its_runs_or_why_none() -> None:
    records = [
        record("test_m.py::test_x", "v1.26.6", {"a": "pass", "c": "pass"}),
        record("test_m.py::test_x", "v1.26.6", {"a": "pass"}, cluster="kind"),
        record("test_m.py::test_x", "v1.21.14", {"a": "pass"}),
    ]
    found = coverage.claim_ranges(coverage.observed_in(records), CLAIMS)
    lines = [" ".join(line.split()) for line in coverage_words.render(found).splitlines()]
    assert lines[:3] == ["fam", "a", "<1.27 local 1.21.14 1.26.6; kind 1.26.6"]
    assert "<1.21 not seen live (older than what builds here)" in lines
    assert ">=1.19 not seen live (no probe checks this claim)" in lines
    uncovered = coverage_words.render(found, uncovered_only=True).splitlines()
    assert not any("local" in line for line in uncovered)
    assert len(uncovered) == 1 + 4 + 7  # a family, 4 claims, 7 ranges
    assert coverage_words.summary(found).startswith("2 of 9 claim version ranges hold a live run (per claim:")
    section = coverage_words.section_data(found)
    assert section["covered"] == 2 and section["total"] == 9
    assert section["claims"][0]["ranges"][0] == {
        "versions": "<1.27",
        "covered": True,
        "runs": "local 1.21.14 1.26.6; kind 1.26.6",
        "why_not": "",
        "nothing_to_hold": False,
    }


def test_a_replay_that_cannot_run_is_an_error_saying_what_pytest_said(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(coverage.CoverageError, match="no recordings"):
        coverage.replay_recordings(tmp_path / "empty", timeout=600)


def test_the_report_has_a_section_of_the_ranges_its_records_saw_live() -> None:
    from harness.reports.report import render_html
    from harness.reports.report_reading import build_matrix

    probe = "test_active_deadline.py::test_job_deadline"
    seen = record(probe, "v1.27.3", {"job-deadline.failed": "pass"}, cluster="kind", family="active_deadline")
    seen["verdicts"][0]["observed"] = "DeadlineExceeded"
    matrix = build_matrix([seen])
    expected = coverage.claim_ranges(coverage.observed_in([seen]))
    assert matrix.live_coverage == coverage_words.section_data(expected)
    assert expected.covered >= 1  # the record's version is in one of the claim's ranges
    html = render_html(matrix, svgs={})
    assert f"<b>{expected.figure()}</b> in these records" in html
    assert '<td class="runs">kind 1.27.3</td>' in html
    assert html.count('<tr class="none">') == len(expected.uncovered())
    assert html.count('<tr class="nothing">') == len(expected.nothing_to_hold()) >= 18  # prestop_sleep, sidecars


STATED_FIGURE = re.compile(r"\b\d+ of \d+ claim version ranges hold a live run\b")


def documents_stating_the_figure() -> dict[Path, list[str]]:
    """Every figure 'N of M claim version ranges hold a live run' the README and docs/ state, by file."""
    texts = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    return {path: found for path in texts if path.is_file() and (found := STATED_FIGURE.findall(path.read_text()))}


def test_the_figure_the_docs_state_is_the_one_the_shipped_recordings_give(shipped_replay: ShippedReplay) -> None:
    """Recomputed from the shipped recordings (replayed as make coverage replays them) and the expectations: a stale
    figure fails here."""
    stated = documents_stating_the_figure()
    assert stated, "no document states 'N of M claim version ranges hold a live run' (make coverage says it)"
    figure = coverage.claim_ranges(shipped_replay.observed()).figure()
    for path, figures in stated.items():
        for found in figures:
            assert found == figure, f"{path.relative_to(REPO)} says '{found}'; make coverage now says '{figure}'"


def test_the_figure_check_sees_a_stale_figure() -> None:
    assert STATED_FIGURE.findall("so 166 of 221 claim version ranges hold a live run.") == [
        "166 of 221 claim version ranges hold a live run"
    ]
    assert not STATED_FIGURE.findall("claim version ranges")


def test_the_known_releases_are_the_catalogued_ones_and_never_an_unpublished_name(tmp_path: Path) -> None:
    """From 1.21 on the known releases are the release catalog's: 1.27.0-beta.0, named by no range, recording or
    bisection, is one; 1.31.0-alpha.4, which a build or an old record may name, was never published."""
    from packaging.version import Version

    empty = coverage.observed_in([])
    known = [
        v.text
        for v in coverage_releases.known_releases(coverage.Coverage([]), empty, tmp_path, also=[Version("1.31.0a4")])
    ]
    assert "1.27.0-beta.0" in known and "1.31.0-alpha.3" in known and "1.31.0-alpha.4" not in known
    assert next(k for k in known if k.startswith("1.21.0-")) == "1.21.0-alpha.0"
    assert "1.19.16" in known  # before the catalog: the pinned images, with the numbering's gaps filled


def test_a_range_whose_live_runs_found_the_claim_not_observable_says_so_and_is_not_planned_there() -> None:
    """Seen: job-retry.containers-left-on-node on 1.24.0-alpha.2, not observable in 4 of 4 runs (the retry ends
    before the Job's deadline); another release inside would still be planned, that one not again."""
    claims = {"fam": {"r": claim("r", ">=1.24.0-alpha.0,<1.24.0-beta.0", ">=1.24.0-beta.0")}}
    records = [
        record("test_m.py::test_r", "v1.24.0-alpha.2", {"r": "not observable"}),
        record("test_m.py::test_r", "v1.24.0-alpha.2", {"r": "not observable"}),
        record("test_m.py::test_r", "v1.24.2", {"r": "pass"}),
    ]
    found = coverage.claim_ranges(coverage.observed_in(records), claims)
    pre = ranges_by_label(found)["fam r >=1.24.0-alpha.0,<1.24.0-beta.0"]
    assert not pre.covered and [run.version.text for run in pre.unobservable] == ["v1.24.0-alpha.2"] * 2
    assert coverage_words.why_not(pre) == " (not observable in the 2 live runs inside it: local 1.24.0-alpha.2)"
    tried_only = coverage_plan.plan_builds(found, [KubeVersion.parse("1.24.0-alpha.2"), KubeVersion.parse("1.24.2")])
    assert tried_only.builds == [] and [r.label for r in tried_only.unobservable] == [pre.label]
    assert "not observable on the releases inside that build here" in coverage_words.render_plan(tried_only, found)
    another = coverage_plan.plan_builds(
        found, [KubeVersion.parse("1.24.0-alpha.2"), KubeVersion.parse("1.24.0-alpha.4")]
    )
    assert [b.release.text for b in another.builds] == ["1.24.0-alpha.4"] and another.unobservable == []


def test_a_gated_range_holds_a_live_run_only_when_each_gate_stretch_holds_one() -> None:
    """JobPodFailurePolicy is on by default from 1.26 (beta) and GA and locked from 1.31 (pkg/features at the tags):
    a row over >=1.26.0-beta.0 naming it is two stretches; a run on 1.27.3 alone leaves the locked one without a run,
    and the plan takes a release inside it."""
    gated = Claim(
        "g",
        "a claim",
        "an observable",
        "doc",
        (Expectation(versions=">=1.26.0-beta.0", value=1, gates=("JobPodFailurePolicy",)),),
    )
    observed = coverage.observed_in([record("p", "v1.27.3", {"g": "pass"})])
    (only,) = coverage.claim_ranges(observed, {"fam": {"g": gated}}).ranges
    assert len(only.stretches) >= 2 and not only.covered
    assert [s.states for s in only.lacking] == [("on, locked",)]
    assert "no live run in 1.31." in only.label and "JobPodFailurePolicy on, locked" in only.label
    assert only.contains(KubeVersion.parse("1.33.0")) and not only.contains(KubeVersion.parse("1.27.4"))
    both = coverage.observed_in([record("p", "v1.27.3", {"g": "pass"}), record("p", "v1.37.2", {"g": "pass"})])
    (covered,) = coverage.claim_ranges(both, {"fam": {"g": gated}}).ranges
    assert covered.covered and not covered.lacking


def test_a_range_valued_not_observable_is_counted_apart_and_never_planned() -> None:
    """prestop_sleep's sleep.sigterm-delay before 1.30.0-alpha.3: the pod is refused, so the row says the claim
    cannot be observed there and every run inside finds it so. No run can hold that range: it is neither among the
    ranges that hold one nor among those a run could hold, the plan takes no release for it (it once planned
    1.24.0-alpha.2 for 15 such ranges), and the listing, the summary and the plan say so."""
    claims = {
        "fam": {
            "d": Claim(
                "d",
                "a claim",
                "an observable",
                "doc",
                (
                    Expectation(versions="<1.30.0-alpha.3", value=None, not_observable=True),
                    Expectation(versions=">=1.30.0-alpha.3", between=(2.8, 3.6)),
                ),
            ),
            "a": claim("a", "<1.24.0-rc.0", ">=1.24.0-rc.0"),
        }
    }
    records = [
        record("test_m.py::test_d", "v1.23.6", {"d": "not observable", "a": "pass"}),
        record("test_m.py::test_d", "v1.21.14", {"d": "not observable"}, cluster="kind"),
        record("test_m.py::test_d", "v1.31.0", {"d": "pass", "a": "pass"}),
    ]
    found = coverage.claim_ranges(coverage.observed_in(records), claims)
    before = ranges_by_label(found)["fam d <1.30.0-alpha.3"]
    assert before.valued_not_observable and not before.covered
    assert found.nothing_to_hold() == [before] and before not in found.uncovered()
    assert found.figure() == "3 of 3 claim version ranges hold a live run"  # 4 ranges, one with nothing to hold
    releases = [KubeVersion.parse(v) for v in ("1.23.6", "1.24.0-alpha.2", "1.29.14", "1.31.0")]
    plan = coverage_plan.plan_builds(found, releases)
    assert plan.builds == [] and plan.planned == 0 and plan.nothing_to_hold == [before]
    text = coverage_words.render_plan(plan, found)
    assert text.splitlines()[0].startswith("plan: 0 releases cover 0 of the 0 ranges no live run holds")
    assert "valued not observable: nothing for a live run to hold (not planned, not counted): 1" in text
    said = coverage_words.summary(found)
    assert said.endswith("; 1 more are valued not observable: nothing for a live run to hold, not counted")
    listed = [" ".join(line.split()) for line in coverage_words.render(found, uncovered_only=True).splitlines()]
    assert listed == [
        "fam",
        "d",
        "<1.30.0-alpha.3 valued not observable: nothing for a live run to hold; found so in the 2 live runs inside "
        "it: local 1.23.6; kind 1.21.14",
    ]
    section = coverage_words.section_data(found)
    assert (section["covered"], section["total"], section["nothing_to_hold"]) == (3, 3, 1)
    assert section["claims"][0]["ranges"][0]["nothing_to_hold"] is True
    # the same range with a plain value would be planned on a release inside it that no run tried yet
    valued = {"fam": {"d": claim("d", "<1.30.0-alpha.3", ">=1.30.0-alpha.3")}}
    plain = coverage.claim_ranges(coverage.observed_in(records), valued)
    assert [b.release.text for b in coverage_plan.plan_builds(plain, releases).builds] == ["1.29.14"]


def null_valued_and_unobservable_live(found: coverage.Coverage) -> list[coverage.ClaimRange]:
    """The ranges whose row's value is null and whose every live run inside found the claim not observable."""
    from harness.base.versions import range_parts
    from harness.core.expectations import load_claims

    def row(r: coverage.ClaimRange) -> Expectation:
        return next(e for e in load_claims(r.family)[r.claim].expectations if r.text in range_parts(e.versions))

    return [
        r
        for r in found.ranges
        if r.unobservable and not r.runs and row(r).value is None and row(r).between is None and not row(r).one_of
    ]


def test_the_plan_over_the_shipped_recordings_takes_no_range_valued_not_observable(
    shipped_replay: ShippedReplay, tmp_path: Path
) -> None:
    """A row valued null whose live runs all found the claim not observable says so (`not_observable: true`), so the
    plan promises only what a run can add; and no live run observed a claim where its row says it cannot be."""
    observed = shipped_replay.observed()
    found = coverage.claim_ranges(observed)
    unmarked = [r.label for r in null_valued_and_unobservable_live(found) if not r.valued_not_observable]
    assert not unmarked, f"rows valued null and found not observable live, not marked not_observable: {unmarked}"
    marked = found.nothing_to_hold()
    assert len(marked) >= 18  # prestop_sleep's 5, sidecar_termination's 13
    assert not [r.label for r in marked if r.runs], "a live run observed a claim whose row says it cannot be"
    not_built = coverage_releases.not_buildable(tools=tmp_path / "tools")
    plan = coverage_plan.plan_builds(found, coverage_releases.known_releases(found, observed), not_built)
    planned = [r for build in plan.builds for r in build.covers]
    assert not [r.label for r in planned if r.valued_not_observable or r in null_valued_and_unobservable_live(found)]
    assert plan.nothing_to_hold == marked and plan.planned + len(marked) <= len(found.ranges)
    # Where the planner has the most to plan, no live run at all, it still plans no marked range
    unrun = replace(observed, runs={}, unobservable={})
    unrun_found = coverage.claim_ranges(unrun)
    unrun_plan = coverage_plan.plan_builds(unrun_found, coverage_releases.known_releases(unrun_found, unrun), not_built)
    unrun_planned = [r for build in unrun_plan.builds for r in build.covers]
    assert len(unrun_planned) > 100, "too little planned: the check below would pass vacuously"
    assert not [r.label for r in unrun_planned if r.valued_not_observable]
    assert len(unrun_plan.nothing_to_hold) == len(marked)
