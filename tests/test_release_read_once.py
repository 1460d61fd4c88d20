"""VERSION is read once: make probe's front door parses it into a typed release (harness/base/versions.py `Release`)
and everything below takes that release as it is; no kind, build or node-image module reads the text again. So are
make matrix's VERSIONS, make bisect's GOOD and BAD and make upgrade's FROM and TO: the version axis (its plan, its
builds, its probe runs, the releases a bisection tries) and the upgrade answer take the releases their door read."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from harness.axis import matrix
from harness.base.process import Completed
from harness.base.versions import KubeVersion, Release
from harness.clusters.kind import axis as kind_axis
from harness.clusters.kind import clusters as kind_clusters
from harness.clusters.kind import node_images
from harness.clusters.local import clusters as local_clusters
from harness.doors import cli
from harness.doors.commands import version_axis
from harness.gobuild import kubernetes
from harness.gobuild.kubernetes import Build
from harness.nodeimage.kind_plan import Plan
from harness.reports import coverage, upgrade_atlas


def counted(monkeypatch: pytest.MonkeyPatch, reading: str) -> list[str]:
    """Every text KubeVersion's classmethod `reading` reads from now on ("requested": every reading of VERSION went
    through it; "parse": every reading of any version text)."""
    read: list[str] = []
    original = getattr(KubeVersion, reading).__func__

    def counting(cls: type[KubeVersion], text: str) -> KubeVersion:
        read.append(text)
        result: KubeVersion = original(cls, text)
        return result

    monkeypatch.setattr(KubeVersion, reading, classmethod(counting))
    return read


@pytest.fixture
def readings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text read as a requested version."""
    return counted(monkeypatch, "requested")


def started(monkeypatch: pytest.MonkeyPatch, argv: list[str], tmp_path: Path) -> list[str]:
    """make probe's pytest command line, once every check and the preparation ran (PARALLEL=1: it would exec)."""

    def execv(path: str, command: list[str]) -> None:
        raise SystemExit(command)

    monkeypatch.setattr(os, "execv", execv)
    with pytest.raises(SystemExit) as exited:
        cli.main([*argv, "--parallel", "1", "--run-dir", str(tmp_path / "runs")])
    command: list[str] = exited.value.code  # type: ignore[assignment]
    return command


