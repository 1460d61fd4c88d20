"""The offline tests under pytest-xdist (`make test` runs them with one worker per core and one more).

- Their child processes (pytest, python -m harness, make) start without pytest-xdist's variables. A worker's
  environment has PYTEST_XDIST_WORKER and its siblings; a child pytest that inherited them would take itself
  for a worker of a parallel probe run (and write run-gw0.json instead of run.json). The suite's plugin knows
  a worker from what pytest-xdist sent it (harness/doors/pytest_plugin.py), not from these variables, so they go.
- A module with a module-scoped fixture (runs made once and shared by its tests) is one unit of work, given
  to one worker, so the fixture is made once, and handed out before the rest; every other test is a unit of
  its own, as with `--dist load`.
  pytest-xdist's `--dist loadgroup` would do this by marker, but not under pytest 9: it renames test ids
  through an attribute pytest 9 no longer reads, so every marked test is scheduled on its own.
- The tests of one family in the modules that replay every live recording of it (tests/live_replays.py: a test
  parametrized by the family) are one unit: the second reads the replays the first made, in the same process.
- The modules marked `mostly_waits` (their tests spend most of their time waiting on child processes, signals and
  timers: three to six times their CPU) are one unit together, handed out first: one worker waits through them
  while the others keep both cores busy; scattered, two of them waiting at once left a core idle.
- A `make test` started in the background by a script (`make test &`: a shell without job control) has SIGINT
  ignored, and so would every child it starts: the interrupt tests' Ctrl-C would then reach nothing (seen: three
  of them failed, one waited out its 600 s guard, in a make test run beside another). Each process of the run
  takes Python's own SIGINT handler back, so that its children start as a terminal's would.
- A worker ends with its controller: killed (SIGTERM, SIGKILL), the controller leaves its workers behind, and one
  running a long test (a child pytest, make) would run on; each worker notices its parent is gone and interrupts
  itself as Ctrl-C would.
- Every shipped recording replayed (what make coverage, make upgrade and make report read) is had once for the
  whole session (`shipped_replay`), by the first worker that asks, under a lock the others wait at, as
  pytest-xdist's documentation shares a session fixture; the tests only read it. Under `make test` it is the
  session's own replay (probes/, the one checked probe by probe): its tests are handed out before any other, each
  worker notes every one it finished, and the first to ask waits until all are and takes their records. Any other
  session (plain `pytest`, a -k that drops a probe, another --dist) replays them in a child pytest, as make
  coverage does.
"""

from __future__ import annotations

import fcntl
import gc
import itertools
import json
import os
import re
import shutil
import signal
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

from harness.base.json_read import read_json
from harness.doors.plugin.collection import REPLAY_GC_THRESHOLDS

if TYPE_CHECKING:
    from harness.reports import coverage

MODULE_FIXTURE = re.compile(r"^@pytest\.fixture\(.*scope=\"module\"", re.M)
MOSTLY_WAITS = re.compile(r"^pytestmark = .*\bpytest\.mark\.mostly_waits\b", re.M)
WAITING = "the modules that mostly wait"  # their unit of work (a scope no node id has)
LIVE_REPLAYS = "the live recordings of "  # + a family: the unit of its tests sharing tests/live_replays.py


PROBES_FIRST = "plp_probes_first"  # a worker's workerinput: the session's probe replays are handed out first


# The garbage collector's thresholds in the processes that load this file (the session and its workers, not the
# commands they start), a replay's (harness/doors/plugin/collection.py): the youngest objects collected every
# 100,000 allocations, not 700, and all of them more rarely. The tests make millions of objects that live on
# (recordings read whole, records, matrices), which every collection walks again: the whole suite under pytest-xdist
# took 171 s of CPU, against 181 s with Python's defaults, run back to back (load 4-10).
GC_THRESHOLDS = REPLAY_GC_THRESHOLDS


def pytest_configure(config: pytest.Config) -> None:
    gc.set_threshold(*GC_THRESHOLDS)
    for name in [name for name in os.environ if name.startswith("PYTEST_XDIST_")]:
        del os.environ[name]
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:  # started in the background: see above
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if hasattr(config, "workerinput"):
        threading.Thread(target=end_with_the_controller, args=(os.getppid(),), daemon=True).start()
        if config.workerinput.get(PROBES_FIRST):
            config.pluginmanager.register(ProbeReplayNotes(config), "plp-probe-replay-notes")


# A worker whose controller is gone (killed: SIGTERM, SIGKILL) is interrupted as Ctrl-C would (its running test
# ends, a child process it waits for is killed), and ends for good this long after if that did not end it.
CONTROLLER_GONE_EXIT_S = 30.0


