"""The suite's pytest plugin (loaded by conftest.py): options and their checks, collection (replay of recordings,
the longest-first schedule), verdicts and outcomes, the run's summary. Its fixtures (the run, the cluster, the
`probe` handle) are in harness/doors/probe_fixtures.py, which it registers; a cluster's life is
harness/clusters/lifecycle.py's.

A probe function takes the `probe` fixture and is marked `@pytest.mark.probe`; its claim family is the folder
its module is in, probes/<family>/ (harness/base/families.py). Where it runs:
- `--kind-version 1.27` / `--kind-image ...`: on a kind cluster this run creates (deleted afterwards
  unless --keep-cluster / KEEP=1);
- `--local-version 1.27.3`: on a local cluster this run builds (once) and starts (harness/clusters/local/);
- `--kubeconfig F [--context C]`: on an existing cluster (node-level claims are "not observable");
- `--cluster-spec JSON`: on the cluster `make probe` resolved (and readied), of any kind;
- `--replay DIR`: on the recordings in DIR, once per recording of that probe, with no cluster at all (a probe
  without one is skipped by name: its claims rest on the expectations alone, as on a version no cluster ran).
Each kind of cluster declares its own options (harness/clusters/kinds.py); the plugin chooses one kind, once.
Probes selected with none of these are refused as a usage error in one line naming the options (exit 4): a run
that probed nothing never ends green, and a run record says "passed" only when a probe ran and passed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.base import inputs
from harness.base.errors import (
    BAD_INPUT_CLASS,
    INTERRUPTED,
    PREREQUISITE_MISSING_CLASS,
    PREREQUISITE_MISSING_EXIT,
    PrerequisiteMissing,
    one_line,
)
from harness.base.inputs import BadInput
from harness.base.process import sigterm_as_interrupt
from harness.base.run import Run, new_run_id
from harness.clusters.kinds import ClusterKind, Option, Runnable
from harness.clusters.registry import KINDS, asked_kinds, attached_kind, kind_for, kind_named, one_of, options_said
from harness.core.probe import ClaimsUndecided, Probe
from harness.core.transport import Recording
from harness.doors.schedule import PlannedScheduling, longest_first, read_durations
from harness.reports.spread import render as render_spread
from harness.reports.spread import spread_of_run

REPO = Path(__file__).resolve().parents[2]
# The fixtures (run, live_cluster, shutdown_cluster, probe) live beside this plugin, which registers them.
pytest_plugins = ["harness.doors.probe_fixtures"]
REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()
OUTCOMES = pytest.StashKey[dict[str, int]]()  # failed / undecided probe calls of this session
UNDECIDED_OUTCOME = "undecided"
NO_PROBE_RAN = "no probe ran"  # a run record's status when pytest ended green but every probe was skipped
RAN = "ran"  # OUTCOMES: probe calls that ran to a verdict
PROBE_FIXTURE = "probe"  # what makes a test function a probe
RUN = pytest.StashKey[Run]()
# pytest -n N (pytest-xdist) without --run-id: the run id the controller gives its workers, so they share one run
SHARED_RUN_ID = pytest.StashKey[str]()
CLUSTER = pytest.StashKey["ChosenCluster"]()  # the cluster the options chose, resolved
RECORDINGS = pytest.StashKey[dict[str, list[Path]]]()  # --replay: recording files by the probe they are of
DURATIONS = pytest.StashKey[dict[str, float]]()  # --schedule: seconds per probe id (harness/doors/schedule.py)
INTERRUPTED_LINE = pytest.StashKey[str]()  # said last, after pytest's own summary
REFUSED_LINE = pytest.StashKey[str]()  # pytest-xdist's controller: why its workers ran no probe (no cluster)
REFUSED_KEY = "plp_refused"  # the same, in a worker's workeroutput


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pod-lifecycle-probes", "pod-lifecycle probes")
    for option in inputs.SHARED_OPTIONS:  # make probe's too (harness/base/inputs.py); KEEP in the environment: checked
        option.declare(group.addoption, {"--repeat": None})
    for kind in KINDS:  # each kind of cluster its own: --kind-version, --local-version, ...
        kind.declare_options(group.addoption)
    group.addoption(
        "--cluster-spec",
        metavar="JSON",
        help="the cluster make probe resolved and readied (a Runnable, harness/clusters/kinds.py), resolved no more",
    )
    group.addoption(
        "--cluster-gate",
        metavar="FILE",
        help="wait until the process making the --kubeconfig cluster opens this gate (make probe PARALLEL's workers)",
    )
    group.addoption("--run-id", help="share this run's directory (the parallel workers of one make probe)")
    group.addoption(
        "--replay", metavar="PATH", help="run the probes on recordings (a directory or one file) instead of a cluster"
    )
    group.addoption(
        "--schedule",
        metavar="FILE",
        help="run the probes longest first by the durations in FILE, and with -n hand each worker its share of the "
        "longest-first packing (harness/doors/schedule.py; make probe PARALLEL writes it)",
    )


# Probes whose timing claims the suite's own load moves: make probe with PARALLEL runs them after every other
# probe of the run has ended, one at a time, on the same cluster (harness/doors/commands/probe.py run_parallel).
ALONE_MARKER = (
    "alone(why): a probe with a timing claim that many probes at once move past its bound (why: the mechanism); "
    "make probe PARALLEL runs it after the others, one at a time"
)

# --repeat / REPEAT: a whole number of 1 or more (0, negatives and words are refused, not taken as 1)
_repeat_count = inputs.count("--repeat (REPEAT)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", ALONE_MARKER)
    asked = asked_kinds(config.getoption)
    if config.getoption("--replay") and (asked or config.getoption("--cluster-spec")):
        raise pytest.UsageError(f"--replay runs on recordings; it cannot be combined with {one_of(described=False)}")
    if len(asked) > 1:
        raise pytest.UsageError(
            f"choose one cluster: {one_of()}, not {' and '.join(kind.pytest_option for kind in asked)}"
        )
    try:
        _check_inputs(config)
    except BadInput as err:
        raise pytest.UsageError(f"{BAD_INPUT_CLASS}: {err}") from err
    except PrerequisiteMissing as err:  # a cluster the options name cannot be had here: said once, not per probe
        pytest.exit(f"error: {PREREQUISITE_MISSING_CLASS}: {one_line(str(err))}", returncode=PREREQUISITE_MISSING_EXIT)
    # CI cancels with SIGTERM: turned into the same path as Ctrl-C, so fixture teardown (finalizer removal,
    # namespace and cluster deletion) still runs. pytest-timeout uses the signal method for the same reason (its
    # thread method exits without teardown).
    sigterm_as_interrupt()


def _check_inputs(config: pytest.Config) -> None:
    """The options' checks shared with `make probe` (harness/base/inputs.py), and the plugin's own; raises BadInput, or
    PrerequisiteMissing when the cluster they name cannot be had (checked once, by the controller, in seconds)."""
    controller = not hasattr(config, "workerinput")  # a pytest-xdist worker's controller checked the same
    option = config.getoption
    if not option("--kubeconfig") or (attached_kind(option) and not option("--cluster-gate")):
        # (an existing cluster's kubeconfig is checked by its kind; behind the gate, it is written there first)
        inputs.check_existing_cluster(option("--kubeconfig"), option("--context"))
    config.option.keep_cluster = option("--keep-cluster") or inputs.yes_or_no("KEEP", os.environ.get("KEEP"))
    if option("--repeat") is None:
        try:
            config.option.repeat = _repeat_count(os.environ.get("REPEAT") or "1")
        except argparse.ArgumentTypeError as err:
            raise BadInput(str(err)) from err
    if option("--replay"):
        sent = getattr(config, "workerinput", {}).get("plp_recordings")  # a pytest-xdist worker: the controller's
        config.stash[RECORDINGS] = (
            _recordings(Path(option("--replay")))
            if sent is None
            else {probe: [Path(p) for p in paths] for probe, paths in sent.items()}
        )
    if option("--schedule"):
        try:
            config.stash[DURATIONS] = read_durations(Path(option("--schedule")))
        except ValueError as err:
            raise BadInput(str(err)) from err
    inputs.check_run_dir(option("--run-dir"))
    chosen = _chosen_cluster(option)
    inputs.check_apiserver_restart(
        option("--restart-apiserver-after"), chosen is not None and chosen.kind.restarts_apiserver
    )
    if chosen is None:
        return
    config.stash[CLUSTER] = chosen
    runnable = chosen.runnable
    if runnable is not None and not runnable.prepared and controller and not option("--replay"):
        chosen.kind.check_host(runnable)  # make probe prepared what it hands on; plain pytest is checked here


@dataclass(frozen=True)
class ChosenCluster:
    """The kind of cluster the options ask for, chosen once, and what it resolved them to (None: the cluster is
    another process's, re-attached to once it is ready)."""

    kind: ClusterKind
    runnable: Runnable | None


def _chosen_cluster(option: Option) -> ChosenCluster | None:
    """From make probe's resolved cluster (--cluster-spec; with --cluster-gate, or a kind's option re-attaching,
    the one make probe made), the options re-attaching to one another process made, or the one kind the options ask
    for (resolved here); None when none is asked for."""
    attached = attached_kind(option)
    made_elsewhere = attached is not None or bool(option("--cluster-gate"))
    if spec := option("--cluster-spec"):
        runnable = Runnable.from_json(spec)
        return ChosenCluster(kind_named(runnable.kind), None if made_elsewhere else runnable)
    if made_elsewhere:
        # made by another process, which opens the gate once it is ready (its kubeconfig may not be written yet)
        return ChosenCluster(attached or kind_for("", option("--kubeconfig")), None)
    asked = asked_kinds(option)
    if not asked:
        return None
    kind = asked[0]
    return ChosenCluster(kind, kind.resolve(kind.request(option), warn=lambda said: None))


# ------------------------------------------------------------------------------------ collection


def probe_id(function: Any) -> str:
    return f"{Path(function.__code__.co_filename).name}::{function.__name__}"


def _recordings(root: Path) -> dict[str, list[Path]]:
    """The recordings under --replay by probe id; a path that is missing or holds a non-recording is refused."""
    if not root.exists():
        raise pytest.UsageError(f"--replay {root}: no such file or directory")
    files = [root] if root.is_file() else sorted(root.rglob("*.json"))
    if not files:
        raise pytest.UsageError(f"--replay {root}: no recordings (*.json) there")
    index: dict[str, list[Path]] = {}
    for path in files:
        try:
            recording = Recording.load(path)
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise pytest.UsageError(f"--replay: {path} is not a recording: not JSON") from err
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise pytest.UsageError(f"--replay: {path} is not a recording: {err}") from err
        index.setdefault(recording.probe, []).append(path)
    return index


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "probe" not in metafunc.fixturenames:
        return
    if not metafunc.config.getoption("--replay"):
        repeat = metafunc.config.getoption("--repeat")
        if repeat > 1:  # live: the same probe N times, each in its own namespace
            metafunc.parametrize("probe", range(repeat), indirect=True, ids=[f"repeat{i + 1}" for i in range(repeat)])
        return
    name = probe_id(metafunc.function)
    paths = metafunc.config.stash[RECORDINGS].get(name, [])
    if paths:
        metafunc.parametrize("probe", paths, indirect=True, ids=[p.stem for p in paths])
    else:  # as a version no cluster ran: nothing to replay, said by name (-ra lists it), never a pass
        unrecorded = pytest.param(None, marks=pytest.mark.skip(reason=not_recorded(name, metafunc.config)))
        metafunc.parametrize("probe", [unrecorded], indirect=True, ids=["no-recording"])


def not_recorded(name: str, config: pytest.Config) -> str:
    """Why a probe without a recording under --replay is skipped: its claims rest on the expectations alone."""
    return (
        f"{name}: no live recording under {config.getoption('--replay')}, nothing replayed; its claims rest on "
        "their expectations alone (make coverage lists their ranges)"
    )


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected what they drop
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Probes selected with no cluster and no recordings to run them on are refused, not skipped into a green run;
    --schedule: the probes longest first (each pytest-xdist worker collects, so each sees this order)."""
    probes = [item for item in items if PROBE_FIXTURE in getattr(item, "fixturenames", ())]
    if probes and CLUSTER not in config.stash and not config.getoption("--replay") and not config.option.collectonly:
        refused = (
            f"{BAD_INPUT_CLASS}: {len(probes)} probes selected and no cluster to run them on: give "
            f"{', '.join(options_said(parenthesised=False))}, or --replay probes (the shipped recordings)"
        )
        if not hasattr(config, "workerinput"):
            raise pytest.UsageError(refused)
        # a pytest-xdist worker: an error here would crash it; its controller says the line and exits 4
        config.workeroutput[REFUSED_KEY] = refused  # type: ignore[attr-defined]
        config.hook.pytest_deselected(items=probes)
        items[:] = [item for item in items if item not in probes]
    durations = config.stash.get(DURATIONS, None)
    if durations is not None:
        by_id = {item.nodeid: item for item in items}
        items[:] = [by_id[nodeid] for nodeid in longest_first(list(by_id), durations)]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """--schedule with -n: each worker gets its planned share at once (harness/doors/schedule.py says why)."""
    return PlannedScheduling(config, log, Path(config.getoption("--schedule"))) if DURATIONS in config.stash else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """A probe's verdicts are always concluded: what it checked but did not conclude, the harness concludes.

    A probe that checked no claim at all fails: a probe passes only on claims that held.
    """
    __tracebackhide__ = True
    yield  # raises when the probe itself failed or skipped: nothing more to judge then
    probe = getattr(item, "funcargs", {}).get("probe")
    if isinstance(probe, Probe) and (probe.unconcluded or not probe.verdicts):
        probe.conclude(note="(concluded by the harness: the probe did not call probe.conclude() at its end)")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and call.excinfo is not None and call.excinfo.errisinstance(ClaimsUndecided):
        vars(report)[UNDECIDED_OUTCOME] = True  # kept through pytest-xdist's report serialisation
    counts = item.config.stash.setdefault(OUTCOMES, {})
    if report.when == "call" and not report.skipped and PROBE_FIXTURE in getattr(item, "fixturenames", ()):
        counts[RAN] = counts.get(RAN, 0) + 1  # a probe ran (passed, failed or undecided): the record may say passed
    if report.failed:  # for the run record's status: failed, or only undecided
        key = UNDECIDED_OUTCOME if is_undecided(report) else "failed"
        counts[key] = counts.get(key, 0) + 1
    item.stash.setdefault(REPORTS, {})[report.when] = report
    return report


def is_undecided(report: pytest.TestReport | pytest.CollectReport) -> bool:
    """A probe that failed only because claims stayed undecided (no claim failed)."""
    return report.failed and bool(vars(report).get(UNDECIDED_OUTCOME))


def pytest_report_teststatus(
    report: pytest.TestReport | pytest.CollectReport, config: pytest.Config
) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
    """Undecided probes are counted apart from failed ones in pytest's summary (they still fail the run)."""
    if is_undecided(report):
        return UNDECIDED_OUTCOME, "U", ("UNDECIDED", {"yellow": True})
    return None


# -------------------------------------------------------------------------------------- workers


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller, as it starts each worker: every worker of one `pytest -n N` writes into one run
    directory (each its own run-<worker>.json), the one --run-id names or one made here; with --replay, each
    takes the controller's index of the recordings (reading them all is most of a replay's start)."""
    if SHARED_RUN_ID not in node.config.stash:
        node.config.stash[SHARED_RUN_ID] = node.config.getoption("--run-id") or new_run_id()
    node.workerinput["plp_run_id"] = node.config.stash[SHARED_RUN_ID]
    if RECORDINGS in node.config.stash:  # --replay: read and checked once, here, not again by every worker
        recordings = node.config.stash[RECORDINGS]
        node.workerinput["plp_recordings"] = {probe: [str(p) for p in paths] for probe, paths in recordings.items()}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist's controller, as each worker ends: a worker that refused its probes (no cluster) says why."""
    if refused := getattr(node, "workeroutput", {}).get(REFUSED_KEY):
        node.config.stash[REFUSED_LINE] = refused


