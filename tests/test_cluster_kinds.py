"""A fourth kind of cluster is its own package and one registration (harness/clusters/registry.py): a stand-in kind,
written here as a kind's package would be, registered once, is driven by every front door without a line of theirs
changing: make probe resolves and readies it and hands it to pytest, the plugin chooses it from its own option,
the one lifecycle makes and removes its cluster, make clean finds its leftovers, and make matrix and make bisect run
its releases.

Nothing here starts a cluster, pytest or a build: the stand-in's provider only says what it was asked, and the
version axis's probe runs are stood in where they would start `python -m harness probe`.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from harness.axis import matrix
from harness.axis.release_axis import PlannedVersion, Readied, ReleaseAxis
from harness.base import inputs
from harness.base.run import Run
from harness.base.versions import Release
from harness.clusters import lifecycle, registry
from harness.clusters.kinds import AddOption, ClusterKind, Leftovers, Option, Request, Runnable, Say
from harness.clusters.lifecycle import ClusterProvider, Note, Removal
from harness.doors import cli
from harness.doors.pytest_plugin import _chosen_cluster

asked: list[str] = []  # what the stand-in kind and its provider were asked, in order


@dataclass
class StandInProvider:
    """A cluster the stand-in kind makes: it only says what it was asked to do."""

    name: str
    kubeconfig: Path
    kind: str = "stand-in"
    created: bool = False
    context: str | None = "stand-in"
    node_shutdown: None = None
    node_lister: None = None
    apiserver_restart: None = None
    goes_with_the_run: bool = True

    def facts(self) -> dict[str, Any]:
        return {"cluster": self.kind, "cluster_name": self.name}

    def create(self, logs_dir: Path) -> None:
        asked.append("create")
        self.created = True

    def wait_ready(self, core: object, logs_dir: Path) -> list[str]:
        asked.append("wait_ready")
        return ["stand-in-node"]

    def prepare(self, nodes: list[str]) -> dict[str, Any]:
        return {}

    def delete(self) -> Removal:
        asked.append("delete")
        self.created = False
        return Removal()

    def kept(self) -> str:
        return "kept"

    def keep_logs(self, directory: Path) -> str:
        return str(directory)

    def origin(self) -> dict[str, Any]:
        return {"cluster": self.kind, "cluster_name": self.name}


class StandInClusters(ClusterKind):
    """The fourth kind: clusters of one release each, from its own option, with leftovers of its own."""

    name = "stand-in"
    has_release_axis = True
    pytest_option = "--stand-in-version"
    described = "a stand-in one"
    no_node_shutdown = "live probe: the stand-in kind has no graceful node shutdown"

    def declare_options(self, add: AddOption) -> None:
        add("--stand-in-version", metavar="VERSION", help="a stand-in cluster of this release")

    def asked(self, option: Option) -> bool:
        return bool(option("--stand-in-version"))

    def request(self, option: Option) -> Request:
        return Request(version=inputs.requested_release(option("--stand-in-version")))

    def resolve(self, request: Request, warn: Say) -> Runnable:
        asked.append(f"resolve {request.version}")
        return Runnable(self.name, request.version, {"made_by": "the stand-in"})

    def check_host(self, runnable: Runnable) -> None:
        asked.append("check_host")

    def prepare(self, runnable: Runnable, say: Say, warn: Say) -> Runnable:
        asked.append("prepare")
        return runnable.with_facts(ready="yes")

    def provider(self, runnable: Runnable, run: Run, note: Note, role: str = "") -> ClusterProvider:
        asked.append(f"provider {runnable.version} {runnable.facts['ready']}")
        return StandInProvider(f"plp-stand-in-{run.run_id[-4:]}", run.path("kubeconfig"))

    def attach_options(self, provider: ClusterProvider) -> list[str]:
        return ["--stand-in-nodes"]

    def attached(self, option: Option) -> bool:
        return False

    def attach(self, kubeconfig: Path, context: str, option: Option, run_record: Path) -> ClusterProvider:
        raise AssertionError("not re-attached to here")

    def leftovers(self, request: Request) -> Leftovers:
        return Leftovers(["stand-in clusters removed: plp-stand-in-abcd"])

    def release_axis(self, args: argparse.Namespace, tools: Path) -> ReleaseAxis:
        return StandInAxis()


@dataclass
class StandInAxis(ReleaseAxis):
    """Its releases: each readied once (a record says so), probed with its own option."""

    one_at_a_time: ClassVar[bool] = True
    readied: list[str] = field(default_factory=list)

    def default_versions(self) -> list[str]:
        return ["1.27"]

    def matrix_refusal(self) -> str | None:
        return None

    def releases(self, requested: list[str]) -> list[str]:
        return [f"{version}.3" if version.count(".") == 1 else version for version in requested]

    def plan(self, requested: list[str]) -> list[PlannedVersion]:
        releases = self.releases(requested)
        return [PlannedVersion(version, release) for version, release in zip(requested, releases, strict=True)]

    def check_host(self, one_at_a_time: bool) -> None:
        asked.append(f"axis check_host one_at_a_time={one_at_a_time}")

    def candidates(self, good: str, bad: str) -> list[str]:
        return [good, bad]

    def bisect_refusal(self) -> str | None:
        return None

    def unbuildable(self, release: str) -> str:
        return ""

    def ready(self, release: str, stop: Any = None, quiet: bool = False) -> Readied:
        asked.append(f"ready {release}")
        return Readied(release, {"duration_s": 1.0})

    def is_ready(self, release: str) -> bool:
        return False

    def probe_args(self, release: str) -> list[str]:
        return ["--version", release, "--cluster", "stand-in"]

    def ran_on(self, run_record: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def newest_baseline(self, newest_release: str) -> str:
        return newest_release


@pytest.fixture
def fourth_kind() -> Iterator[StandInClusters]:
    """The stand-in kind, registered the one way a kind is: registry.register."""
    kind = StandInClusters()
    asked.clear()
    registry.register(kind)
    try:
        yield kind
    finally:
        registry.KINDS.remove(kind)


@pytest.mark.usefixtures("fourth_kind")
def test_make_probe_resolves_and_readies_it_once_and_hands_it_to_pytest(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def execv(path: str, command: list[str]) -> None:
        raise SystemExit(command)

    monkeypatch.setattr(os, "execv", execv)
    with pytest.raises(SystemExit) as started:
        cli.main(
            ["probe", "--cluster", "stand-in", "--version", "1.27.3", "--parallel", "1", "--run-dir", str(tmp_path)]
        )
    command: list[str] = started.value.code  # type: ignore[assignment]
    handed = Runnable.from_json(command[command.index("--cluster-spec") + 1])
    assert handed == Runnable(
        "stand-in", Release.parse("1.27.3"), {"made_by": "the stand-in", "ready": "yes"}, prepared=True
    )
    assert asked == ["resolve 1.27.3", "prepare"]  # once each; pytest resolves nothing again


def test_pytest_chooses_it_from_its_own_option_and_from_make_probes_hand_off(fourth_kind: StandInClusters) -> None:
    options = {"--stand-in-version": "1.27.3"}
    chosen = _chosen_cluster(lambda flag: options.get(flag))
    assert chosen is not None and chosen.kind is fourth_kind and chosen.runnable is not None
    assert str(chosen.runnable.version) == "1.27.3" and not chosen.runnable.prepared
    handed = chosen.runnable.with_facts(ready="yes")
    again = _chosen_cluster(lambda flag: handed.to_json() if flag == "--cluster-spec" else None)
    assert again is not None and again.kind is fourth_kind and again.runnable == handed
    assert asked == ["resolve 1.27.3"]  # the hand-off is loaded, not resolved
    assert "--stand-in-version (a stand-in one)" in registry.options_said(parenthesised=False)


def test_the_one_lifecycle_makes_and_removes_its_cluster(
    fourth_kind: StandInClusters, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    class Transport:
        def __init__(self, api: object, node_lister: object, node_shutdown: object) -> None: ...

        def server_version(self) -> dict[str, str]:
            return {"gitVersion": "v1.27.3"}

    monkeypatch.setattr("kubernetes.config.new_client_from_config", lambda **kwargs: None)
    monkeypatch.setattr(lifecycle, "LiveTransport", Transport)
    runnable = fourth_kind.prepare(fourth_kind.resolve(Request(version=Release.parse("1.27.3")), print), print, print)
    notes: dict[str, Any] = {}
    provider = fourth_kind.provider(runnable, Run.start(tmp_path), notes.update)
    with lifecycle.cluster_life(provider, notes.update, keep=False, logs_dir=tmp_path) as target:
        assert target.origin["cluster"] == "stand-in"
    assert asked[-3:] == ["create", "wait_ready", "delete"] and notes["cluster_deleted"] is True


@pytest.mark.usefixtures("fourth_kind")
def test_make_clean_finds_its_leftovers(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli.main(["clean", "--cluster", "stand-in"]) == 0
    assert capsys.readouterr().out.splitlines() == ["stand-in clusters removed: plp-stand-in-abcd"]


@pytest.mark.usefixtures("fourth_kind")
def test_make_matrix_and_make_bisect_run_its_releases(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started: list[list[str]] = []

    def probe_run(command: list[str], log: object = None) -> int:
        started.append(command)
        run_dir = Path(command[command.index("--run-dir") + 1]) / "20260101-000000-abcd"
        (run_dir / "probes").mkdir(parents=True)
        (run_dir / "probes" / "p.json").write_text(json.dumps({"outcome": "passed"}))
        return 0

    monkeypatch.setattr(matrix, "run_through_interrupt", probe_run)
    monkeypatch.setattr("harness.doors.commands.housekeeping.run_report_command", lambda args: 0)
    assert cli.main(["matrix", "--cluster", "stand-in", "--versions", "1.27", "--run-dir", str(tmp_path)]) == 0
    assert started[0][3:] == ["probe", "--version", "1.27.3", "--cluster", "stand-in", "--run-dir", started[0][-1]]
    assert "axis check_host one_at_a_time=True" in asked and "ready 1.27.3" in asked
    (record,) = tmp_path.glob("matrix-*/matrix.json")
    assert json.loads(record.read_text())["cluster"] == "stand-in"

    monkeypatch.setattr(
        "harness.doors.commands.version_axis.run_through_interrupt", lambda command: 0 if "1.27.3" in command else 1
    )
    monkeypatch.setattr("harness.doors.commands.version_axis.selection_problem", lambda probe, run_dir: None)
    bisect = ["bisect", "--cluster", "stand-in", "--probe", "x", "--good", "1.27.3", "--bad", "1.27.4"]
    assert cli.main([*bisect, "--run-dir", str(tmp_path)]) == 0
    assert "first bad: 1.27.4 (last good: 1.27.3)" in capsys.readouterr().out
