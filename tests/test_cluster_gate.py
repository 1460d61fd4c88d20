"""harness/doors/cluster_gate.py: make probe PARALLEL's workers wait at the gate until the cluster's maker opens it."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.doors.cluster_gate import READY, ClusterGate, wait_at_gate
from tests.pytest_here import pytest_here


def test_a_worker_waits_until_the_gate_opens_and_reads_the_outcome(tmp_path: Path) -> None:
    gate = ClusterGate(tmp_path / "gate")
    seen: list[tuple[str, float]] = []
    waiter = threading.Thread(target=lambda: seen.append((wait_at_gate(gate.path, 300), time.monotonic())))
    waiter.start()
    time.sleep(0.3)
    assert not seen  # still closed
    opened_at = time.monotonic()
    gate.open(READY)
    waiter.join(60)  # returns as soon as the waiter has seen the gate open
    assert [outcome for outcome, _ in seen] == [READY] and seen[0][1] >= opened_at
    gate.open("said twice: ignored")
    assert wait_at_gate(gate.path, 1) == READY


def test_the_outcome_says_why_there_is_no_cluster(tmp_path: Path) -> None:
    gate = ClusterGate(tmp_path / "gate")
    gate.open("the cluster failed: etcd did not start")
    assert wait_at_gate(gate.path, 1) == "the cluster failed: etcd did not start"


def test_a_gate_still_closed_after_the_bound_is_a_timeout_that_names_it(tmp_path: Path) -> None:
    gate = ClusterGate(tmp_path / "gate")
    with pytest.raises(TimeoutError, match=r"not ready after 0s.*still closed"):
        wait_at_gate(gate.path, 0.2)
    gate.open(READY)


def test_a_maker_that_dies_lets_the_workers_through_with_no_outcome(tmp_path: Path) -> None:
    """Ctrl-C or a crash of make probe: the kernel drops its lock, no worker waits out the bound."""
    path = tmp_path / "gate"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from harness.doors.cluster_gate import ClusterGate; g = ClusterGate({str(path)!r}); "
            "print('held', flush=True); import time; time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        holder.kill()
        started = time.monotonic()
        assert wait_at_gate(path, 120) == ""
        # A worker that waited out its bound would take 120 s; one let through by the dropped lock, seconds even on
        # a loaded machine: half the bound tells the two apart without depending on the machine's speed.
        assert time.monotonic() - started < 60
    finally:
        holder.kill()
        holder.wait()


def test_workers_behind_the_gate_take_a_kubeconfig_that_is_not_written_yet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """make probe PARALLEL starts its workers before the cluster (and its kubeconfig) exists: the kubeconfig is
    checked after the gate, and a cluster that failed is said as such (seen live: refused at start-up before)."""
    repo = Path(__file__).resolve().parent.parent
    gate = ClusterGate(tmp_path / "gate")
    gate.open("the cluster failed: etcd did not start")
    cluster = ["--kubeconfig", str(tmp_path / "not-yet" / "admin.kubeconfig"), "--context", "plp-1-37-0000"]
    selected = [
        "--cluster-gate",
        str(gate.path),
        "--run-dir",
        str(tmp_path / "runs"),
        "-k",
        "test_deletion_fields_from",
    ]
    done = pytest_here(str(repo / "probes"), "-q", *cluster, *selected, monkeypatch=monkeypatch, cwd=repo)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "no cluster to run on: the cluster failed: etcd did not start" in done.stdout
    assert "not found" not in done.stdout + done.stderr
