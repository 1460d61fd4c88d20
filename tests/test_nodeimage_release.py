"""make node-image (harness/nodeimage/release.py): a node image for a release kind does not publish.

Stood in: docker and kind (tests/doubles.FakeRunner). Real: the tag, the kind command line, the record of
which kind built the image, and how `make probe IMAGE=` then finds that kind release.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.base.versions import Release, VersionError
from harness.clusters.kind import images as kind_images
from harness.clusters.kind import node_images as kind_node_images
from harness.clusters.kind.images import known_images, resolve_image
from harness.nodeimage import release as node_image_release
from harness.nodeimage.release import NodeImageBuildFailed, build_kind_release, build_node_image, local_tag
from tests.doubles import FakeRunner, failed, ok

REPO = Path(__file__).resolve().parent.parent


def test_the_tag_names_the_full_release_and_a_minor_alone_is_refused() -> None:
    assert local_tag(Release.parse("1.27.0-rc.0")) == "plp-node:v1.27.0-rc.0"
    assert local_tag(Release.parse("v1.30.1")) == "plp-node:v1.30.1"
    with pytest.raises(VersionError, match="full release version"):
        local_tag(Release.parse("1.27"))


def test_the_newest_kind_release_in_the_table_builds_release_images() -> None:
    release = build_kind_release(i.kind_release for i in known_images() if i.kind_release)
    assert tuple(int(p) for p in release.lstrip("v").split(".")) >= (0, 26, 0)


def test_a_build_runs_kind_once_records_the_kind_release_and_is_reused(tmp_path: Path) -> None:
    runner = FakeRunner({"docker image inspect": failed("No such image")})
    tag, said = build_node_image(Release.parse("1.27.0-rc.0"), "/tools/kind-v0.33.0", "v0.33.0", runner, tmp_path)
    assert tag == "plp-node:v1.27.0-rc.0" and "built" in said
    assert runner.calls[-1] == [
        "/tools/kind-v0.33.0",
        "build",
        "node-image",
        "--type",
        "release",
        "v1.27.0-rc.0",
        "--image",
        "plp-node:v1.27.0-rc.0",
    ]
    assert node_image_release.built_by(tag, tmp_path) == "v0.33.0"
    again = FakeRunner({"docker image inspect": ok("[{}]")})
    assert "reused" in build_node_image(Release.parse("1.27.0-rc.0"), "kind", "v0.33.0", again, tmp_path)[1]
    assert not again.ran("kind")


def test_a_failed_build_shows_kinds_output(tmp_path: Path) -> None:
    runner = FakeRunner({"docker image inspect": failed("No such image"), "kind build node-image": failed("404")})
    with pytest.raises(NodeImageBuildFailed, match=r"(?s)could not build plp-node:v1.27.0-rc.9.*404.*dl.k8s.io"):
        build_node_image(Release.parse("1.27.0-rc.9"), "kind", "v0.33.0", runner, tmp_path)


def test_make_probe_image_finds_the_kind_release_that_built_a_local_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kind_images, "BUILDS_DIR", tmp_path)
    (tmp_path / "plp-node-v1.27.0-rc.0.json").write_text('{"kind_release": "v0.33.0"}')
    image = resolve_image(None, "plp-node:v1.27.0-rc.0")
    assert (str(image.kubernetes), image.kind_release, image.digest) == ("v1.27.0-rc.0", "v0.33.0", None)


def test_node_image_without_a_full_version_exits_2_and_without_docker_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The minor refused through the CLI in this process, the missing Docker through the real entry point (`python
    -m harness` in a child, only tmp_path on PATH): a child took 0.15-0.2 s of CPU to say one line."""
    from harness.doors import cli

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
        return subprocess.run(
            [sys.executable, "-m", "harness", "node-image", *args], cwd=REPO, env=env, capture_output=True, text=True
        )

    assert cli.main(["node-image", "--version", "1.27"]) == 2
    assert "full release version" in capsys.readouterr().err
    no_docker = run("--version", "1.27.0-rc.0")
    assert no_docker.returncode == 3 and "docker is not on PATH" in no_docker.stderr


def test_from_modules_an_unserved_version_is_refused_before_anything_is_built(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stood in: Docker, the engine and Go checks (pass) and the proxy (refuses); the builder must not run."""
    from harness.doors import cli
    from harness.gobuild.go import BuildError
    from harness.nodeimage.kind_parts import kind_release
    from harness.nodeimage.kind_plan import Plan

    built: list[str] = []
    monkeypatch.setattr(kind_node_images, "check_docker", lambda: None)
    monkeypatch.setattr(kind_node_images, "check_engine", lambda: None)
    monkeypatch.setattr(kind_node_images, "check_go", lambda: "go version go1.26.8 linux/amd64")
    monkeypatch.setattr(kind_node_images, "node_image_host_problems", lambda: [])
    planned = Plan(kind_release("v0.20.0"), {}, "", "")  # kind v0.20.0's components, nothing to resolve
    monkeypatch.setattr(kind_node_images, "plan_parts", lambda version, kind, containerd: planned)

    def build(release: Release, say: object, parts_plan: Plan | None) -> list[str]:
        built.append(str(release))
        return [f"plp-node:{release.tag}{parts_plan.suffix if parts_plan else ''}"]

    monkeypatch.setattr(kind_node_images, "build_node_images", build)

    def unserved(release: Release) -> None:
        raise BuildError(f"the Go module proxy does not serve k8s.io/kubernetes@{release.tag}: 404")

    monkeypatch.setattr(kind_node_images, "resolve_module", unserved)
    assert cli.main(["node-image", "--version", "1.27.99", "--source", "modules"]) == 2
    assert "does not serve k8s.io/kubernetes@v1.27.99" in capsys.readouterr().err and built == []
    # served: built from modules; `auto` picks modules when dl.k8s.io does not answer
    monkeypatch.setattr(kind_node_images, "resolve_module", lambda version: {"Dir": "/x"})
    monkeypatch.setattr(node_image_release, "release_downloads_reachable", lambda: False)
    assert cli.main(["node-image", "--version", "1.27.3"]) == 0
    out = capsys.readouterr().out
    assert built == ["1.27.3"] and "building from modules: dl.k8s.io does not answer" in out
    assert "make probe IMAGE=plp-node:v1.27.3" in out


def test_from_modules_a_host_without_root_or_debootstrap_is_told_so_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.doors import cli

    monkeypatch.setattr(kind_node_images, "check_docker", lambda: None)
    monkeypatch.setattr(kind_node_images, "check_engine", lambda: None)
    monkeypatch.setattr(
        kind_node_images, "node_image_host_problems", lambda: ["root (debootstrap and chroot)", "debootstrap on PATH"]
    )
    monkeypatch.setattr(
        kind_node_images, "check_go", lambda: pytest.fail("nothing is checked after a missing prerequisite")
    )
    assert cli.main(["node-image", "--version", "1.27.3", "--source", "modules"]) == 3
    err = capsys.readouterr().err
    assert "building a node image from Go modules needs:\n  root (debootstrap and chroot)\n  debootstrap on PATH" in err
    assert "Traceback" not in err
