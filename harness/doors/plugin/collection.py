"""What the plugin collects: each probe once per recording under --replay (one without any skipped by name), or
REPEAT times live; probes with no cluster to run on refused; with --schedule, longest first, and pytest-xdist's
workers handed their planned shares (harness/doors/schedule.py)."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest

from harness.base.errors import BAD_INPUT_CLASS
from harness.clusters.registry import options_said
from harness.core.transport_recording import Recording
from harness.doors.plugin.keys import CLUSTER, DURATIONS, PROBE_FIXTURE, RECORDINGS, REFUSED_KEY
from harness.doors.schedule import PlannedScheduling, longest_first

# The garbage collector's thresholds in a process that replays recordings (pytest probes --replay, the replay child of
# make atlas, coverage and upgrade, each of its pytest-xdist workers), those tests/conftest.py sets for the tests: a
# replay makes millions of objects (each recording read whole, its views and timeline), which every collection at
# Python's defaults (700, 10, 10) walks again. A replay of every shipped recording in one process took 7.3-7.5 s of
# CPU against 7.8-9.2 s with the defaults.
REPLAY_GC_THRESHOLDS = (100_000, 50, 100)


# What is alive once the plugins are loaded (pytest's modules, the harness's) and once the probes are collected (their
# items) lives to the end of the process: moved out of the collector's reach (gc.freeze) at each, so that no full
# collection walks it again, pytest's own at its end and the interpreter's at exit among them. A pytest that only
# collects the probes (make probe's selection of PROBE) took 0.33 s of CPU against 0.40-0.42 s.
def pytest_configure(config: pytest.Config) -> None:
    gc.freeze()
    if config.getoption("--replay"):
        gc.set_threshold(*REPLAY_GC_THRESHOLDS)


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.freeze()


def probe_id(function: Any) -> str:
    return f"{Path(function.__code__.co_filename).name}::{function.__name__}"


def recordings_under(root: Path) -> dict[str, list[Path]]:
    """The recordings under --replay by probe id, each known from its head (harness/core/transport_recording.py
    Recording.probe_of); a path that is missing or holds a non-recording is refused."""
    if not root.exists():
        raise pytest.UsageError(f"--replay {root}: no such file or directory")
    files = [root] if root.is_file() else sorted(root.rglob("*.json"))
    if not files:
        raise pytest.UsageError(f"--replay {root}: no recordings (*.json) there")
    index: dict[str, list[Path]] = {}
    for path in files:
        try:
            probe = Recording.probe_of(path)
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise pytest.UsageError(f"--replay: {path} is not a recording: not JSON") from err
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise pytest.UsageError(f"--replay: {path} is not a recording: {err}") from err
        index.setdefault(probe, []).append(path)
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
