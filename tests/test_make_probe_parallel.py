"""`make probe PARALLEL=2`'s kind path end to end, as a user runs it: `python -m harness probe --parallel 2` in a
child process, with the stand-ins of tests/test_make_probe.py for kind, docker and the API server with its kubelet.

The run is slow (the harness, two pytest runs, pytest-xdist workers and the probe's wait, one after another), so
it is made once, by a module-scoped fixture: under pytest-xdist this module is a unit of its own
(tests/conftest.py), which runs beside tests/test_make_probe.py's runs instead of after them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.base.versions import Release
from tests.test_make_probe import StandInRun, probe_with_stand_ins

pytestmark = pytest.mark.mostly_waits  # on the stand-in probes' grace periods

# A probe its workers run (one not marked alone) that the stand-in API server can play: its pod ignores SIGTERM and,
# with no finalizer to hold it, is gone once Failed
UNMARKED_POD = "test_pod_without_finalizer_ignoring_sigterm"


@pytest.fixture(scope="module")
def parallel_run(tmp_path_factory: pytest.TempPathFactory) -> StandInRun:
    """`make probe` on stand-ins with --parallel 2, in a runs/ directory of its own, on a probe its workers run
    (one not marked alone)."""
    where = tmp_path_factory.mktemp("parallel")
    return StandInRun(*probe_with_stand_ins(where, "--parallel", "2", probe=UNMARKED_POD, finalizer=False))


def test_parallel_probes_share_one_cluster_that_the_cli_creates_and_deletes(parallel_run: StandInRun) -> None:
    from tests import fake_tools

    run = parallel_run
    run.check_passed()
    stdout = run.proc.stdout
    assert " -n 2" in stdout and "--kind-nodes" in stdout and "-m not node_shutdown" in stdout
    # PROBE chose no node-shutdown probe: no pytest is started for them (nor their cluster); one is when it
    # does, before this run's cluster (harness/doors/commands/probe.py run_parallel)
    assert "-m node_shutdown" not in stdout and "shutdown-probes.log" not in stdout
    kind_calls = [c for c in fake_tools.calls(run.log) if c[0] != "docker"]
    assert [c[:2] for c in kind_calls if c[:2] in (["create", "cluster"], ["delete", "cluster"])] == [
        ["create", "cluster"],
        ["delete", "cluster"],
    ]
    assert "wall " in stdout and "longest probe" in stdout
    (run_dir,) = (run.log.parent / "runs").iterdir()
    provenance = json.loads((run_dir / "run.json").read_text())
    assert set(provenance["timing"]) == {"wall_s", "cluster_startup_s", "longest_probe_s", "ratio"} | {
        "workers", "workers_why", "planned_makespan_s"
    }  # fmt: skip
    assert provenance["timing"]["workers"] == 2 and "as asked" in provenance["timing"]["workers_why"]
    # the pytest-xdist controller handed out the plan (harness/doors/schedule.py) and measured the probe whole
    assert list(json.loads((run_dir / "schedule.json").read_text())["measured_s"]) == [
        f"probes/phase_after_deletion/test_phase_after_deletion.py::{UNMARKED_POD}"
    ]
    assert provenance["status"] == "passed"
    # its workers were started with the gate, which the CLI opened once the cluster was ready
    # (harness/doors/cluster_gate.py)
    assert "--cluster-gate" in stdout and (run_dir / "cluster-gate").read_text() == "ready"
    record = json.loads(next((run_dir / "probes").iterdir()).read_text())  # a worker's, on the CLI's cluster
    created = next(c for c in kind_calls if c[:2] == ["create", "cluster"])
    assert record["provenance"]["context"] == "kind-" + created[created.index("--name") + 1]
    assert {v["claim"]: v["status"] for v in record["verdicts"]} == {"no-finalizer.sigterm-ignored.phases": "pass"}


def test_a_run_of_node_shutdown_probes_alone_makes_no_cluster_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PROBE=node_shutdown on kind: their pytest makes their cluster; a main cluster would only be made and deleted
    (seen live on v1.28.5: 54 s of start-up for no probe)."""
    import argparse
    import subprocess

    from harness.clusters import lifecycle
    from harness.clusters.kind.clusters import KindClusters
    from harness.clusters.kind.images import known_images
    from harness.clusters.kinds import Runnable
    from harness.doors import schedule
    from harness.doors.commands import probe as probe_command

    def no_cluster(*args: object, **kwargs: object) -> None:
        raise AssertionError("a main cluster was made")

    empty = schedule.Plan((), {}, (), schedule.SLACK_S, None, True)
    monkeypatch.setattr(lifecycle, "cluster_life", no_cluster)
    monkeypatch.setattr(probe_command, "plan_workers", lambda *a: (empty, tmp_path / "schedule.json", True, []))
    log = tmp_path / "shutdown-probes.log"
    log.write_text("2 passed\n")
    started = subprocess.Popen(["true"])
    monkeypatch.setattr(probe_command, "_start_shutdown_probes", lambda args, run, runnable: (started, log))
    args = argparse.Namespace(run_dir=str(tmp_path / "runs"), parallel="auto", kind_bin="kind", keep_cluster=False)
    image = known_images()[-1]
    facts = {"image": image.reference, "kind_release": image.kind_release or "", "kind_bin": "kind"}
    runnable = Runnable("kind", Release(image.kubernetes), facts).with_facts(
        kind_line="kind v0.20.0 go1.20.4 linux/amd64"
    )
    assert probe_command.run_parallel(args, KindClusters(), runnable) == 0