# ---------------------------------------------------------------------------------------- summary


@pytest.hookimpl(trylast=True)  # after pytest's own sessionfinish has torn the fixtures down (the cleanup)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if REFUSED_LINE in session.config.stash:  # pytest-xdist's controller: its workers refused the probes
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
    run = session.config.stash.get(RUN, None)
    if run is not None:
        status = {0: "passed", 1: "failed", 2: "interrupted"}.get(int(exitstatus), f"exit {int(exitstatus)}")
        counts = session.config.stash.get(OUTCOMES, {})
        if status == "failed" and counts.get(UNDECIDED_OUTCOME) and not counts.get("failed"):
            status = UNDECIDED_OUTCOME  # every failure was a claim left undecided: not evidence of a regression
        if status == "passed" and not counts.get(RAN):
            status = NO_PROBE_RAN  # every probe skipped (none recorded, no second cluster): not a pass
        cleanup = run.provenance.get("cleanup", [])
        run.write_provenance(
            cleaned={
                "namespaces_deleted": [c["namespace"] for c in cleanup if c.get("namespace_deleted")],
                "namespaces_left": [c["namespace"] for c in cleanup if not c.get("namespace_deleted")],
                "namespaces_kept": [k["namespace"] for k in run.provenance.get("namespaces_kept", [])],
                "finalizers_removed": sum(len(c.get("finalizers_removed", [])) for c in cleanup),
                "cluster_deleted": bool(run.provenance.get("cluster_deleted")),
                **(
                    {"shutdown_cluster_deleted": bool(run.provenance["shutdown_cluster"].get("cluster_deleted"))}
                    if "shutdown_cluster" in run.provenance
                    else {}
                ),
            }
        )
        run.finish(status)
        if status == "interrupted":
            session.config.stash[INTERRUPTED_LINE] = _interrupted_line(run)
            session.exitstatus = INTERRUPTED


