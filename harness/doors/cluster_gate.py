"""The gate between `make probe PARALLEL` and its pytest-xdist workers: the workers start, import and collect while
the cluster is being made, and wait at the gate until it is ready.

Why: starting a worker costs about 0.7 s of CPU (Python, pytest, pytest-xdist, the suite), 12-14 of them about
10 s on 2 cores, which the run used to spend after the cluster was ready; the cluster's start-up (7 s on a local
one) is mostly the control plane coming up, and the workers' start-up fits beside it.

The process that makes the cluster holds an exclusive lock on the gate file from before the workers start, writes
the outcome ("ready", or what went wrong) and lets go. A worker takes a shared lock, which the kernel grants when
the holder lets go or exits (a crash or Ctrl-C cannot leave the workers waiting), and reads the outcome; its wait
is bounded.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

READY = "ready"


class ClusterGate:
    """The closed gate, held by the process that makes the cluster until `open` (or its exit)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = os.open(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def open(self, outcome: str) -> None:
        """Write the outcome (READY, or why the cluster is not) and let the workers through; once only."""
        if self._fd is None:
            return
        os.write(self._fd, outcome.encode())
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    @property
    def is_open(self) -> bool:
        return self._fd is None


def wait_at_gate(path: Path, timeout_s: float) -> str:
    """Wait until the gate opens; the outcome written there ('' when its holder exited without one).

    Raises TimeoutError when it is still closed after timeout_s (the lock is taken in a thread, so that the
    wait can end; the thread goes with the process)."""
    outcome: list[str] = []

    def take() -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            outcome.append(Path(path).read_text())
        finally:
            os.close(fd)

    taker = threading.Thread(target=take, name="cluster-gate", daemon=True)
    taker.start()
    taker.join(timeout_s)
    if taker.is_alive():
        raise TimeoutError(f"the cluster was not ready after {timeout_s:.0f}s (the gate {path} is still closed)")
    return outcome[0] if outcome else ""