def end_with_the_controller(controller: int) -> None:
    """On a pytest-xdist worker: once its controller has gone (it is the worker's parent, and a worker of a killed
    controller is given to another parent), interrupt the worker, which would else run its tests to their end."""
    while os.getppid() == controller:
        time.sleep(1.0)
    main = threading.main_thread().ident
    if main is not None:
        signal.pthread_kill(main, signal.SIGINT)
    time.sleep(CONTROLLER_GONE_EXIT_S)
    os._exit(1)


def probes_go_first(config: pytest.Config) -> bool:
    """Whether this session's scheduler is ModulesWithSharedFixturesTogether, which hands out the probes first."""
    return bool(config.getoption("dist", None) == "load")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller, as it starts each worker: whether the probe replays go out before any other test
    (then a worker may wait for them all: every one is on a worker that does not wait)."""
    node.workerinput[PROBES_FIRST] = probes_go_first(node.config)


@cache
def shares_a_module_fixture(module: Path) -> bool:
    return module.suffix == ".py" and module.is_file() and bool(MODULE_FIXTURE.search(module.read_text()))


@cache
def mostly_waits(module: Path) -> bool:
    return module.suffix == ".py" and module.is_file() and bool(MOSTLY_WAITS.search(module.read_text()))


@cache
def reads_the_shipped_replay(module: Path) -> bool:
    return module.suffix == ".py" and module.is_file() and "shipped_replay" in module.read_text()


@cache
def shares_live_replays(module: Path) -> bool:
    return module.suffix == ".py" and module.is_file() and "replayed_live(" in module.read_text()


@cache
def family_names() -> frozenset[str]:
    from harness.base.families import families

    return frozenset(family.name for family in families())


def live_replays_unit(root: Path, nodeid: str) -> str | None:
    """The unit of a test parametrized by a family in a module sharing tests/live_replays.py's replays, or None."""
    module, _, test = nodeid.partition("::")
    param = test[test.find("[") + 1 : -1] if test.endswith("]") and "[" in test else ""
    if param in family_names() and shares_live_replays(Path(root, module)):
        return LIVE_REPLAYS + param
    return None


def replays_a_probe(nodeid: str) -> bool:
    """Whether the test is a probe replaying a recording (a test under probes/)."""
    return nodeid.startswith(f"{FAMILIES}/")


FAMILIES = "probes"  # the families' folder, as node ids start


class ModulesWithSharedFixturesTogether(LoadScopeScheduling):  # type: ignore[misc]
    """`--dist load`, but the tests of a module with a module-scoped fixture are one unit. The probes replaying the
    recordings are handed out first (the shared replay waits for them: see above, and they are quick), then those
    units, the slow ones (their fixtures make runs too slow to repeat; those reading the shared replay, the
    slowest, first), before any other single test: they start early, and no worker ends on one alone. The queue
    is put in that order once (not searched again for a module at every hand-out), and each worker's count of tests
    still to run is kept as they end, not counted again over all it was given at every test's end (pytest-xdist's
    way: 0.8 s of the controller's CPU over 5,500 tests, measured apart)."""

    def __init__(self, config: pytest.Config, log: object = None) -> None:
        super().__init__(config, log)
        self.ordered = False
        self.pending: dict[int, int] = {}  # by id() of a worker's assigned work: its tests not yet ended
        self.indexes: dict[object, dict[str, int]] = {}  # each worker's collection: a node id's index

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        path = Path(self.config.rootpath, module)
        if mostly_waits(path):
            return WAITING
        if unit := live_replays_unit(self.config.rootpath, nodeid):
            return unit
        return module if shares_a_module_fixture(path) else nodeid

    def turn(self, scope: str) -> int:
        """When a unit goes out: the modules that mostly wait, the probes, then the modules reading their records
        (the longest), the other modules and each family's live replays, then the other single tests (sorted stably:
        pytest-xdist's order within each)."""
        if scope == WAITING:
            return -1
        if replays_a_probe(scope):
            return 0
        if scope.startswith(LIVE_REPLAYS):
            return 2
        if "::" in scope:  # a single test
            return 3
        return 1 if reads_the_shipped_replay(Path(self.config.rootpath, scope)) else 2

    def _assign_work_unit(self, node: Any) -> None:
        if not self.ordered:
            queue: OrderedDict[str, dict[str, bool]] = self.workqueue
            ordered = sorted(queue.items(), key=lambda unit: self.turn(unit[0]))
            queue.clear()
            queue.update(ordered)
            self.ordered = True
        scope, work_unit = self.workqueue.popitem(last=False)
        assigned = self.assigned_work.setdefault(node, {})
        todo = [nodeid for nodeid, completed in work_unit.items() if not completed]
        self.pending[id(assigned)] = self._pending_of(assigned) + len(todo)
        assigned[scope] = work_unit
        collection = self.registered_collections[node]
        index = self.indexes.get(node)
        if index is None:
            index = self.indexes[node] = {nodeid: i for i, nodeid in enumerate(collection)}
        node.send_runtest_some([index[nodeid] for nodeid in todo])

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        nodeid = self.registered_collections[node][item_index]
        assigned = self.assigned_work[node]
        if not assigned[self._split_scope(nodeid)][nodeid]:
            self.pending[id(assigned)] -= 1
        super().mark_test_complete(node, item_index, duration)

    def _pending_of(self, workload: dict[str, dict[str, bool]]) -> int:
        counted = self.pending.get(id(workload))
        return super()._pending_of(workload) if counted is None else counted

    def remove_node(self, node: Any) -> str | None:
        assigned = self.assigned_work.get(node)
        try:
            return super().remove_node(node)  # type: ignore[no-any-return]
        finally:
            if assigned is not None:
                self.pending.pop(id(assigned), None)
            self.indexes.pop(node, None)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    if config.getoption("dist") != "load":  # an explicit --dist of another kind is kept
        return None
    return ModulesWithSharedFixturesTogether(config, log)