@pytest.mark.parametrize(("parallel_exit", "alone_exit", "run_exit"), [(0, 0, 0), (1, 0, 1), (0, 1, 1), (5, 0, 0)])
def test_the_probes_marked_alone_run_after_the_others_have_ended_one_at_a_time_on_the_same_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parallel_exit: int, alone_exit: int, run_exit: int
) -> None:
    """Their timing claims move when many probes share the machine (docs/parallel-load.md): their pytest starts
    once the parallel probes' has ended, without workers, on the cluster the run made; the run's exit code has
    both (5, no probe left for the workers: the alone probes' own)."""
    import argparse
    import contextlib
    import subprocess
    import sys
    from collections.abc import Iterator

    from harness.clusters import lifecycle
    from harness.clusters.kind.clusters import KindClusters
    from harness.clusters.kind.images import known_images
    from harness.clusters.kinds import Runnable
    from harness.doors import schedule
    from harness.doors.commands import probe as probe_command

    @contextlib.contextmanager
    def cluster(*args: object, **kwargs: object) -> Iterator[None]:
        yield

    started: list[tuple[list[str], list[int | None]]] = []  # each command, and the exit codes of those before it
    real_popen = subprocess.Popen

    def popen(command: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        if "pytest" not in command:  # (not a probes' pytest: run as it is)
            return real_popen(command, **kwargs)
        exit_code = alone_exit if "alone and not node_shutdown" in command else parallel_exit
        started.append((command, [process.poll() for process in processes]))
        processes.append(real_popen([sys.executable, "-c", f"raise SystemExit({exit_code})"]))
        return processes[-1]

    processes: list[subprocess.Popen[bytes]] = []
    items = ["probes/t.py::test_together"]
    plan = schedule.plan_for(items, {"t.py::test_together": 10.0}, 1)
    alone = ["probes/t.py::test_alone"]
    monkeypatch.setattr(lifecycle, "cluster_life", cluster)
    monkeypatch.setattr(probe_command, "plan_workers", lambda *a: (plan, tmp_path / "schedule.json", False, alone))
    monkeypatch.setattr(subprocess, "Popen", popen)
    args = argparse.Namespace(
        run_dir=str(tmp_path / "runs"), parallel="auto", kind_bin="kind", keep_cluster=False, repeat=1, probe=""
    )
    args.restart_apiserver_after, args.pytest_args = None, []
    image = known_images()[-1]
    facts = {"image": image.reference, "kind_release": image.kind_release or "", "kind_bin": "kind"}
    runnable = Runnable("kind", Release(image.kubernetes), facts).with_facts(
        kind_line="kind v0.20.0 go1.20.4 linux/amd64"
    )
    assert probe_command.run_parallel(args, KindClusters(), runnable) == run_exit
    (together, before_together), (by_itself, before_alone) = started
    assert "not node_shutdown and not alone" in together and "-n" in together
    assert before_together == [] and before_alone == [parallel_exit]  # started once the other pytest had ended
    assert "alone and not node_shutdown" in by_itself and "-n" not in by_itself
    assert by_itself[by_itself.index("--context") + 1] == together[together.index("--context") + 1]  # same cluster
