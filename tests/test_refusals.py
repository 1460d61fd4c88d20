"""Refusals that say how to fix themselves in one step: missing Debian packages end with the one
apt-get line installing all of them, a release older than the suite supports is refused as such before any
download, CLUSTER given where it means nothing is refused, and Docker that does not answer (or is not there
for make engine) names the ways forward. Nothing here builds, downloads or starts anything."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.base.errors import PrerequisiteMissing, host_refusal
from harness.base.versions import Release
from harness.clusters.kind import axis as kind_axis
from harness.clusters.kind import clusters as kind_clusters
from harness.clusters.kind import engine
from harness.clusters.kind import node_images as kind_node_images
from harness.clusters.kind.cluster import check_docker
from harness.clusters.kind.images import resolve_image
from harness.clusters.local import clusters as local_clusters
from harness.clusters.local import host as local_host
from harness.clusters.local import teardown as local_teardown
from harness.doors import cli
from harness.doors.commands import refusal
from harness.doors.make_variables import make_argv
from harness.gobuild.kubernetes import release_text
from harness.nodeimage import release as node_image_release
from tests.doubles import FakeRunner, failed

REPO = Path(__file__).resolve().parent.parent
INSTALL_ALL = "install them all with: apt-get install "


def nothing_may_start(monkeypatch: pytest.MonkeyPatch) -> None:
    for owner, steps in (
        (local_clusters, ("build_kubernetes", "resolve_module")),
        (kind_clusters, ("ensure_kind",)),
        (kind_axis, ("make_node_image",)),
        (kind_node_images, ("resolve_module", "build_node_images", "ensure_kind", "make_node_image")),
    ):
        for step in steps:
            monkeypatch.setattr(owner, step, lambda *a, **k: pytest.fail("nothing may be built or downloaded"))


def test_a_local_clusters_missing_packages_end_with_one_apt_get_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    nothing_may_start(monkeypatch)
    monkeypatch.setattr("os.geteuid", lambda: 0)
    monkeypatch.setattr("shutil.which", lambda tool: None if tool in ("etcd", "gcc", "ctr") else f"/usr/bin/{tool}")
    monkeypatch.setattr(local_host, "CNI_PLUGINS", tmp_path)  # none of the plugins there
    assert cli.main(["probe", "--cluster", "local", "--version", "1.27.3"]) == refusal.PREREQUISITE_MISSING
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == "error: prerequisite missing: a local cluster cannot run here:"
    assert lines[-1].strip().startswith(INSTALL_ALL)
    packages = lines[-1].strip().removeprefix(INSTALL_ALL).split()
    expected = ["containerd", "etcd-server", "gcc", "libc6-dev", "containernetworking-plugins"]
    expected += [] if Path("/bin/busybox").is_file() else ["busybox-static"]
    assert packages == expected  # each once, in the order the problems name them


def test_a_node_images_missing_packages_end_with_one_apt_get_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    nothing_may_start(monkeypatch)
    monkeypatch.setattr(kind_node_images, "check_docker", lambda: None)
    monkeypatch.setattr(kind_node_images, "check_engine", lambda: None)
    monkeypatch.setattr("harness.nodeimage.node.shutil.which", lambda t: None if t in ("debootstrap", "ctr") else t)
    monkeypatch.setattr("harness.nodeimage.node.os.geteuid", lambda: 0)
    assert cli.main(["node-image", "--version", "1.27.3", "--source", "modules"]) == refusal.PREREQUISITE_MISSING
    last = capsys.readouterr().err.strip().splitlines()[-1].strip()
    assert last.removeprefix(INSTALL_ALL).split()[:2] == ["debootstrap", "containerd"]


def test_nothing_to_install_adds_no_apt_get_line() -> None:
    assert host_refusal("needs", ["root (debootstrap and chroot)"]) == "needs:\n  root (debootstrap and chroot)"


@pytest.mark.parametrize(
    "argv",
    [
        ["probe", "--cluster", "local", "--version", "1.13.0"],
        ["probe", "--version", "1.13"],
        ["probe", "--image", "kindest/node:v1.18.20"],
        ["node-image", "--version", "1.13.0"],
    ],
    ids=["local", "kind-version", "kind-image", "node-image"],
)
def test_a_release_older_than_the_suite_supports_is_refused_as_such_before_any_download(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    nothing_may_start(monkeypatch)
    monkeypatch.setattr(node_image_release, "release_downloads_reachable", lambda: pytest.fail("no network"))
    assert cli.main(argv) == refusal.BAD_INPUT
    err = capsys.readouterr().err
    assert re.match(r"error: bad input: Kubernetes v?1\.1[38]\S* is older than the suite supports", err)
    assert "the oldest is 1.19" in err and len(err.strip().splitlines()) == 1


def test_the_oldest_supported_release_itself_passes_the_check() -> None:
    assert node_image_release.local_tag(Release.parse("1.19.0-rc.0")) == "plp-node:v1.19.0-rc.0"
    assert resolve_image(Release.parse("1.19")).kubernetes.minor == "1.19"
    assert release_text(Release.parse("1.21.0-alpha.1")) == "v1.21.0-alpha.1"


def test_a_release_older_than_a_build_here_can_make_is_refused_naming_the_kind_way(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    nothing_may_start(monkeypatch)
    assert cli.main(["probe", "--cluster", "local", "--version", "1.20.15"]) == refusal.BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("error: bad input: Kubernetes 1.20.15 cannot be built here: the oldest release built")
    assert "1.19 and 1.20 run on their pinned kind images" in err


def run_make(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=REPO, capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize("target", ["report", "node-image", "versions", "engine"])
def test_cluster_given_to_a_target_that_does_not_take_it_is_refused(target: str) -> None:
    done = run_make(target, "CLUSTER=local")
    assert done.returncode == 2
    assert done.stderr.startswith("error: bad input: CLUSTER chooses the cluster of make probe")
    assert f"make {target} does not take it" in done.stderr


def test_make_clean_passes_cluster_on_and_probe_takes_it() -> None:
    """make runs `python -m harness make clean`, which takes CLUSTER from the environment when it is given."""
    assert "-m harness make clean" in run_make("-n", "clean", "CLUSTER=local").stdout
    assert make_argv("clean", {"CLUSTER": "local"}) == ["clean", "--cluster=local"]
    assert make_argv("clean", {}) == ["clean"]
    assert "--cluster=local" in make_argv("probe", {"CLUSTER": "local", "VERSION": "1.27.3"})


def test_clean_of_kind_leftovers_only_leaves_local_clusters_alone(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("harness.clusters.kind.clusters.shutil.which", lambda tool: None)
    monkeypatch.setattr(kind_clusters, "installed_kind", lambda: None)
    monkeypatch.setattr(local_teardown, "leftover_clusters", lambda: pytest.fail("local clusters are not looked at"))
    assert cli.main(["clean", "--cluster", "kind"]) == 0


@pytest.mark.parametrize(("root_on_linux", "ways_forward"), [(True, True), (False, False)])
def test_docker_that_does_not_answer_on_a_root_linux_host_names_make_engine_and_cluster_local(
    root_on_linux: bool, ways_forward: bool
) -> None:
    runner = FakeRunner({"docker info --format": failed("Cannot connect to the Docker daemon")})
    with pytest.raises(PrerequisiteMissing) as refused:
        check_docker(runner, lambda tool: f"/usr/bin/{tool}", lambda: root_on_linux)
    said = str(refused.value)
    assert "does not answer" in said and "Cannot connect to the Docker daemon" in said
    assert ("make engine" in said and "CLUSTER=local" in said) == ways_forward


def test_make_engine_without_dockerd_says_which_debian_package_and_shows_no_traceback(tmp_path: Path) -> None:
    (tmp_path / "docker").symlink_to("/bin/false")  # a docker CLI, no dockerd
    env = {**os.environ, "PATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "harness.clusters.kind.engine", "start"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == engine.PREREQUISITE_MISSING == refusal.PREREQUISITE_MISSING
    assert done.stderr.startswith("error: prerequisite missing: dockerd is not on PATH")
    assert "apt-get install docker.io" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
