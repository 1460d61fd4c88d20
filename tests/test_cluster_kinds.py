"""A fourth kind of cluster is its own package and one registration (harness/clusters/registry.py): the stand-in of
tests/stand_in_kind.py, written as a kind's package would be and registered once, is driven by every front door
without a line of theirs changing: make probe resolves it once and hands it to pytest, the plugin chooses it from
its own option, the one lifecycle makes and removes its cluster, make probe PARALLEL makes one for its workers
(which re-attach to it) and starts the node-shutdown probes on a second one (an ability it has), make clean finds
its leftovers, make matrix, bisect and radar run its releases, and the reports read its recordings.

Nothing here starts a cluster, pytest or a build: the stand-in's clusters only say what they were asked, and the
processes the front doors would start are stood in where they would start them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.axis import matrix
from harness.base.run import Run
from harness.base.versions import Release
from harness.clusters import lifecycle, registry
from harness.clusters.kinds import (
    LeavesLeftovers,
    Reattaches,
    Request,
    Runnable,
    RunsReleases,
    ShutsNodesDown,
    reattached,
)
from harness.core import transport_live
from harness.core.records import provider_of
from harness.doors import cli, schedule
from harness.doors.commands import probe as probe_command
from harness.doors.commands import radar as radar_command
from harness.doors.plugin.choice import ChosenCluster, chosen_cluster
from harness.doors.plugin.clusters import _cluster
from harness.doors.plugin.keys import CLUSTER
from harness.reports import coverage, coverage_words, upgrade_compare
from tests import stand_in_kind
from tests.stand_in_kind import StandInClusters, asked

REPO = Path(__file__).resolve().parent.parent


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


class Transport:
    """The live transport of a stand-in cluster: its server's version, and what it was given."""

    def __init__(self, api: object, node_lister: object, node_shutdown: Any) -> None:
        self.node_shutdown = node_shutdown

    def server_version(self) -> dict[str, str]:
        return {"gitVersion": "v1.27.3"}


