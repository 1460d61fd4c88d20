"""plp-crictl's build (harness/nodeimage/crictl.py) offline: `go build` is stood in for everywhere.

The Go side is checked live (a throw-away containerd with the CRI plugin, `crictl -r unix://...`), not here:
CI has neither Go nor a network.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from harness.gobuild.go import BuildError
from harness.nodeimage import crictl


@pytest.fixture
def go_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/go" if name == "go" else None)


def _sources(directory: Path, main: str = "package main\n") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "go.mod").write_text("module local/plp-crictl\n\ngo 1.20\n\nrequire k8s.io/cri-api v0.27.3\n")
    (directory / "go.sum").write_text("")
    (directory / "main.go").write_text(main)
    return directory


class FakeGo:
    """Stands in for `go build`: writes the -o file (or not) and what Go would have said, into the log."""

    def __init__(self, code: int = 0, said: str = "") -> None:
        self.code, self.said = code, said
        self.calls: list[tuple[list[str], dict[str, str], Path]] = []

    def __call__(self, args: list[str], env: Mapping[str, str], cwd: Path, log: Path) -> int:
        self.calls.append((args, dict(env), cwd))
        with log.open("a") as out:
            out.write(self.said)
        if self.code == 0:
            Path(args[args.index("-o") + 1]).write_bytes(b"\x7fELF")
        return self.code


def test_the_committed_module_builds_on_cri_api_v0_27_3() -> None:
    record = crictl.crictl_record()
    assert record["cri_api"] == "v0.27.3"
    assert record["toolchain"] == crictl.TOOLCHAIN
    assert len(record["source_key"]) == 16
    assert "not cri-tools" in record["name"]
    go_mod = (crictl.SOURCE / "go.mod").read_text()
    assert go_mod.startswith("module local/plp-crictl\n")
    assert "google.golang.org/grpc v1.51.0" in go_mod  # the grpc cri-api v0.27.3's go.mod wants


@pytest.mark.usefixtures("go_on_path")
def test_a_first_build_runs_go_once_statically_from_the_sources(tmp_path: Path) -> None:
    source, go = _sources(tmp_path / "src"), FakeGo()
    binary = crictl.build_crictl(tools=tmp_path / "tools", source=source, runner=go)
    assert binary == tmp_path / "tools" / "crictl" / crictl.source_key(source) / "crictl"
    assert binary.read_bytes() == b"\x7fELF"
    assert not (binary.parent / "crictl.partial").exists()
    [(args, env, cwd)] = go.calls
    assert args[1:3] == ["build", "-trimpath"]
    assert cwd == source
    assert env["CGO_ENABLED"] == "0"
    assert env["GOTOOLCHAIN"] == crictl.TOOLCHAIN
    assert env["GOFLAGS"] == "-mod=readonly"
    assert env["GOMODCACHE"] == str(tmp_path / "tools" / "go" / "mod")
    record = json.loads((binary.parent / "build.json").read_text())
    assert record["cri_api"] == "v0.27.3"
    assert record["source_key"] == binary.parent.name
    assert "CGO_ENABLED=0 /usr/bin/go build -trimpath" in (binary.parent / "build.log").read_text()


@pytest.mark.usefixtures("go_on_path")
def test_a_build_of_the_same_sources_is_reused_without_go(tmp_path: Path) -> None:
    source = _sources(tmp_path / "src")
    first = crictl.build_crictl(tools=tmp_path, source=source, runner=FakeGo())
    again = FakeGo()
    assert crictl.build_crictl(tools=tmp_path, source=source, runner=again) == first
    assert again.calls == []


@pytest.mark.usefixtures("go_on_path")
def test_changed_sources_or_toolchain_build_anew(tmp_path: Path) -> None:
    source = _sources(tmp_path / "src")
    first = crictl.build_crictl(tools=tmp_path, source=source, runner=FakeGo())
    other_toolchain = crictl.build_crictl(tools=tmp_path, source=source, toolchain="go1.20.2", runner=FakeGo())
    _sources(source, main="package main\n\nfunc main() {}\n")
    changed = crictl.build_crictl(tools=tmp_path, source=source, runner=FakeGo())
    assert len({first.parent, other_toolchain.parent, changed.parent}) == 3


@pytest.mark.usefixtures("go_on_path")
def test_a_failed_build_says_why_leaves_nothing_to_reuse_and_is_retried(tmp_path: Path) -> None:
    source = _sources(tmp_path / "src")
    broken = FakeGo(code=1, said="./main.go:12:2: undefined: pb.NewRuntimeServiceClient\n")
    with pytest.raises(crictl.CrictlBuildError, match=r"(?s)go build exited 1.*build\.log.*undefined: pb\.New") as err:
        crictl.build_crictl(tools=tmp_path, source=source, runner=broken)
    assert isinstance(err.value, BuildError)  # the CLI's `except BuildError` prints it without a traceback
    assert not (tmp_path / "crictl" / crictl.source_key(source) / "crictl").exists()
    fixed = FakeGo()
    assert crictl.build_crictl(tools=tmp_path, source=source, runner=fixed).is_file()
    assert len(fixed.calls) == 1


@pytest.mark.usefixtures("go_on_path")
def test_a_build_that_hangs_is_stopped_with_a_message(tmp_path: Path) -> None:
    def hangs(args: list[str], env: Mapping[str, str], cwd: Path, log: Path) -> int:
        raise subprocess.TimeoutExpired(args, crictl.BUILD_TIMEOUT_S)

    with pytest.raises(crictl.CrictlBuildError, match=r"took over 900s and was stopped; see .*build\.log"):
        crictl.build_crictl(tools=tmp_path, source=_sources(tmp_path / "src"), runner=hangs)


def test_no_go_on_path_is_said_plainly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(crictl.CrictlBuildError, match=r"needs Go 1\.21 or newer on PATH"):
        crictl.build_crictl(tools=tmp_path, source=_sources(tmp_path / "src"), runner=FakeGo())


def test_incomplete_sources_are_refused(tmp_path: Path) -> None:
    source = _sources(tmp_path / "src")
    (source / "go.sum").unlink()
    with pytest.raises(crictl.CrictlBuildError, match=r"go\.sum is missing"):
        crictl.source_key(source)
