"""pytest-xdist's controller and its workers: one run directory for all of them, the replay's index of recordings
read once, and a worker's refusal said by the controller."""

from __future__ import annotations

from typing import Any

import pytest

from harness.base.run import new_run_id
from harness.doors.plugin.keys import RECORDINGS, REFUSED_KEY, REFUSED_LINE, SHARED_RUN_ID


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