def _interrupted_line(run: Run) -> str:
    """What an interrupt stopped and what the teardown removed, in one line."""
    cleaned = run.provenance.get("cleaned") or {}
    removed = [
        f"{len(cleaned.get('namespaces_deleted') or [])} namespaces deleted",
        f"{cleaned.get('finalizers_removed', 0)} finalizers removed",
    ]
    if cleaned.get("namespaces_left"):
        removed.append(f"namespaces left: {', '.join(cleaned['namespaces_left'])}")
    if cleaned.get("cluster_deleted"):
        removed.append("the cluster deleted")
    return f"interrupted: stopped the probes; {', '.join(removed)} (run record: {run.directory / 'run.json'})"


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if line := config.stash.get(INTERRUPTED_LINE, None):
        print(line, file=sys.stderr, flush=True)
    if refused := config.stash.get(REFUSED_LINE, None):
        print(f"ERROR: {refused}", file=sys.stderr, flush=True)  # as pytest says a usage error without workers


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    undecided = terminalreporter.stats.get(UNDECIDED_OUTCOME, [])
    if undecided:  # pytest lists only its own "failed" under FAILURES: these get their own section
        terminalreporter.write_sep("=", f"UNDECIDED ({len(undecided)}: no claim failed, but some could not be decided)")
        for report in undecided:
            terminalreporter.write_sep("_", report.head_line or report.nodeid)
            terminalreporter.write_line(report.longreprtext)
        for report in undecided:
            crash = getattr(report.longrepr, "reprcrash", None)
            terminalreporter.write_line(f"UNDECIDED {report.nodeid} - {getattr(crash, 'message', '')}")
    if RUN not in config.stash and SHARED_RUN_ID in config.stash and REFUSED_LINE not in config.stash:
        # pytest-xdist's controller: where its workers wrote
        terminalreporter.write_sep("-", "pod-lifecycle probes")
        shared = Path(config.getoption("--run-dir")) / config.stash[SHARED_RUN_ID]
        terminalreporter.write_line(f"run records, recordings and evidence: {shared}")
        _say_kept_namespaces(terminalreporter, shared)
        _say_spread(terminalreporter, config, shared)  # every worker's probe records are there by now
    run = config.stash.get(RUN, None)
    if run is not None:
        terminalreporter.write_sep("-", "pod-lifecycle probes")
        terminalreporter.write_line(f"run records, recordings and evidence: {run.directory}")
        for facts in (run.provenance, run.provenance.get("shutdown_cluster") or {}):
            if error := facts.get("cluster_delete_error"):
                name, kind = facts["cluster_name"], facts.get("cluster", "kind")
                terminalreporter.write_line(f"could not delete {kind} cluster {name}: {error}\n(make clean removes it)")
            if facts.get("cluster_kept"):
                terminalreporter.write_line(facts["cluster_kept_message"])
        _say_kept_namespaces(terminalreporter, run.directory)
        _say_spread(terminalreporter, config, run.directory)


def _say_spread(terminalreporter: Any, config: pytest.Config, run_directory: Path) -> None:
    """With --repeat: the spread of every measured interval over the runs, printed and kept as spread.json."""
    rows = spread_of_run(run_directory) if config.getoption("--repeat") > 1 else []
    if rows:
        (run_directory / "spread.json").write_text(json.dumps(rows, indent=1) + "\n")
        terminalreporter.write_line("spread of measured intervals (seconds):")
        terminalreporter.write_line(render_spread(rows))


def _say_kept_namespaces(terminalreporter: Any, run_directory: Path) -> None:
    """KEEP=1: the namespaces of failed probes left for a look, from every run record of the run (its workers')."""
    kept = [
        k for record in sorted(run_directory.glob("run*.json")) for k in _read_json(record).get("namespaces_kept", [])
    ]
    for entry in kept:
        terminalreporter.write_line(
            f"kept for a look (KEEP=1): namespace {entry['namespace']} of the failed probe {entry['probe']}"
        )
    if kept:
        terminalreporter.write_line(
            "(make clean with the cluster's KUBECONFIG_FILE and CONTEXT removes them, or they go with a kept cluster)"
        )


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}
