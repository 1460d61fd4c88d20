"""PARALLEL=auto (harness/doors/schedule.py): durations, longest-first order, packing, the worker count, the hand-out
to pytest-xdist workers, and the PARALLEL values make probe takes and refuses."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.base.versions import Release
from harness.clusters.registry import KINDS, kind_for
from harness.doors import cli, schedule, selection
from harness.doors.commands import probe as probe_command
from harness.doors.commands import refusal
from harness.doors.schedule import choose_workers, known_durations, longest_first, pack, plan_for, probe_of
from tests.pytest_here import pytest_here

REPO = Path(__file__).resolve().parent.parent


def durations(**seconds: float) -> dict[str, float]:
    """Known durations of probes `t.py::<name>`."""
    return {f"t.py::{name}": value for name, value in seconds.items()}


def items(*names: str) -> list[str]:
    return [f"probes/t.py::{name}" for name in names]


def names(share: tuple[str, ...] | list[str]) -> list[str]:
    return [probe_of(item).split("::")[1] for item in share]


# ----------------------------------------------------------------------------------------- planning


def test_an_item_is_known_by_its_probe_whatever_its_directory_and_parameters() -> None:
    assert probe_of("probes/test_x.py::test_y[repeat2]") == "test_x.py::test_y"
    assert probe_of("test_x.py::test_y") == "test_x.py::test_y"


def test_longest_first_puts_probes_without_a_duration_first_and_keeps_ties_in_their_order() -> None:
    known = durations(short=5, long=60, mid_a=30, mid_b=30)
    ordered = longest_first(items("short", "mid_a", "new", "long", "mid_b"), known)
    assert names(ordered) == ["new", "long", "mid_a", "mid_b", "short"]


def test_packing_gives_each_next_longest_to_the_least_loaded_worker() -> None:
    # round robin would pair 60 with 25 and 30 with 5 (85 s); LPT pairs the long one with nothing
    assert pack([60, 30, 30, 25, 5], 3) == [[0], [1, 3], [2, 4]]
    assert pack([60, 30, 30, 25, 5], 2) == [[0, 3], [1, 2, 4]]  # equal loads (60, 60): the lower worker
    assert pack([], 2) == [[], []]


def test_auto_takes_the_fewest_workers_that_end_within_the_longest_probe_and_the_slack() -> None:
    known = durations(a=60, b=30, c=30, d=25, e=5)
    plan = choose_workers(items("e", "d", "c", "b", "a"), known, slack_s=5)
    assert plan.workers == 3
    assert [names(share) for share in plan.shares] == [["a"], ["c", "d"], ["b", "e"]]  # c before b: as given
    assert plan.makespan_s == 60 and plan.one_fewer_s == 85  # 2 workers: 60+25 on one
    assert "3 workers for 5 probes" in plan.why() and "planned 60 s (2 would take 85 s)" in plan.why()
    assert plan.to_json()["planned_makespan_s"] == 60


def test_a_larger_slack_packs_more_probes_on_fewer_workers() -> None:
    known = durations(a=60, b=30, c=30, d=25, e=5)
    assert choose_workers(items(*"abcde"), known, slack_s=25).workers == 2


def test_a_probe_without_a_known_duration_counts_as_the_longest() -> None:
    known = durations(a=60, b=10, c=10)
    plan = choose_workers(items("a", "b", "c", "new"), known, slack_s=5)
    assert plan.seconds["probes/t.py::new"] == 60 and plan.unknown == ("probes/t.py::new",)
    assert [names(share) for share in plan.shares] == [["new"], ["a"], ["b", "c"]]
    assert "1 without a known duration" in plan.why()


def test_with_no_duration_known_every_probe_gets_its_own_worker() -> None:
    plan = choose_workers(items("a", "b", "c"), {}, slack_s=5)
    assert plan.workers == 3 and plan.makespan_s == schedule.UNKNOWN_S


def test_the_worker_count_is_capped_by_the_number_of_probes() -> None:
    assert choose_workers(items("a", "b"), durations(a=60, b=60), slack_s=5).workers == 2
    assert choose_workers(items("a"), durations(a=60)).workers == 1
    assert choose_workers([], {}).workers == 1


def test_repeats_of_a_probe_get_no_more_workers_than_the_probes_have() -> None:
    repeated = [f"{item}[repeat{n}]" for item in items("a", "b") for n in (1, 2, 3)]
    plan = choose_workers(repeated, durations(a=60, b=50), slack_s=5)
    assert plan.workers == 2 and plan.makespan_s == 170  # 60+60+50 | 60+50+50
    assert plan.why().startswith("2 workers for 6 probes: one per probe, the most; planned 170 s (1 would take 330 s)")


def test_a_given_worker_count_is_packed_as_asked() -> None:
    plan = plan_for(items("a", "b", "c"), durations(a=1, b=2, c=3), 5)
    assert plan.workers == 5 and [names(s) for s in plan.shares if s] == [["c"], ["b"], ["a"]]
    assert "as asked" in plan.why()


# ---------------------------------------------------------------------------------------- durations


def write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def recording(probe: str, kind: str, start: float, end: float) -> dict[str, Any]:
    return {
        "probe": probe,
        "origin": {"kind": kind},
        "interactions": [
            {"call": "server_version", "t_start": start, "t_end": start + 0.1},
            {"call": "watch", "t_start": start + 0.2, "closed_at": end},
        ],
    }


def test_durations_are_the_longest_of_live_recordings_and_records_plus_the_namespace_and_measured_items(
    tmp_path: Path,
) -> None:
    recordings, runs = tmp_path / "recordings", tmp_path / "runs"
    write(recordings / "f" / "a-live.json", recording("t.py::a", "live", 30.0, 50.0))
    write(recordings / "f" / "a-live2.json", recording("t.py::a", "live", 2.0, 12.0))  # shorter: the longest counts
    write(recordings / "f" / "b-made.json", recording("t.py::b", "unknown", 0.0, 99.0))  # not live: not measured
    write(recordings / "f" / "c-live.json", recording("t.py::c", "live", 0.0, 40.0))
    write(runs / "r1" / "probes" / "b.json", {"probe": "t.py::b", "transport": "live", "duration_s": 7.5})
    write(runs / "r1" / "probes" / "d.json", {"probe": "t.py::d", "transport": "replay", "duration_s": 0.2})
    measured = {"probes/t.py::c[repeat1]": 48.0, "probes/t.py::a": 0.3}  # a skipped at once: not shorter for it
    write(runs / "r2" / "schedule.json", {"durations_s": {}, "measured_s": measured})
    (runs / "r3" / "probes").mkdir(parents=True)
    (runs / "r3" / "probes" / "half-written.json").write_text("{")
    ns = schedule.NAMESPACE_S
    assert known_durations(recordings.glob("*/*.json"), runs) == {
        "t.py::a": 20.0 + ns,
        "t.py::b": 7.5 + ns,
        "t.py::c": 48.0,
    }


def test_a_local_run_is_planned_from_what_local_clusters_measured_where_they_did(tmp_path: Path) -> None:
    """The StatefulSet probe took 96 s on kind and 59 s on a local cluster: a local run planned from kind's
    figure got 17 workers for a 100 s makespan."""
    recordings, runs = tmp_path / "recordings", tmp_path / "runs"
    on_kind = recording("t.py::sts", "live", 0.0, 91.0)
    on_kind["origin"]["cluster"] = "kind (created by make probe)"
    on_local = recording("t.py::sts", "live", 0.0, 54.0)
    on_local["origin"]["cluster"] = "local"
    only_kind = recording("t.py::gns", "live", 0.0, 150.0)
    only_kind["origin"]["cluster"] = "kind"
    for name, data in (("a", on_kind), ("b", on_local), ("c", only_kind)):
        write(recordings / "f" / f"{name}.json", data)
    write(runs / "r1" / "schedule.json", {"durations_s": {}, "measured_s": {"probes/t.py::sts": 70.0}})
    write(runs / "r1" / "run.json", {"cluster": "local"})
    ns = schedule.NAMESPACE_S
    local = known_durations(recordings.glob("*/*.json"), runs, "local")
    assert local == {"t.py::sts": 70.0, "t.py::gns": 150.0 + ns}  # local's own; kind's where local has none
    assert known_durations(recordings.glob("*/*.json"), runs, "kind") == {
        "t.py::sts": 91.0 + ns,
        "t.py::gns": 150.0 + ns,
    }
    assert known_durations(recordings.glob("*/*.json"), runs)["t.py::sts"] == 91.0 + ns  # no cluster: the longest


def test_a_run_is_planned_from_its_own_minor_where_that_was_measured(tmp_path: Path) -> None:
    """On local clusters the StatefulSet probe took 89-91 s on 1.21-1.24 and 29 s on 1.37.0."""
    recordings = tmp_path / "recordings"
    for version, seconds in (("v1.24.17", 90.0), ("v1.37.0", 29.0)):
        data = recording("t.py::sts", "live", 0.0, seconds)
        data["origin"]["cluster"] = "local"
        data["interactions"][0]["response"] = {"gitVersion": version}  # what the server said it was
        write(recordings / "f" / f"sts--{version}-live-local.json", data)
    ns = schedule.NAMESPACE_S
    found = known_durations(recordings.glob("*/*.json"), tmp_path / "runs", "local", "1.37")
    assert found == {"t.py::sts": 29.0 + ns}
    assert known_durations(recordings.glob("*/*.json"), tmp_path / "runs", "local", "1.31") == {
        "t.py::sts": 90.0 + ns  # none of 1.31: the longest on local clusters
    }


def test_a_recording_as_written_is_read_for_its_times_as_if_parsed_whole(tmp_path: Path) -> None:
    """Planning reads a recording Recording.write laid out off its text, without its events: what it reads is what
    the file parsed whole says, for every family's recordings (a sample) and one whose events hold keys named as
    the calls' times; a file cut short, or laid out otherwise, is parsed whole (one cut short is not JSON)."""
    from harness.core.transport_recording import Recording

    def both_ways(text: str) -> tuple[schedule.RecordedTimes, schedule.RecordedTimes]:
        return schedule.RecordedTimes.of(text), schedule.RecordedTimes.parsed(json.loads(text))

    shipped = sorted((REPO / "probes").glob("*/recordings/*.json"))
    sample = [path for family in {p.parent for p in shipped} for path in sorted(family.glob("*.json"))[:4]]
    for path in sample:
        read, parsed = both_ways(path.read_text())
        assert read == parsed and read.version and read.duration(), path
    nested = {"t_start": 1.0, "t_end": 900.0, "closed_at": 901.0, "call": "server_version"}  # an object's own keys
    steps = [
        {"call": "list_objects", "request": {"kind": "Pod"}, "t_start": 3.5, "t_end": 3.75, "response": nested},
        {"call": "server_version", "request": {}, "t_start": 4.0, "t_end": 4.25, "response": {"gitVersion": "v1.2.3"}},
        {"call": "watch", "request": {}, "t_start": 5, "events": [{"t": 6.0, "object": nested}], "closed_at": 9.5},
        {"call": "delete", "request": {}, "t_start": 7.0, "t_end": None},
    ]
    Recording("t.py::a", {"kind": "live", "cluster": "kind"}, steps).write(tmp_path / "a.json")
    text = (tmp_path / "a.json").read_text()
    read, parsed = both_ways(text)
    assert read == parsed == schedule.RecordedTimes("t.py::a", {"kind": "live", "cluster": "kind"}, "v1.2.3", 3.5, 9.5)
    assert schedule.RecordedTimes.of(json.dumps(json.loads(text))) == parsed  # laid out otherwise: parsed whole
    with pytest.raises(json.JSONDecodeError):
        schedule.RecordedTimes.of(text[: len(text) // 2])


def test_the_committed_live_recordings_give_the_probes_durations() -> None:
    """The 26 single-node probes and the two node-shutdown ones had live recordings when this was written. The Job
    with retries cannot end before its 37 s deadline: its newest recording (v1.31.0, run alone) took 43 s, the
    matrix's about 60 s under load."""
    known = known_durations((REPO / "probes").glob("*/recordings/*.json"), REPO / "no-runs-here")
    probes = {
        f"{path.name}::{line.split('def ', 1)[1].split('(', 1)[0]}"
        for path in (REPO / "probes").glob("*/test_*.py")
        for line in path.read_text().splitlines()
        if line.startswith("def test_")
    }
    assert len(probes & set(known)) >= 28
    assert known["test_active_deadline.py::test_job_deadline_during_retry"] >= 37 + schedule.NAMESPACE_S


def test_a_schedule_file_without_durations_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"durations_s": {"t.py::a": "long"}}')
    with pytest.raises(ValueError, match="no durations_s object"):
        schedule.read_durations(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="cannot read it as JSON"):
        schedule.read_durations(tmp_path / "missing.json")


# --------------------------------------------------------------------------- the hand-out, under xdist

DUMMY_TESTS = """
import os, time
from pathlib import Path

def ran(name, seconds):
    time.sleep(seconds)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with (Path(os.environ["RAN_LOG"]) / worker).open("a") as log:
        log.write(name + "\\n")

def test_a(): ran("a", 0.1)
def test_b(): ran("b", 0.6)
def test_c(): ran("c", 0.3)
def test_d(): ran("d", 0.2)
def test_e(): ran("e", 0.1)
"""


def run_dummies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> dict[str, list[str]]:
    """pytest on five sleeping dummy tests with the suite's plugin; which tests each worker ran, in order."""
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["harness.doors.pytest_plugin"]\n')
    (tmp_path / "test_dummy.py").write_text(DUMMY_TESTS)
    log = tmp_path / "ran"
    log.mkdir()
    outside = {"RAN_LOG": str(log), "PYTEST_XDIST_WORKER": None}  # not this worker's name, if it is one
    proc = pytest_here(
        "test_dummy.py",
        "-q",
        *args,
        "--run-dir",
        str(tmp_path / "runs"),
        monkeypatch=monkeypatch,
        env=outside,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {worker.name: worker.read_text().split() for worker in log.iterdir()}


# b 6 s, c 3 s, e 1 s, a 0.5 s; d unknown (the longest: 6 s). Longest first: d, b, c, e, a.
# Two workers: d | b, then c -> the first (6+3), e -> the second (6+1), a -> the second (7.5).
SCHEDULE = {"durations_s": {"test_dummy.py::test_b": 6, "test_dummy.py::test_c": 3, "test_dummy.py::test_e": 1,
                            "test_dummy.py::test_a": 0.5}}  # fmt: skip


def test_two_xdist_workers_get_the_planned_shares_in_longest_first_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """xdist's own `load` would send the first worker d and b (the two longest) before anything else."""
    (tmp_path / "schedule.json").write_text(json.dumps(SCHEDULE))
    ran = run_dummies(tmp_path, monkeypatch, "-n", "2", "--schedule", str(tmp_path / "schedule.json"))
    assert sorted(ran.values()) == [["b", "e", "a"], ["d", "c"]]
    measured = json.loads((tmp_path / "schedule.json").read_text())["measured_s"]
    assert set(measured) == {f"test_dummy.py::test_{name}" for name in "abcde"}
    assert measured["test_dummy.py::test_b"] >= 0.6  # the worker's whole item, sleep included


def test_without_xdist_the_schedule_orders_the_run_longest_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "schedule.json").write_text(json.dumps(SCHEDULE))
    assert run_dummies(tmp_path, monkeypatch, "--schedule", str(tmp_path / "schedule.json")) == {"main": list("dbcea")}


# ------------------------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize(("given", "taken"), [("auto", "auto"), ("AUTO", "auto"), ("", ""), ("4", 4)])
def test_parallel_takes_a_count_auto_or_nothing(given: str, taken: int | str) -> None:
    assert cli.parse_args(["probe", "--parallel", given]).parallel == taken
    assert cli.parse_args(["probe"]).parallel == ""


@pytest.mark.parametrize("given", ["0", "many", "-3", "2.5"])
def test_bad_parallel_is_refused_as_bad_input(given: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["probe", "--cluster", "local", "--version", "1.27.3", "--parallel", given])
    assert exited.value.code == refusal.BAD_INPUT
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert line.startswith(
        "error: bad input: argument --parallel: PARALLEL must be a whole number of 1 or more or auto"
    )
    assert line.endswith(f"not {given!r}")


def test_make_probe_refuses_parallel_many_before_anything_starts() -> None:
    make = ["make", "--no-print-directory", "STAMP=", f"PY={sys.executable}", "probe"]
    proc = subprocess.run(
        [*make, "CLUSTER=local", "VERSION=1.27.3", "PARALLEL=many"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 2
    assert (
        "error: bad input: argument --parallel: PARALLEL must be a whole number of 1 or more or auto, not 'many'"
        in (proc.stderr)
    )
    assert "Traceback" not in proc.stderr


def test_auto_on_an_existing_cluster_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    code = cli.main(["probe", "--kubeconfig", str(tmp_path / "kubeconfig"), "--context", "c", "--parallel", "auto"])
    assert code == refusal.BAD_INPUT
    assert "error: bad input: PARALLEL runs the probes on a cluster make probe creates" in capsys.readouterr().err


def started_with(monkeypatch: pytest.MonkeyPatch, argv: list[str], tmp_path: Path) -> Any:
    """What main() starts after its checks: ("parallel", PARALLEL) or ("serial", the pytest command line)."""
    for kind in KINDS:  # the host checked and the runnable made ready: stood in
        monkeypatch.setattr(type(kind), "prepare", lambda self, runnable, say, warn: runnable.with_facts())
    monkeypatch.setattr(probe_command, "run_parallel", lambda args, kind, runnable, chosen: ("parallel", args.parallel))

    def execv(path: str, command: list[str]) -> None:
        raise SystemExit(("serial", command))

    monkeypatch.setattr(os, "execv", execv)
    try:
        return cli.main([*argv, "--run-dir", str(tmp_path)])
    except SystemExit as exited:
        return exited.code


def test_auto_is_the_default_on_every_cluster_make_probe_makes_and_one_asks_for_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for cluster in (["--cluster", "local", "--version", "1.27.3"], ["--version", "1.27"]):  # local, kind
        assert started_with(monkeypatch, ["probe", *cluster], tmp_path) == ("parallel", "auto")
        one_at_a_time = started_with(monkeypatch, ["probe", *cluster, "--parallel", "1"], tmp_path)
        assert one_at_a_time[0] == "serial" and "-n" not in one_at_a_time[1]


def test_the_cli_plans_from_the_selected_probes_and_writes_the_schedule(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    asked: list[tuple[str, list[str]]] = []

    def select(expression: str, run_dir: str, timeout: float = 120, extra: Any = ()) -> Any:
        asked.append((expression, list(extra)))
        chosen = [*items("a", "b", "c", "d"), "probes/g.py::gns"]
        return selection.Selection(0, chosen, node_shutdown=["probes/g.py::gns"], alone=items("d"))

    monkeypatch.setattr(selection, "select", select)
    clusters: list[str] = []

    def known(recordings: Any, run_dir: Path, cluster: str, minor: str) -> dict[str, float]:
        clusters.append(f"{cluster} {minor}")
        return durations(a=60, b=30, c=25)

    monkeypatch.setattr(schedule, "known_durations", known)
    args = argparse.Namespace(probe="x", run_dir=str(tmp_path), repeat=2, parallel="auto")
    plan, written, with_shutdown_probes, alone = probe_command.plan_workers(
        args, tmp_path, "local", Release.parse("1.37.0")
    )
    assert clusters == ["local 1.37"]  # durations measured on local clusters of that minor count first
    assert asked == [("x", ["--repeat", "2"])]  # one collection: the node-shutdown and alone probes are said apart
    assert plan.workers == 2 and written == tmp_path / "schedule.json" and with_shutdown_probes
    planned = {item for share in plan.shares for item in share}
    assert "probes/g.py::gns" not in planned  # they run on their own cluster
    assert alone == items("d") and not planned & set(alone)  # run after the others, one at a time
    saved = json.loads(written.read_text())
    assert saved["durations_s"] == durations(a=60, b=30, c=25) and saved["plan"]["workers"] == 2
    assert schedule.read_durations(written) == durations(a=60, b=30, c=25)
    args.parallel = 3
    assert probe_command.plan_workers(args, tmp_path, "kind")[0].workers == 3
    asked.clear()
    collected_by_the_input_check = selection.Selection(0, items("a", "b"))
    plan = probe_command.plan_workers(args, tmp_path, "kind", None, collected_by_the_input_check)[0]
    assert asked == [] and {item for share in plan.shares for item in share} == set(items("a", "b"))


def test_make_probe_with_probe_and_parallel_collects_the_selection_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The input check's collection (the refusal of a PROBE that selects nothing) is the one the plan is made from."""
    collections: list[str] = []

    def select(expression: str, run_dir: str, timeout: float = 120, extra: Any = ()) -> Any:
        collections.append(expression)
        return selection.Selection(0, items("a"))

    monkeypatch.setattr(selection, "select", select)
    planned_from: list[object] = []

    def run_parallel(args: Any, kind: Any, runnable: Any, chosen: Any = None) -> int:
        planned_from.append(probe_command.plan_workers(args, tmp_path, kind.name, None, chosen)[0])
        return 0

    monkeypatch.setattr(probe_command, "run_parallel", run_parallel)
    monkeypatch.setattr(schedule, "known_durations", lambda *a: durations(a=10))
    argv = ["probe", "--version", "1.27.16", "--cluster", "kind", "--probe", "x", "--parallel", "2"]
    args = cli.parse_args([*argv, "--run-dir", str(tmp_path)])
    kind = type(kind_for("kind", ""))
    monkeypatch.setattr(kind, "prepare", lambda self, runnable, say, warn: runnable)  # nothing installed or built
    assert probe_command.run_probe_command(args) == 0
    assert collections == ["x"] and len(planned_from) == 1


def test_a_probe_is_planned_from_its_three_latest_measurements(tmp_path: Path) -> None:
    """Live on v1.37.0: once closing a watch no longer waited for its next event, the phase probes went from
    28 s to 4-13 s; planned from the longest ever, runs kept 14 workers where 10 would do."""
    runs = tmp_path / "runs"
    history = [("2026-11-26T10:00:00+00:00", 28.0), ("2026-11-26T11:00:00+00:00", 9.0)]
    history += [("2026-11-26T12:00:00+00:00", 0.4), ("2026-11-26T13:00:00+00:00", 8.0)]  # 0.4: skipped at once
    for index, (started, seconds) in enumerate(history):
        write(runs / f"r{index}" / "schedule.json", {"durations_s": {}, "measured_s": {"probes/t.py::a": seconds}})
        write(runs / f"r{index}" / "run.json", {"cluster": "local", "started": started})
    assert known_durations([], runs, "local") == {"t.py::a": 9.0}  # not 28 (older than the 3 latest), not 0.4
