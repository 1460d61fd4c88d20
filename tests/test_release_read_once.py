"""VERSION is read once: make probe's front door parses it into a typed release (harness/base/versions.py `Release`)
and everything below takes that release as it is; no kind, build or node-image module reads the text again."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from harness.base.process import Completed
from harness.base.versions import KubeVersion, Release
from harness.clusters.kind import clusters as kind_clusters
from harness.clusters.kind import node_images
from harness.clusters.local import clusters as local_clusters
from harness.doors import cli
from harness.gobuild import kubernetes
from harness.gobuild.kubernetes import Build
from harness.nodeimage.kind_parts import Plan


@pytest.fixture
def readings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text read as a requested version (KubeVersion.requested: every reading of VERSION went through it)."""
    read: list[str] = []
    original = KubeVersion.requested.__func__  # type: ignore[attr-defined]

    def requested(cls: type[KubeVersion], text: str) -> KubeVersion:
        read.append(text)
        result: KubeVersion = original(cls, text)
        return result

    monkeypatch.setattr(KubeVersion, "requested", classmethod(requested))
    return read


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
    monkeypatch.setattr(kind_clusters, "run_command", lambda argv, timeout: failing)
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

    monkeypatch.setattr(kind_clusters, "plan_parts", plan_parts)
    monkeypatch.setattr(kind_clusters, "make_node_image", make_node_image)

    def equal_build_minutes(release: Release, plan: Plan) -> tuple[int, str]:
        handed.append(release)
        return 1, "a stand-in"

    monkeypatch.setattr(kind_clusters, "equal_build_minutes", equal_build_minutes)
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


def test_the_old_way_would_be_seen(readings: list[str]) -> None:
    """The count sees a module that reads the text again (as kind_image, local_tag and release_text each did)."""
    Release.parse("1.27")
    KubeVersion.requested("1.27")
    assert readings == ["1.27", "1.27"]
