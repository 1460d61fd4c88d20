"""make radar: the newest served pre-release found, the first that builds probed, each claim compared.

Stood in: the Go module proxy (a `go` on PATH that answers `go list -m`, tests/fake_tools.py), the build and the
probe runs (functions). Real: the proxy queries and their reading, the choice of release, the comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.axis import radar
from harness.axis.releases import published_releases
from harness.base.errors import NotRunnable
from harness.base.versions import Release
from harness.clusters.kind import axis as kind_axis
from harness.clusters.local import clusters as local_clusters
from harness.core.expectations import Claim, Expectation
from harness.doors.commands import radar as radar_command
from harness.gobuild import go as go_command
from harness.gobuild import kubernetes as kube_build
from harness.gobuild import modules as go_modules
from tests import fake_tools
from tests.pytest_here import harness_here

REPO = Path(__file__).resolve().parent.parent


def verdict(claim: str, status: str, observed: Any, version: str) -> dict[str, Any]:
    return {"claim": claim, "status": status, "observed": observed, "server_version": version}


def probe_record(version: str, verdicts: list[dict[str, Any]], cluster: str = "local") -> dict[str, Any]:
    return {
        "probe": "test_m.py::test_x",
        "family": "fam",
        "server_version": version,
        "transport": "replay",
        "recording_origin": {"kind": "live", "cluster": cluster, "file": "f.json"},
        "verdicts": verdicts,
    }


CLAIMS = {
    "same-range": Claim("same-range", "c", "o", "d", (Expectation(">=1.29", value="a", sources=("k/k#111111",)),)),
    "new-range": Claim(
        "new-range",
        "c",
        "o",
        "d",
        (
            Expectation("<1.38.0-alpha.0", value="a", sources=("k/k#111111",)),
            Expectation(">=1.38.0-alpha.0", value="b", sources=("k/k#222222 (CHANGELOG-1.38)",)),
        ),
    ),
    "no-range": Claim("no-range", "c", "o", "d", (Expectation("<1.38.0", value="a", sources=("k/k#111111",)),)),
    "timing": Claim("timing", "c", "o", "d", (Expectation(">=1.19", between=(0, 5), sources=("s",)),)),
}


def test_the_pre_releases_asked_for_are_those_listed_and_the_catalogued_ones_of_three_minors_newest_first() -> None:
    listed = ["v1.36.1", "v1.37.2", "v1.37.0-rc.1", "v1.39.0-alpha.1"]
    release = radar.newest_release(listed)
    assert release is not None and release.text == "v1.37.2"
    asked = radar.pre_release_candidates(listed, release)
    catalogued = [r for r in published_releases() if r.startswith(("1.37.0-", "1.38.0-"))]
    assert asked[0] == "v1.39.0-alpha.1" and asked[-1] == "v1.37.0-alpha.0"  # what the proxy lists is asked too
    assert sorted(asked[1:]) == sorted(f"v{r}" for r in catalogued)
    assert "v1.37.0-rc.2" not in asked and "v1.38.0-beta.0" in asked  # rc.2 of 1.37 was never published
    assert radar.newest_release(["v1.38.0-alpha.0"]) is None


def test_a_pre_release_that_cannot_be_built_is_said_in_one_line_and_the_next_newest_is_tried() -> None:
    said: list[str] = []
    why = {"v1.38.0-alpha.0": "cannot be built here: the proxy serves k8s.io/cri-streaming at no version"}
    chosen, tried = radar.first_buildable(
        ["v1.38.0-alpha.0", "v1.37.0-rc.1", "v1.37.0-rc.0"], lambda v: why.get(v, ""), said.append, tries=3
    )
    assert chosen == "v1.37.0-rc.1"
    assert said == [
        "v1.38.0-alpha.0 cannot be built here: the proxy serves k8s.io/cri-streaming at no version; "
        "trying the next newest pre-release"
    ]
    assert [(t.version, bool(t.why_not)) for t in tried] == [("v1.38.0-alpha.0", True), ("v1.37.0-rc.1", False)]
    none, tried = radar.first_buildable(["v1", "v2", "v3"], lambda v: "cannot", said.append, tries=2)
    assert none is None and len(tried) == 2 and said[-1] == "v2 cannot"  # the last one tried: nothing after it


def test_each_differing_claim_says_the_range_and_prs_of_the_pre_release_or_no_expectation_yet() -> None:
    release, pre = "v1.37.2", "v1.38.0-alpha.1"
    baseline = [
        probe_record(
            release,
            [
                verdict("same-range", "pass", "a", release),
                verdict("new-range", "pass", "a", release),
                verdict("no-range", "pass", "a", release),
                verdict("timing", "pass", 1.5, release),
            ],
        )
    ]
    candidate = [
        probe_record(
            pre,
            [
                verdict("same-range", "fail", "b", pre),
                verdict("new-range", "pass", "b", pre),
                verdict("no-range", "pass", "b", pre),
                verdict("timing", "pass", 2.5, pre),  # a measurement: agrees while both verdicts pass
            ],
        )
    ]
    report = radar.compare_with_baseline(candidate, release, baseline, "replayed", pre, [], CLAIMS)
    by_claim = {f.claim: f for f in report.findings}
    assert set(by_claim) == {"same-range", "new-range", "no-range"} and report.compared == 4
    assert by_claim["new-range"].expectation == "expected 'b' (>=1.38.0-alpha.0)"
    assert by_claim["new-range"].prs == ["k/k#222222"] and not by_claim["new-range"].unexpected
    assert by_claim["same-range"].expectation == (
        "no expectation yet: one range (>=1.29) holds both v1.38.0-alpha.1 and v1.37.2"
    )
    assert by_claim["no-range"].expectation == "no expectation yet: no range holds v1.38.0-alpha.1"
    assert report.exit_code == 1
    lines = report.render().splitlines()
    assert lines[0] == (
        "v1.38.0-alpha.1 beside v1.37.2 (replayed): 4 claims observed by both, 3 differ, 2 not in the expectations "
        "yet or not passed"
    )
    assert (
        '  new-range (test_m.py::test_x): pass "a" -> pass "b"; expected \'b\' (>=1.38.0-alpha.0) [k/k#222222]' in lines
    )
    only_known = {"new-range": CLAIMS["new-range"]}
    unknown = radar.compare_with_baseline(candidate, release, baseline, "r", pre, [], only_known)
    assert {f.claim: f.expectation for f in unknown.findings}["no-range"] == (
        "no expectation yet: no claim of that id in the expectations"
    )


def test_the_baseline_is_the_newest_release_of_the_same_cluster_kind_when_there_is_one() -> None:
    records = [
        probe_record("v1.37.2", [], cluster="local"),
        probe_record("v1.38.0-alpha.0", [], cluster="local"),
        probe_record("v1.28.5", [], cluster="kind"),
        probe_record("v1.37.0", [], cluster="local"),
    ]
    assert radar.baseline_records(records, "local") == ("v1.37.2", records[:1])
    assert radar.baseline_records(records, "kind") == ("v1.28.5", records[2:3])
    assert radar.baseline_records(records, "existing")[0] == "v1.37.2"  # none of its own: any cluster's
    assert radar.baseline_records([], "local") == ("", [])


def radar_args(tmp_path: Path, **overrides: Any) -> argparse.Namespace:
    values = {
        "cluster": "local",
        "source": "auto",
        "baseline": "",
        "fresh_baseline": False,
        "tries": 3,
        "probe": "",
        "run_dir": str(tmp_path / "runs"),
    }
    return argparse.Namespace(**{**values, **overrides})


GO_MOD = """module k8s.io/kubernetes