@dataclass(frozen=True)
class ShippedReplay:
    """Every shipped recording replayed once, as make coverage replays them (harness/axis/replay.py)."""

    runs: Path  # the run directory tree: <run id>/probes/<record>.json
    records: list[dict[str, Any]]
    kind_only: list[str]  # the probes that run only on the graceful-node-shutdown kind cluster
    collected: dict[str, str]  # every probe collected, with its family

    def observed(self) -> coverage.Observed:
        from harness.reports import coverage

        return coverage.observed_in(self.records, self.kind_only, self.collected)


# How long the shared replay waits with no probe replay ending before it replays the recordings itself (a worker
# that crashed mid-probe notes nothing): far above any one probe's replay on a loaded machine (a few seconds).
REPLAY_STALL_S = 300.0
REPLAY_NOTES = "probes-replayed-"  # + worker id + .txt: the probe replays a worker finished, one node id a line


class ProbeReplayNotes:
    """On a pytest-xdist worker whose probe replays go out first: which of the session's tests replay a shipped
    recording (when the session replays every one of them, as make test does), and each one's end noted in the
    folder the workers share."""

    def __init__(self, config: pytest.Config) -> None:
        shared = Path(config.getoption("basetemp")).parent  # pytest-xdist gives each worker <base temp>/<worker id>
        self.notes = shared / f"{REPLAY_NOTES}{config.workerinput['workerid']}.txt"  # type: ignore[attr-defined]
        self.replays: set[str] = set()  # the session's tests that replay a recording
        self.probes: list[pytest.Item] = []  # the session's probes (a probe without a recording is skipped)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        from harness.base.families import FAMILIES_ROOT
        from harness.doors.plugin.keys import RECORDINGS

        config = session.config
        replay = config.getoption("--replay", None)
        if not replay or Path(replay) != FAMILIES_ROOT:  # records name their recording by the path given here
            return
        under = [Path(arg.split("::", 1)[0]).resolve() for arg in config.args]
        if not any(path == FAMILIES_ROOT or path in FAMILIES_ROOT.parents for path in under):
            return  # the session collects only some of the families
        probes = [item for item in session.items if item.path.is_relative_to(FAMILIES_ROOT)]
        replays = {item.nodeid for item in probes if isinstance(recording_of(item), Path)}
        if len(replays) == sum(len(paths) for paths in config.stash[RECORDINGS].values()):
            self.replays, self.probes = replays, probes  # every shipped recording: none dropped by -k or a path

    def pytest_runtest_logfinish(self, nodeid: str, location: object) -> None:
        if nodeid in self.replays:
            with self.notes.open("a") as notes:
                notes.write(f"{nodeid}\n")


def recording_of(item: pytest.Item) -> object:
    """The recording a probe replays (a probe without one is skipped with None)."""
    callspec = getattr(item, "callspec", None)
    return None if callspec is None else callspec.params.get("probe")