def test_make_probe_on_kind_reads_version_once_through_resolving_and_building_the_pinned_images_equal(
    readings: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The pinned kindest/node cannot be pulled here (stand-in docker), so make probe plans, names and builds its equal
    with kind's components (the build itself stood in): the resolve, the plan, the tag, the build's estimate and
    the build all take the one release the door read."""
    failing = Completed(("docker",), 1, "", "Error response from daemon: dial tcp: no such host")
    monkeypatch.setattr(node_images, "run_command", lambda argv, timeout: failing)
    for check in ("check_docker", "check_engine"):
        monkeypatch.setattr(kind_clusters, check, lambda: None)
    monkeypatch.setattr(kind_clusters, "check_prerequisites", lambda kind_bin: "kind v0.25.0 go1.22 linux/amd64")
    monkeypatch.setattr(kind_clusters, "ensure_kind", lambda release: "kind")
    monkeypatch.setattr(kind_clusters, "engine_cgroup_version", lambda: 2)
    handed: list[Release] = []

    def plan_parts(release: Release, kind: str = "", containerd: str = "") -> Plan:  # asks the Go module proxy
        handed.append(release)
        return Plan(None, {}, "", "")  # type: ignore[arg-type]  # what it plans is not read here

    def make_node_image(release: Release, source: str, say: Any, parts: str = "kind", kind: str = "") -> str:
        handed.append(release)
        return node_images.modules_tag(release)  # the tag its build would have

    monkeypatch.setattr(node_images, "plan_parts", plan_parts)
    monkeypatch.setattr(node_images, "make_node_image", make_node_image)

    def equal_build_minutes(release: Release, plan: Plan) -> tuple[int, str]:
        handed.append(release)
        return 1, "a stand-in"

    monkeypatch.setattr(node_images, "equal_build_minutes", equal_build_minutes)
    command = started(monkeypatch, ["probe", "--version", "1.27"], tmp_path)
    assert readings == ["1.27"]  # the door's one reading; the pinned image named the patch, 1.27.16
    assert [str(r) for r in handed] == ["1.27.16"] * 3 and all(type(r) is Release for r in handed)
    assert any('"image":"plp-node:v1.27.16-kind.v0.25.0"' in word for word in command)


def test_make_probe_on_a_local_cluster_reads_version_once_through_resolving_checking_and_building(
    readings: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """CLUSTER=local on a release not built here: the resolve (a whole release, buildable here), the proxy's answer,
    the build's directory, its lookups and the build itself (its compiling stood in) take the one release; the
    manifests are checked for its schema without reading it again."""
    built: list[Release] = []
    monkeypatch.setattr(local_clusters, "check_host", lambda one_at_a_time: None)
    monkeypatch.setattr(local_clusters, "check_go", lambda: "go1.22")

    def resolve_module(release: Release) -> dict[str, Any]:
        built.append(release)  # the Go module proxy serves it
        return {}

    def compile_release(release: Release, tools: Path, *rest: Any) -> Build:
        built.append(release)
        return Build(release.tag, tmp_path / "build", {"duration_s": 1})

    monkeypatch.setattr(local_clusters, "resolve_module", resolve_module)
    monkeypatch.setattr(kubernetes, "_build", compile_release)
    command = started(monkeypatch, ["probe", "--version", "1.27.99", "--cluster", "local"], tmp_path)
    assert readings == ["1.27.99"]
    assert [str(r) for r in built] == ["1.27.99"] * 2
    assert '"version":"1.27.99"' in command[command.index("--cluster-spec") + 1]


def test_make_matrix_on_local_clusters_reads_versions_once_through_planning_building_and_probing(
    readings: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """make matrix CLUSTER=local VERSIONS="1.26 1.27.3": the duplicate check, the plan (the proxy's answer stood in),
    each build (stood in) and each version's probe run (its process stood in) take the releases the door read."""
    monkeypatch.setattr(local_clusters, "check_host", lambda one_at_a_time: None)
    monkeypatch.setattr(version_axis, "check_go", lambda: "go1.22")
    handed: list[Release] = []

    def resolve_module(release: Release, tools: Path) -> dict[str, Any]:
        handed.append(release)  # the Go module proxy serves it
        return {}

    def build_kubernetes(release: Release, tools: Path, **options: Any) -> Build:
        handed.append(release)
        return Build(release.tag, tmp_path / "build", {"duration_s": 1})

    monkeypatch.setattr(local_clusters, "existing_build", lambda release, tools: None)
    monkeypatch.setattr(local_clusters, "resolve_module", resolve_module)
    monkeypatch.setattr(local_clusters, "build_kubernetes", build_kubernetes)
    monkeypatch.setattr(matrix, "disk_gb", lambda path: 0.0)
    probed: list[list[str]] = []

    def run_through_interrupt(command: list[str], log: Any = None) -> int:
        probed.append(command)
        return 0

    monkeypatch.setattr(matrix, "run_through_interrupt", run_through_interrupt)
    code = cli.main(["matrix", "--cluster", "local", "--versions", "1.26 1.27.3", "--run-dir", str(tmp_path)])
    assert code == 0 and readings == ["1.26", "1.27.3"]
    assert sorted(str(r) for r in handed) == ["1.26.15"] * 2 + ["1.27.3"] * 2  # served, then built
    assert all(type(r) is Release for r in handed)
    assert sorted(command[command.index("--version") + 1] for command in probed) == ["1.26.15", "1.27.3"]


def test_make_bisect_on_kind_reads_good_and_bad_once_through_the_candidates_their_images_and_runs(
    readings: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """make bisect BUILD=1 GOOD=1.27.3 BAD=1.27.5: the candidates, the node image made ahead for each one without a
    pinned image (stood in) and each probe run (stood in: good on 1.27.3 alone) take the releases the door read."""
    monkeypatch.setattr(version_axis, "selection_problem", lambda probe, run_dir: None)
    made: list[Release] = []

    def make_node_image(release: Release, source: str, say: Any) -> str:
        made.append(release)
        return node_images.modules_tag(release)

    monkeypatch.setattr(kind_axis, "make_node_image", make_node_image)
    ran: list[list[str]] = []

    def run_through_interrupt(command: list[str], log: Any = None) -> int:
        ran.append(command)
        return 0 if "1.27.3" in command else 1

    monkeypatch.setattr(version_axis, "run_through_interrupt", run_through_interrupt)
    argv = ["bisect", "--probe", "p", "--good", "1.27.3", "--bad", "1.27.5", "--build", "1", "--run-dir", str(tmp_path)]
    assert cli.main(argv) == 0
    assert readings == ["1.27.3", "1.27.5"]
    assert made and all(type(r) is Release for r in made) and "1.27.3" not in {str(r) for r in made}
    assert len(ran) == 3 and all("--version" in command or "--image" in command for command in ran)


def test_make_upgrade_reads_from_and_to_once(
    readings: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """make upgrade FROM=1.26 TO=1.28.3 (the replay of the recordings stood in: no records): each end read once,
    resolved and compared as the typed release."""
    monkeypatch.setattr(upgrade_atlas, "atlas_records", lambda releases: upgrade_atlas.Atlas([], {}))
    assert cli.main(["upgrade", "--from", "1.26", "--to", "1.28.3"]) == 0
    assert readings == ["1.26", "1.28.3"]
    assert "v1.26.15" in capsys.readouterr().out


def test_make_coverage_reads_no_version_text(
    readings: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """make coverage PLAN=1 takes no version from the user: its catalog, build plan and node image tags read none
    (the replay of the recordings stood in: nothing observed)."""
    monkeypatch.setattr(coverage, "replay_recordings", lambda: coverage.observed_in([], [], {}))
    assert cli.main(["coverage", "--plan", "1"]) == 0
    assert readings == []
    assert "claim version ranges" in capsys.readouterr().out


def test_the_old_way_would_be_seen(readings: list[str]) -> None:
    """The count sees a module that reads the text again (as kind_image, local_tag and release_text each did)."""
    Release.parse("1.27")
    KubeVersion.requested("1.27")
    assert readings == ["1.27", "1.27"]