go 1.26.0

require (
\tk8s.io/api v0.0.0
\tk8s.io/cri-streaming v0.0.0
\tk8s.io/kube-proxy v0.0.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/cri-streaming => ./staging/src/k8s.io/cri-streaming
\tk8s.io/kube-proxy => ./staging/src/k8s.io/kube-proxy
\tk8s.io/sample-cli-plugin => ./staging/src/k8s.io/sample-cli-plugin
)
"""


@pytest.fixture
def proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Go module proxy as seen live: v1.38.0-alpha.0 served but not listed, its twins k8s.io/kube-proxy and the new
    k8s.io/cri-streaming served at no version; v1.38.0-alpha.1 served with every twin; v1.37.0-rc.1 (older than the
    newest release) served with every twin it requires."""
    go_mod = tmp_path / "kubernetes.mod"
    go_mod.write_text(GO_MOD)
    served = {
        "k8s.io/kubernetes@v1.38.0-alpha.1",
        "k8s.io/api@v0.38.0-alpha.1",
        "k8s.io/cri-streaming@v0.38.0-alpha.1",
        "k8s.io/kube-proxy@v0.38.0-alpha.1",
        "k8s.io/kubernetes@v1.38.0-alpha.0",
        "k8s.io/kubernetes@v1.37.0-rc.1",
        "k8s.io/api@v0.38.0-alpha.0",
        "k8s.io/api@v0.37.0-rc.1",
        "k8s.io/cri-streaming@v0.37.0",  # the pre-release's twin refused: the minor's first release is taken
        "k8s.io/kube-proxy@v0.37.0-rc.1",
    }
    log = tmp_path / "go.log"
    mods = {f"k8s.io/kubernetes@{v}": str(go_mod) for v in ("v1.38.0-alpha.1", "v1.38.0-alpha.0", "v1.37.0-rc.1")}
    fake_tools.install_go(tmp_path / "bin", log, served, ["v1.36.1", "v1.37.2"], mods)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GOPROXY", "https://proxy.example")  # the builds' Go environment takes the host's
    return log


