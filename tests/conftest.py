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
- A `make test` started in the background by a script (`make test &`: a shell without job control) has SIGINT
  ignored, and so would every child it starts: the interrupt tests' Ctrl-C would then reach nothing (seen: three
  of them failed, one waited out its 600 s guard, in a make test run beside another). Each process of the run
  takes Python's own SIGINT handler back, so that its children start as a terminal's would.
- Every shipped recording replayed in a child pytest (what make coverage, make upgrade and make report read) is
  made once for the whole session (`shipped_replay`), by the first worker that asks, under a lock the others
  wait at, as pytest-xdist's documentation shares a session fixture; the tests only read it. `make test` replays
  the recordings in its own workers too (probes/): that replay is the one checked probe by probe.
"""

from __future__ import annotations

import fcntl
import gc
import json
import os
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

if TYPE_CHECKING:
    from harness.reports import coverage

MODULE_FIXTURE = re.compile(r"^@pytest\.fixture\(.*scope=\"module\"", re.M)


def pytest_configure(config: pytest.Config) -> None:
    for name in [name for name in os.environ if name.startswith("PYTEST_XDIST_")]:
        del os.environ[name]
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:  # started in the background: see above
        signal.signal(signal.SIGINT, signal.default_int_handler)


@cache
def shares_a_module_fixture(module: Path) -> bool:
    return module.suffix == ".py" and module.is_file() and bool(MODULE_FIXTURE.search(module.read_text()))


class ModulesWithSharedFixturesTogether(LoadScopeScheduling):  # type: ignore[misc]
    """`--dist load`, but the tests of a module with a module-scoped fixture are one unit. Those units are the slow
    ones (their fixtures make runs too slow to repeat), so they are handed out before any single test, with more
    tests first (pytest-xdist's order among them): they start at once, and no worker ends on one alone."""

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return module if shares_a_module_fixture(Path(self.config.rootpath, module)) else nodeid

    def _assign_work_unit(self, node: object) -> None:
        module = next((scope for scope in self.workqueue if "::" not in scope), None)  # a single test has "::"
        if module is not None:
            self.workqueue.move_to_end(module, last=False)
        super()._assign_work_unit(node)


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


@pytest.fixture(scope="session")
def shipped_replay(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ShippedReplay:
    """The shipped recordings replayed once per session: under pytest-xdist in the folder its workers share (the
    parent of each one's base temp), made by the first to take the lock; read only by the tests."""
    from harness.reports import coverage

    worker = hasattr(request.config, "workerinput")
    shared = tmp_path_factory.getbasetemp().parent if worker else tmp_path_factory.mktemp("shared")
    runs, markers = shared / "shipped-replay", shared / "shipped-replay.json"
    with (shared / "shipped-replay.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not markers.is_file():
            records, kind_only, collected = coverage.replay_records(run_dir=runs)
            markers.write_text(json.dumps({"kind_only": kind_only, "collected": collected}))
            return out_of_the_collectors_way(ShippedReplay(runs, records, kind_only, collected))
    answer = json.loads(markers.read_text())
    records = [json.loads(path.read_text()) for path in sorted(runs.glob("*/probes/*.json"))]
    return out_of_the_collectors_way(ShippedReplay(runs, records, answer["kind_only"], answer["collected"]))


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
    from harness.nodeimage.kind_parts import Plan, kind_release

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
