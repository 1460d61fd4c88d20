"""An undo runs to its end through Ctrl-C (harness/base/process.py run_to_the_end), and a kind cluster's deletion is
one: seen live, Ctrl-C during `kind delete cluster` stopped kind half-way and left the node container running,
while the run said the cluster was removed. An interrupt while a child starts waits for the block that starts it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.base.process import Completed, InterruptedUndo
from harness.clusters.kind.cluster import KindCluster
from harness.clusters.kind.provider import KindProvider

pytestmark = pytest.mark.mostly_waits  # on signals and the processes they stop

# Ctrl-C, as a terminal sends it to its whole foreground group, 0.3 s into a 1 s undo. Run in a session of its
# own so that the signal reaches nothing of the test run.
CTRL_C_DURING_AN_UNDO = """
import json, os, signal, sys, threading
from harness.base.process import InterruptedUndo, run_to_the_end
threading.Timer(0.3, lambda: os.killpg(0, signal.SIGINT)).start()
try:
    done = run_to_the_end(["sh", "-c", "sleep 1; echo undone"], 30)
    print(json.dumps({"raised": None, "returncode": done.returncode, "stdout": done.stdout}))
except InterruptedUndo as stop:
    done = stop.completed
    print(json.dumps({"raised": "InterruptedUndo", "returncode": done.returncode, "stdout": done.stdout}))
"""


def test_ctrl_c_reaches_the_waiting_process_after_the_undo_has_run_to_its_end() -> None:
    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C_DURING_AN_UNDO],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=600,
        start_new_session=True,
    )
    assert json.loads(done.stdout) == {"raised": "InterruptedUndo", "returncode": 0, "stdout": "undone\n"}, done.stderr


def test_a_kind_deletion_that_ctrl_c_came_through_is_recorded_as_done_and_the_interrupt_goes_on(
    tmp_path: Path,
) -> None:
    calls: list[list[str]] = []

    def undo(argv: Sequence[str], timeout: float) -> Completed:
        calls.append(list(argv))
        raise InterruptedUndo(Completed(tuple(argv), 0, "", "Deleting cluster"))

    cluster = KindCluster("plp-1-27-abcd", "plp-node:v1.27.9", tmp_path / "kubeconfig", undo_runner=undo)
    cluster.created = True
    provider = KindProvider(cluster, "v0.20.0", "v0.20.0", "kind v0.20.0")
    removal = provider.delete()
    assert removal.interrupted and removal.error is None and not cluster.created
    assert calls[0][:3] == ["kind", "delete", "cluster"]


def test_a_cluster_made_here_deletes_through_the_undo_runner_unless_a_runner_stands_in(tmp_path: Path) -> None:
    from harness.base.process import run_command, run_to_the_end

    assert KindCluster("c", "i", tmp_path / "k").undo_runner is run_to_the_end
    stand_in = lambda argv, timeout: Completed(tuple(argv), 0, "", "")  # noqa: E731
    assert KindCluster("c", "i", tmp_path / "k", runner=stand_in).undo_runner is stand_in
    assert KindCluster("c", "i", tmp_path / "k", runner=run_command).undo_runner is run_to_the_end


HELD_INTERRUPT = """
import os, signal, sys, time
from harness.base.process import interrupts_held

def as_interrupt(signum, frame):
    raise KeyboardInterrupt

signal.signal(signal.SIGTERM, as_interrupt)
before = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
order = []
try:
    with interrupts_held():
        os.kill(os.getpid(), int(sys.argv[1]))
        time.sleep(0.2)
        order.append("block ended")
    order.append("after the block")
except KeyboardInterrupt:
    order.append("interrupted")
print(",".join(order))
print(all(signal.getsignal(number) is handler for number, handler in before.items()))
"""


def test_an_interrupt_while_a_child_starts_is_held_to_the_end_of_the_block_then_delivered() -> None:
    """harness/base/process.py interrupts_held, as run_step starts go: the block is not cut, the interrupt follows."""
    for stop in (signal.SIGINT, signal.SIGTERM):
        done = subprocess.run(
            [sys.executable, "-c", HELD_INTERRUPT, str(int(stop))],
            cwd=Path(__file__).resolve().parent.parent,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.stdout.splitlines() == ["block ended,interrupted", "True"], (stop, done.stdout, done.stderr)