def test_the_path_up_to_the_build_asks_the_proxy_and_builds_only_pre_releases_newer_than_the_newest_release(
    proxy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seen live: with v1.38.0-alpha.0 unbuildable the radar built v1.37.0-rc.1, older than v1.37.2, and would have
    compared the two. Now no pre-release older than the newest release is tried: one line says so, exit 6."""
    tools = tmp_path / "tools"
    assert go_modules.listed_kubernetes_versions(tools) == ["v1.36.1", "v1.37.2"]
    assert kube_build.twins_served_nowhere(Release.parse("1.38.0-alpha.0"), tools) == [
        "k8s.io/cri-streaming",
        "k8s.io/kube-proxy",
    ]
    assert kube_build.twins_served_nowhere(Release.parse("1.38.0-alpha.1"), tools) == []
    built: list[str] = []

    def stand_in_build(release: Release, tools_dir: Path, *args: Any, **kwargs: Any) -> None:
        built.append(release.tag)
        assert tools_dir == tools
        raise go_command.BuildError("stand-in: nothing is built in the tests\nlast line of the build log")

    monkeypatch.setattr(local_clusters, "build_kubernetes", stand_in_build)
    steps = radar_command.release_steps(radar_args(tmp_path), tools)
    assert radar_command.run_radar(radar_args(tmp_path), steps) == radar.NO_NEWER_PRE_RELEASE == 6
    assert built == ["v1.38.0-alpha.1"]  # alpha.0: a twin it requires is served nowhere; rc.1: older than v1.37.2
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0] == (
        "newest release v1.37.2; newest pre-release served: v1.38.0-alpha.1 (3 served, 2 newer than v1.37.2)"
    )
    failed = "could not be built: stand-in: nothing is built in the tests ... last line of the build log"
    assert lines[1] == f"v1.38.0-alpha.1 {failed}; trying the next newest pre-release"
    assert lines[2] == (
        "v1.38.0-alpha.0 cannot be built here: the Go module proxy serves k8s.io/cri-streaming, k8s.io/kube-proxy at "
        "no version the build could take (neither the tag's twin nor a release of its minor)"
    )
    assert lines[3:] == [
        f"no newer pre-release builds here: v1.38.0-alpha.1 {failed} (and 1 older one tried); "
        "no pre-release older than v1.37.2 is probed instead"
    ]
    assert err == "" and not (tmp_path / "runs").exists()  # nothing probed
    asked = [json.loads(line) for line in proxy.read_text().splitlines()]
    assert not any(call[1:3] == ["mod", "download"] for call in asked)  # the proxy was asked, nothing downloaded


def test_with_no_pre_release_newer_than_the_newest_release_served_the_radar_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    built: list[str] = []

    def build(version: str) -> str:
        built.append(version)
        return ""

    steps = radar_command.Steps(
        listed=lambda: ["v1.37.2"],
        served=lambda asked: {"v1.37.0-rc.1"} & set(asked),
        build=build,
        probe=lambda v, d: pytest.fail("nothing to probe"),
        shipped=lambda: [],
    )
    assert radar_command.run_radar(radar_args(tmp_path), steps) == 6
    assert built == []
    assert capsys.readouterr().out.splitlines() == [
        "newest release v1.37.2; newest pre-release served: v1.37.0-rc.1 (1 served, 0 newer than v1.37.2)",
        "no newer pre-release builds here: the Go module proxy serves none newer than v1.37.2",
    ]


def test_a_radar_run_compares_the_pre_release_it_probed_with_the_shipped_recordings_of_the_newest_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    probed: list[str] = []

    def probe(version: str, run_dir: Path) -> int:
        probed.append(version)
        records = run_dir / "20260101-000000-abcd" / "probes"
        records.mkdir(parents=True)
        record = probe_record(version, [verdict("pod-deadline.status", "pass", "Failed", version)])
        record["family"], record["probe"] = "active_deadline", "test_active_deadline.py::test_pod_deadline"
        (records / "test-pod-deadline.json").write_text(json.dumps(record))
        return 0

    shipped = probe_record("v1.37.2", [verdict("pod-deadline.status", "pass", "DeadlineExceeded", "v1.37.2")])
    shipped["probe"] = "test_active_deadline.py::test_pod_deadline"
    steps = radar_command.Steps(
        listed=lambda: ["v1.37.2"],
        served=lambda asked: {"v1.38.0-beta.0", "v1.38.0-alpha.0", "v1.37.0-rc.1"} & set(asked),
        build=lambda v: "cannot be built here: stand-in" if v == "v1.38.0-beta.0" else "",
        probe=probe,
        shipped=lambda: [shipped],
    )
    code = radar_command.run_radar(radar_args(tmp_path), steps)
    out = capsys.readouterr().out
    assert probed == ["v1.38.0-alpha.0"]
    assert "v1.38.0-alpha.0 beside v1.37.2 (the shipped live recordings of v1.37.2, replayed: 1 probes)" in out
    assert '  pod-deadline.status (test_active_deadline.py::test_pod_deadline): pass "DeadlineExceeded" -> pass' in out
    (record,) = (tmp_path / "runs").glob("radar-*/radar.json")
    saved = json.loads(record.read_text())
    assert saved["pre_release"] == "v1.38.0-alpha.0" and saved["tried"][0]["version"] == "v1.38.0-beta.0"
    assert "no expectation yet: one range" in out  # the claim's expectations hold both versions in one range
    assert code == 1


@pytest.mark.parametrize(
    ("argv", "says", "in_a_child"),
    [
        (["--baseline", "no/such/run"], "BASELINE no/such/run: no such run directory", True),
        (["--baseline", "tests", "--fresh-baseline"], "not both", False),
        (["--tries", "0"], "TRIES must be a whole number of 1 or more", False),
        (["--cluster", "existing"], "invalid choice", False),
    ],
)
def test_bad_radar_input_is_refused_in_one_line_before_anything_starts(
    argv: list[str], says: str, in_a_child: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first row through the real entry point (`python -m harness` in a child), the others through the same CLI
    in this process: a child took 0.12-0.15 s of CPU to say one line."""
    if in_a_child:
        done = subprocess.run(
            [sys.executable, "-m", "harness", "radar", *argv], capture_output=True, text=True, cwd=REPO, timeout=600
        )
        code, stderr = done.returncode, done.stderr
    else:
        monkeypatch.chdir(REPO)  # BASELINE is a path, read from where the child ran
        done = harness_here("radar", *argv, capsys=capsys)
        code, stderr = done.returncode, done.stderr
    assert code == 2
    error = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and error[0].startswith("error: bad input: ") and says in error[0]
    assert "Traceback" not in stderr


def test_the_probe_runs_it_starts_name_the_release_as_make_probe_takes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    started: list[list[str]] = []
    node_images: list[tuple[str, str]] = []

    def run_through_interrupt(command: list[str], log: object) -> int:
        started.append(command)
        return 0

    def make_node_image(release: Release, source: str, say: object) -> str:
        node_images.append((release.tag, source))
        raise NotRunnable("kind build node-image failed (stand-in)")

    monkeypatch.setattr(radar_command, "run_through_interrupt", run_through_interrupt)
    monkeypatch.setattr(kind_axis, "make_node_image", make_node_image)
    local = radar_command.release_steps(radar_args(tmp_path, probe="deadline"), tmp_path / "tools")
    local.probe("v1.37.0-rc.1", tmp_path / "r" / "v1.37.0-rc.1")
    kind = radar_command.release_steps(radar_args(tmp_path, cluster="kind", source="release"), tmp_path / "tools")
    kind.probe("v1.37.0", tmp_path / "r" / "v1.37.0")  # a pinned image
    kind.probe("v1.38.0-alpha.0", tmp_path / "r" / "v1.38.0-alpha.0")
    tails = [command[3:] for command in started]
    probe = ["--probe", "deadline"]
    assert tails == [
        ["probe", "--version", "1.37.0-rc.1", "--cluster", "local", "--run-dir", f"{tmp_path}/r/v1.37.0-rc.1", *probe],
        ["probe", "--version", "1.37.0", "--run-dir", f"{tmp_path}/r/v1.37.0"],
        ["probe", "--image", "plp-node:v1.38.0-alpha.0", "--run-dir", f"{tmp_path}/r/v1.38.0-alpha.0"],
    ]
    assert f"(log: {tmp_path}/r/v1.37.0-rc.1.log)" in capsys.readouterr().out
    assert kind.build("v1.37.0") == "" and node_images == []  # kind runs a pinned image as it is
    assert kind.build("v1.38.0-alpha.0") == (
        "could not be built as a node image (SOURCE=release): kind build node-image failed (stand-in)"
    )
    assert node_images == [("v1.38.0-alpha.0", "release")]
