"""The engine check and the runc wrapper for hosts whose root lacks CAP_SYS_RESOURCE (harness/clusters/kind/engine.py,
harness/clusters/kind/runc_without_sys_resource.py). No Docker: the daemon is stood in by FakeRunner, runc by nothing
(the wrapper's patching is tested before it would exec runc)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.base.errors import PrerequisiteMissing
from harness.base.process import Completed
from harness.clusters.kind import engine
from harness.clusters.kind import runc_without_sys_resource as wrapper
from tests.doubles import FakeRunner, ok

WITHOUT = "CapInh:\t0000000000000000\nCapBnd:\t000001fffeffffff\n"  # this project's machines
WITH = "CapBnd:\t000001ffffffffff\n"


def status_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "status"
    path.write_text(text)
    return path


def test_the_bounding_set_tells_whether_cap_sys_resource_is_there() -> None:
    assert engine.lacks_sys_resource(WITHOUT)
    assert not engine.lacks_sys_resource(WITH)
    assert not engine.lacks_sys_resource("Name:\tpython\n")  # no CapBnd line: nothing to say


def test_a_host_lacking_the_capability_with_a_plain_engine_is_refused_before_kind_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    runner = FakeRunner({"docker info --format": ok("runc\n")})
    with pytest.raises(PrerequisiteMissing) as err:
        engine.check_engine(runner, status_file(tmp_path, WITHOUT))
    assert "lacks CAP_SYS_RESOURCE" in str(err.value)
    assert "make engine" in str(err.value)
    assert "default runtime is runc" in str(err.value)


def test_the_suites_engine_or_a_capable_host_or_a_remote_engine_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    engine.check_engine(FakeRunner({"docker info --format": ok("plp-runc\n")}), status_file(tmp_path, WITHOUT))
    capable = FakeRunner()
    engine.check_engine(capable, status_file(tmp_path, WITH))
    assert capable.calls == []  # nothing asked of Docker when the host has the capability
    monkeypatch.setenv("DOCKER_HOST", "tcp://10.0.0.2:2376")
    remote = FakeRunner()
    engine.check_engine(remote, status_file(tmp_path, WITHOUT))
    assert remote.calls == []  # a remote daemon's capabilities are not this host's


def test_the_wrapper_finds_the_command_after_runcs_global_options() -> None:
    argv = [
        "--root",
        "/run/r",
        "--log",
        "/l.json",
        "--log-format",
        "json",
        "--systemd-cgroup",
        "create",
        "-b",
        "B",
        "id",
    ]
    assert wrapper.command_and_options(argv) == ("create", ["-b", "B", "id"])
    assert wrapper.option_value(["--bundle=/x", "id"], "--bundle", "-b") == "/x"
    assert wrapper.command_and_options(["--version"]) == (None, [])


def write_spec(path: Path, capabilities: dict[str, list[str]], process_only: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    spec = {"capabilities": capabilities} if process_only else {"process": {"capabilities": capabilities}, "root": {}}
    path.write_text(json.dumps(spec))


ALL = ["CAP_CHOWN", "CAP_SYS_ADMIN", "CAP_SYS_RESOURCE"]


def test_create_drops_the_capability_from_every_set_of_the_bundle(tmp_path: Path) -> None:
    write_spec(tmp_path / "bundle" / "config.json", {"bounding": ALL, "effective": ALL, "ambient": []}, False)
    wrapper.prepare(["--root", "/r", "create", "--bundle", "bundle", "--pid-file", "p", "id"], tmp_path)
    spec = json.loads((tmp_path / "bundle" / "config.json").read_text())
    assert spec["process"]["capabilities"] == {
        "bounding": ["CAP_CHOWN", "CAP_SYS_ADMIN"],
        "effective": ["CAP_CHOWN", "CAP_SYS_ADMIN"],
        "ambient": [],
    }
    assert spec["root"] == {}  # the rest of the spec is kept


def test_run_without_bundle_uses_the_working_directory_and_exec_patches_its_process_file(tmp_path: Path) -> None:
    write_spec(tmp_path / "config.json", {"bounding": ALL}, False)
    wrapper.prepare(["run", "id"], tmp_path)
    assert "CAP_SYS_RESOURCE" not in (tmp_path / "config.json").read_text()
    write_spec(tmp_path / "process.json", {"bounding": ALL, "permitted": ALL}, True)
    wrapper.prepare(["--root", "/r", "exec", "--process", str(tmp_path / "process.json"), "--detach", "id"], tmp_path)
    assert json.loads((tmp_path / "process.json").read_text())["capabilities"]["permitted"] == ALL[:2]


def test_other_commands_touch_nothing(tmp_path: Path) -> None:
    write_spec(tmp_path / "config.json", {"bounding": ALL}, False)
    before = (tmp_path / "config.json").read_text()
    for argv in (["state", "id"], ["delete", "--force", "id"], ["kill", "id", "9"], ["features"]):
        wrapper.prepare(argv, tmp_path)
    assert (tmp_path / "config.json").read_text() == before


def test_an_engine_whose_runtime_wrapper_is_gone_is_refused_with_the_restart_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen live: an engine started before the suite's files moved kept a wrapper path that no longer existed, and
    every kind node then failed with 'fork/exec .../runc_without_sys_resource.py: no such file or directory'."""
    monkeypatch.delenv("DOCKER_HOST", raising=False)

    def daemon(wrapper_path: Path) -> Any:
        def run(argv: Sequence[str], timeout: float) -> Completed:
            if argv[-1] == "{{json .Runtimes}}":
                return ok(json.dumps({"plp-runc": {"path": str(wrapper_path)}, "runc": {"path": "runc"}}))
            return ok("plp-runc\n")

        return run

    gone = tmp_path / "old-layout" / "runc_without_sys_resource.py"
    with pytest.raises(PrerequisiteMissing, match=r"no longer there .*old-layout.*make engine-stop && make engine"):
        engine.check_engine(daemon(gone), status_file(tmp_path, WITHOUT))
    with pytest.raises(PrerequisiteMissing, match="no longer there"):
        engine.start_engine(tmp_path / "engine", daemon(gone), which=lambda tool: f"/usr/bin/{tool}")
    engine.check_engine(daemon(engine.WRAPPER), status_file(tmp_path, WITHOUT))  # the checkout's own wrapper