@pytest.fixture(scope="session")
def shipped_replay(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ShippedReplay:
    """The shipped recordings replayed once per session: under pytest-xdist in the folder its workers share (the
    parent of each one's base temp), had by the first to take the lock (from the session's own replay when it
    replays them all, else in a child pytest); read only by the tests."""
    from harness.reports import coverage

    worker = hasattr(request.config, "workerinput")
    shared = tmp_path_factory.getbasetemp().parent if worker else tmp_path_factory.mktemp("shared")
    runs, markers = shared / "shipped-replay", shared / "shipped-replay.json"
    with (shared / "shipped-replay.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not markers.is_file():
            taken = the_sessions_own_replay(request.config, shared, runs)
            if taken is None:
                records, kind_only, collected = coverage.replay_records(run_dir=runs)
            else:
                records, (kind_only, collected) = taken
            markers.write_text(json.dumps({"kind_only": kind_only, "collected": collected}))
            return out_of_the_collectors_way(ShippedReplay(runs, records, kind_only, collected))
    answer = json.loads(markers.read_text())
    records = [read_json(path) for path in sorted(runs.glob("*/probes/*.json"))]  # as make report reads them
    return out_of_the_collectors_way(ShippedReplay(runs, records, answer["kind_only"], answer["collected"]))


def the_sessions_own_replay(
    config: pytest.Config, shared: Path, runs: Path
) -> tuple[list[dict[str, Any]], tuple[list[str], dict[str, str]]] | None:
    """When this session replays every shipped recording in its workers, handed out before this test: once all
    have ended, their run records (linked under `runs` as a child replay leaves them) and the probes collected;
    None otherwise, or when they did not all end or leave a record (said as a warning), for a child replay."""
    from harness.axis.replay import probes_collected

    notes = config.pluginmanager.get_plugin("plp-probe-replay-notes")
    if not isinstance(notes, ProbeReplayNotes) or not notes.replays:
        return None
    done: set[str] = set()
    last_progress = time.monotonic()
    while not notes.replays <= done:
        ended = {line for path in shared.glob(f"{REPLAY_NOTES}*.txt") for line in path.read_text().splitlines()}
        if len(ended) > len(done):
            done, last_progress = ended, time.monotonic()
        elif time.monotonic() - last_progress > REPLAY_STALL_S:
            warnings.warn(
                f"the session's probe replays stopped at {len(done)} of {len(notes.replays)}: replayed again",
                stacklevel=2,
            )
            return None
        else:
            time.sleep(0.2)
    folder = Path(config.getoption("--run-dir")) / config.workerinput["plp_run_id"]  # type: ignore[attr-defined]
    written = sorted((folder / "probes").glob("*.json"))
    if len(written) != len(notes.replays):
        warnings.warn(
            f"the session's replay left {len(written)} records for {len(notes.replays)}: replayed again", stacklevel=2
        )
        return None
    linked = runs / folder.name / "probes"
    linked.mkdir(parents=True)
    for path in written:
        try:
            os.link(path, linked / path.name)
        except OSError:  # another file system
            shutil.copyfile(path, linked / path.name)
    records = [read_json(path) for path in sorted(linked.glob("*.json"))]
    kind_only, collected = probes_collected(notes.probes)
    return records, (sorted(kind_only), collected)


def out_of_the_collectors_way(replayed: ShippedReplay) -> ShippedReplay:
    """The records, read only for the rest of the session, moved out of the garbage collector's reach (gc.freeze,
    with all else alive now): else every full collection walks their millions of objects again (the report,
    upgrade and coverage tests took 27.7 s of CPU, 23.9 s so)."""
    gc.freeze()
    return replayed


NodeImageBuild = Callable[[str, BaseException], None]


@pytest.fixture
def node_image_build_raising(monkeypatch: pytest.MonkeyPatch) -> NodeImageBuild:
    """make node-image with its host checks passed (Docker, the engine, Go, the Kubernetes module, the host's tools)
    and its parts planned as the given kind release's, nothing resolved; the build itself raises what it is given
    (Ctrl-C, a part that cannot be built), so a test sees what the command makes of it."""
    from harness.clusters.kind import node_images
    from harness.nodeimage.kind_parts import kind_release
    from harness.nodeimage.kind_plan import Plan

    def stub(kind: str, raised: BaseException) -> None:
        for check in ("check_docker", "check_engine", "check_go", "resolve_module"):
            monkeypatch.setattr(node_images, check, lambda *a: None)
        monkeypatch.setattr(node_images, "node_image_host_problems", lambda: [])
        planned = Plan(kind_release(kind), {}, "", "")
        monkeypatch.setattr(node_images, "plan_parts", lambda version, kind, containerd: planned)

        def build(version: str, say: object, parts_plan: Plan | None) -> list[str]:
            raise raised

        monkeypatch.setattr(node_images, "build_node_images", build)

    return stub


RSA_KEYS: list[Any] = []  # the local cluster's keys, made once a process (keys_from_a_pool)


@pytest.fixture
def keys_from_a_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local cluster's RSA keys (2,048 bits: about 65 ms of CPU each, 25 of them in these tests) taken in order
    from a pool kept for the process: a test's keys differ from one another, as a cluster's do; no test compares
    keys across tests."""
    from harness.clusters.local import pki

    made = pki._key
    handed = itertools.count()

    def key() -> Any:
        index = next(handed)
        while len(RSA_KEYS) <= index:
            RSA_KEYS.append(made())
        return RSA_KEYS[index]

    monkeypatch.setattr(pki, "_key", key)