@pytest.fixture
def no_api_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lifecycle's client, nodes and transport stood in: the stand-in's clusters have no API server."""
    monkeypatch.setattr("kubernetes.config.new_client_from_config", lambda **kwargs: None)
    monkeypatch.setattr(transport_live, "LiveTransport", Transport)
    monkeypatch.setattr(lifecycle, "wait_nodes_ready", lambda core, timeout_s=180: ["stand-in-node"])


def test_it_writes_three_members_and_has_its_abilities_by_what_it_writes(fourth_kind: StandInClusters) -> None:
    assert fourth_kind.pytest_option == "--stand-in-version" and fourth_kind.described == "a new stand-in cluster"
    assert isinstance(fourth_kind, ShutsNodesDown | LeavesLeftovers | RunsReleases)
    assert not isinstance(fourth_kind, Reattaches)
    assert [kind.name for kind in registry.KINDS if isinstance(kind, ShutsNodesDown)] == ["kind", "stand-in"]
    assert registry.cluster_choices(version_axis=True) == ["kind", "local", "stand-in"]
    assert len(stand_in_kind.__loader__.get_source("tests.stand_in_kind").splitlines()) <= 60  # type: ignore[union-attr]


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
    assert handed == Runnable("stand-in", Release.parse("1.27.3"), {"made_by": "the stand-in"}, prepared=True)
    assert asked == ["resolve 1.27.3"]  # once; pytest resolves nothing again


def test_pytest_chooses_it_from_its_own_option_and_from_make_probes_hand_off(fourth_kind: StandInClusters) -> None:
    options = {"--stand-in-version": "1.27.3"}
    chosen = chosen_cluster(lambda flag: options.get(flag))
    assert chosen is not None and chosen.kind is fourth_kind and chosen.runnable is not None
    assert str(chosen.runnable.version) == "1.27.3" and not chosen.runnable.prepared
    handed = chosen.runnable.with_facts(ready="yes")
    again = chosen_cluster(lambda flag: handed.to_json() if flag == "--cluster-spec" else None)
    assert again is not None and again.kind is fourth_kind and again.runnable == handed
    assert asked == ["resolve 1.27.3"]  # the hand-off is loaded, not resolved
    assert "--stand-in-version (a new stand-in cluster)" in registry.options_said(parenthesised=False)


@pytest.mark.usefixtures("no_api_server")
def test_the_one_lifecycle_makes_and_removes_its_cluster(fourth_kind: StandInClusters, tmp_path: Path) -> None:
    runnable = fourth_kind.prepare(fourth_kind.resolve(Request(version=Release.parse("1.27.3")), print), print, print)
    notes: dict[str, Any] = {}
    provider = fourth_kind.provider(runnable, Run.start(tmp_path), notes.update)
    with lifecycle.cluster_life(provider, notes.update, keep=False, logs_dir=tmp_path) as target:
        assert target.origin == {"cluster": "stand-in", "cluster_name": provider.name}
        assert target.goes_with_the_run and target.apiserver_restart is None
    assert asked[-2:] == [f"create {provider.name}", f"delete {provider.name}"] and notes["cluster_deleted"] is True
    assert notes["nodes"] == ["stand-in-node"] and notes["cluster"] == "stand-in"


@pytest.mark.usefixtures("no_api_server")
def test_make_probe_parallel_makes_its_cluster_for_two_workers_which_reattach_to_it_by_its_kubeconfig(
    fourth_kind: StandInClusters, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Its workers, the probes marked alone after them, and the node-shutdown probes' pytest on a second cluster of
    its own: each started with what re-attaches to the stand-in's cluster (or makes its own)."""
    started: list[list[str]] = []
    real_popen = subprocess.Popen

    def popen(command: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        if "pytest" not in command:  # (not a probes' pytest: run as it is)
            return real_popen(command, **kwargs)
        started.append(command)
        return real_popen([sys.executable, "-c", "raise SystemExit(0)"])

    items = ["probes/t.py::test_one", "probes/t.py::test_two"]
    plan = schedule.plan_for(items, {"t.py::test_one": 10.0, "t.py::test_two": 10.0}, 2)
    alone = ["probes/t.py::test_alone"]
    monkeypatch.setattr(probe_command, "plan_workers", lambda *a: (plan, tmp_path / "schedule.json", True, alone))
    monkeypatch.setattr(subprocess, "Popen", popen)
    args = argparse.Namespace(run_dir=str(tmp_path / "runs"), parallel=2, kind_bin="kind", keep_cluster=False)
    args.repeat, args.probe, args.restart_apiserver_after, args.pytest_args = 1, "", None, []
    runnable = fourth_kind.resolve(Request(version=Release.parse("1.27.3")), print).with_facts()
    assert probe_command.run_parallel(args, fourth_kind, runnable) == 0

    shutdown, together, by_itself = started
    assert "node_shutdown" in shutdown and "--cluster-gate" not in shutdown  # its own cluster, made by its pytest
    assert Runnable.from_json(shutdown[shutdown.index("--cluster-spec") + 1]) == runnable
    assert together[together.index("-n") + 1] == "2" and "alone and not node_shutdown" in by_itself
    (run_dir,) = (tmp_path / "runs").iterdir()
    provenance = json.loads((run_dir / "run.json").read_text())
    name = provenance["cluster_name"]
    assert asked[-2:] == [f"create {name}", f"delete {name}"] and provenance["status"] == "passed"

    def option(flag: str) -> str | None:  # a worker's pytest options
        return together[together.index(flag) + 1] if flag in together else None

    chosen = chosen_cluster(option)
    assert chosen == ChosenCluster(fourth_kind, None)  # re-attached to, never made again
    worker = reattached(fourth_kind, Path(str(option("--kubeconfig"))), name, option, run_dir / "run.json")
    assert worker.origin() == {"cluster": "stand-in", "cluster_name": name, "context": name}
    assert worker.goes_with_the_run and not worker.created


@pytest.mark.usefixtures("no_api_server")
def test_the_node_shutdown_probes_get_a_second_cluster_whose_node_shuts_down(
    fourth_kind: StandInClusters, tmp_path: Path
) -> None:
    runnable = fourth_kind.resolve(Request(version=Release.parse("1.27.3")), print)
    config = SimpleNamespace(stash=pytest.Stash(), getoption={"--keep-cluster": False}.get)
    config.stash[CLUSTER] = ChosenCluster(fourth_kind, runnable)
    run = Run.start(tmp_path)
    with _cluster(config, run, shutdown=True, failed=lambda: False) as target:  # type: ignore[arg-type]
        assert target.transport.node_shutdown("stand-in-node", True) == {"node": "stand-in-node"}
    shutdown_cluster = json.loads(run.path("run.json").read_text())["shutdown_cluster"]
    assert shutdown_cluster["cluster_name"].endswith("-gns") and shutdown_cluster["cluster_deleted"] is True


@pytest.mark.usefixtures("fourth_kind")
def test_make_clean_finds_its_leftovers(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli.main(["clean", "--cluster", "stand-in"]) == 0
    assert capsys.readouterr().out.splitlines() == ["stand-in clusters removed: plp-stand-in-abcd"]


def stand_in_record(version: str, observed: str) -> dict[str, Any]:
    """A probe record of a recording made on a stand-in cluster, as the reports read it."""
    verdict = {"claim": "pod-deadline.status", "status": "pass", "observed": observed, "server_version": version}
    return {
        "probe": "test_active_deadline.py::test_pod_deadline",
        "family": "active_deadline",
        "server_version": version,
        "transport": "replay",
        "recording_origin": {"kind": "live", "cluster": "stand-in", "cluster_name": "plp-stand-in-abcd", "file": "f"},
        "verdicts": [verdict],
    }


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
    assert cli.main(["matrix", "--cluster", "stand-in", "--versions", "1.27.3", "--run-dir", str(tmp_path)]) == 0
    assert started[0][3:] == ["probe", "--version", "1.27.3", "--cluster", "stand-in", "--run-dir", started[0][-1]]
    (record,) = tmp_path.glob("matrix-*/matrix.json")
    assert json.loads(record.read_text())["cluster"] == "stand-in"

    monkeypatch.setattr(
        "harness.doors.commands.version_axis.run_through_interrupt", lambda command: 0 if "1.27.3" in command else 1
    )
    monkeypatch.setattr("harness.doors.commands.version_axis.selection_problem", lambda probe, run_dir: None)
    bisect = ["bisect", "--cluster", "stand-in", "--probe", "x", "--good", "1.27.3", "--bad", "1.27.4"]
    assert cli.main([*bisect, "--run-dir", str(tmp_path)]) == 0
    assert "first bad: 1.27.4 (last good: 1.27.3)" in capsys.readouterr().out


@pytest.mark.usefixtures("fourth_kind")
def test_a_runtime_after_a_version_is_refused_by_a_kind_that_runs_each_release_on_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(matrix, "run_through_interrupt", lambda command, log=None: pytest.fail("a probe run started"))
    versions = "1.27.3 1.27.3:containerd=2.3.4"
    assert cli.main(["matrix", "--cluster", "stand-in", "--versions", versions, "--run-dir", str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        "error: bad input: VERSIONS entry 1.27.3:containerd=2.3.4: CLUSTER=stand-in runs each release on its own "
        "runtime; give the version alone"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.usefixtures("fourth_kind")
def test_make_radar_probes_its_pre_release_beside_its_own_newest_release(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def probe_run(command: list[str], log: object) -> int:
        assert command[3:7] == ["probe", "--version", "1.38.0-alpha.0", "--cluster"] and "stand-in" in command
        records = Path(command[command.index("--run-dir") + 1]) / "20260101-000000-abcd" / "probes"
        records.mkdir(parents=True)
        (records / "p.json").write_text(json.dumps(stand_in_record("v1.38.0-alpha.0", "Failed")))
        return 0

    monkeypatch.setattr(radar_command, "run_through_interrupt", probe_run)
    args = argparse.Namespace(cluster="stand-in", source="auto", baseline="", fresh_baseline=False, tries=3)
    args.probe, args.run_dir = "", str(tmp_path / "runs")
    own, other = stand_in_record("v1.37.1", "DeadlineExceeded"), stand_in_record("v1.37.2", "Failed")
    other["recording_origin"]["cluster"] = "local"
    steps = dataclasses.replace(
        radar_command.release_steps(args, tmp_path / "tools"),
        listed=lambda: ["v1.37.2"],
        served=lambda asked: {"v1.38.0-alpha.0"} & set(asked),
        shipped=lambda: [own, other],
    )
    assert radar_command.run_radar(args, steps) == 1
    out = capsys.readouterr().out
    assert "v1.38.0-alpha.0 beside v1.37.1" in out  # its own newest release, not the other kind's newer one
    assert 'pod-deadline.status (test_active_deadline.py::test_pod_deadline): pass "DeadlineExceeded" -> pass' in out


def test_the_reports_read_its_recordings_origin_as_they_read_any(tmp_path: Path) -> None:
    record = stand_in_record("v1.27.3", "Failed")
    assert provider_of(record) == "stand-in"
    observed = coverage.observed_in([record])
    (run,) = observed.runs[("active_deadline", "pod-deadline.status")]
    assert coverage_words.runs_text([run]) == "stand-in 1.27.3"
    seen = upgrade_compare.live_observations([record])
    assert [s.status for s in seen[("pod-deadline.status", "1.27.3")]] == ["fail"]  # judged as any record is
    assert list(upgrade_compare.live_runtimes([record])) == ["1.27.3"]
    records = tmp_path / "runs" / "20260101-000000-abcd" / "probes"
    records.mkdir(parents=True)
    (records / "p.json").write_text(json.dumps(record))
    assert cli.main(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "report")]) == 0
    assert "v1.27.3" in (tmp_path / "report" / "report.md").read_text()


@pytest.mark.usefixtures("fourth_kind")
def test_a_claim_bisection_records_the_checkout_it_started_from_and_its_times(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The record names the suite commit read when the bisection began (the checkout may move during its builds),
    its wall time, each tried release's probe time and the builds ahead the search went past."""
    claim = "eviction.job-outcome"
    values = {"1.27.3": "Failed", "1.27.4": "Complete", "1.27.5": "Complete"}

    checkout = {"suite_commit": "started-here"}

    def probe_run(command: list[str], log: object = None) -> int:
        checkout["suite_commit"] = "moved-on"  # a commit made in the checkout while the bisection runs
        version = command[command.index("--version") + 1]
        probes = Path(command[command.index("--run-dir") + 1]) / "20260101-000000-abcd" / "probes"
        probes.mkdir(parents=True)
        verdict = {"claim": claim, "observed": values[version], "status": "pass"}
        (probes / "p.json").write_text(json.dumps({"verdicts": [verdict]}))
        return 0

    monkeypatch.setattr("harness.doors.commands.version_axis.suite_version", lambda: dict(checkout))
    monkeypatch.setattr("harness.doors.commands.version_axis.run_through_interrupt", probe_run)
    monkeypatch.setattr("harness.doors.commands.version_axis.selection_problem", lambda probe, run_dir: None)
    bisect = ["bisect", "--cluster", "stand-in", "--probe", "x", "--claim", claim]
    bisect += ["--good", "1.27.3", "--bad", "1.27.5"]
    records = tmp_path / "bisections"
    assert cli.main([*bisect, "--run-dir", str(tmp_path), "--record-dir", str(records), "--name", "n"]) == 0
    record = json.loads((records / "n.json").read_text())
    assert record["first_bad"] == "1.27.4" and record["ran"]["suite_commit"] == "started-here"
    assert record["ran"]["wall_s"] >= 0 and record["ran"]["builds_stopped"] == []
    assert all(t["probe_s"] >= 0 for t in record["tried"]) and len(record["tried"]) == 3
