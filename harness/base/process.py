"""Running a command without a shell, as a value: what ran, its exit code and output (tests stand in a Runner)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO


@dataclass(frozen=True)
class Completed:
    """A finished command: what ran, its exit code and its output."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return "\n".join(part for part in (self.stdout.strip(), self.stderr.strip()) if part)


Runner = Callable[[Sequence[str], float], Completed]


def run_command(argv: Sequence[str], timeout: float) -> Completed:
    """Run a command without a shell; a missing binary or a timeout becomes a failed Completed."""
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError as err:
        return Completed(tuple(argv), 127, "", str(err))
    except subprocess.TimeoutExpired as err:
        out = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        return Completed(tuple(argv), 124, out, f"timed out after {timeout:.0f}s")
    return Completed(tuple(argv), proc.returncode, proc.stdout, proc.stderr)


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM while the block runs (a child being started), then deliver the first that came.

    Popen returns only once its child has exec'd; a KeyboardInterrupt raised inside it (seen under load: the child
    already running, the parent not yet past Popen) leaves a child nobody holds to stop. Held here, the interrupt
    comes right after the block, where the caller holds the child. Off the main thread no signal arrives anyway.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    for number in previous:
        signal.signal(number, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if held:
            signal.raise_signal(held[0])


class InterruptedUndo(KeyboardInterrupt):
    """Ctrl-C came while an undo ran; the undo ran to its end anyway, and this is what it gave."""

    def __init__(self, completed: Completed) -> None:
        super().__init__()
        self.completed = completed


def run_to_the_end(argv: Sequence[str], timeout: float) -> Completed:
    """An undo (deleting a cluster) that must not stop half-way: it runs in a session of its own, so the Ctrl-C a
    terminal sends its whole foreground group (or a SIGTERM to the group) does not reach it, and a Ctrl-C that
    reaches this process meanwhile is noted, not raised, until it has ended (bounded by `timeout`); then it is
    raised as InterruptedUndo, which carries what the undo gave.

    Seen live: Ctrl-C during `kind delete cluster` stopped kind half-way, and the node container went on running;
    and a Ctrl-C between fork and exec killed the child before it ran (strace: killed by SIGINT, no execve), so
    the child also starts with SIGINT ignored, which it keeps through exec (a Go program such as kind too).
    """
    in_main = threading.current_thread() is threading.main_thread()
    interrupted: list[int] = []
    previous = signal.getsignal(signal.SIGINT) if in_main else None
    if in_main:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        try:
            process = subprocess.Popen(
                list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
            )
        finally:
            if in_main:
                signal.signal(signal.SIGINT, lambda signum, frame: interrupted.append(signum))
        deadline = time.monotonic() + timeout
        while True:
            try:
                stdout, stderr = process.communicate(timeout=max(deadline - time.monotonic(), 0.1))
                result = Completed(tuple(argv), process.returncode, stdout, stderr)
                break
            except KeyboardInterrupt:  # a SIGTERM, turned into one (sigterm_as_interrupt)
                interrupted.append(signal.SIGTERM)
            except subprocess.TimeoutExpired:
                process.kill()
                stdout, _ = process.communicate()
                result = Completed(tuple(argv), 124, stdout or "", f"timed out after {timeout:.0f}s")
                break
    except FileNotFoundError as err:
        result = Completed(tuple(argv), 127, "", str(err))
    finally:
        if in_main:
            signal.signal(signal.SIGINT, previous)
    if interrupted:
        raise InterruptedUndo(result)
    return result


def wait_through_interrupt(process: subprocess.Popen[bytes], *beside: subprocess.Popen[bytes]) -> int:
    """Wait for a child harness or pytest run to end on its own, even through Ctrl-C or SIGTERM; its exit code.

    A child that cleans up when stopped (removes its cluster, its namespaces) must be let finish: Python's own
    `subprocess.call`/`run` kill the child 0.25 s after a Ctrl-C, which would leave a cluster behind. Here a
    SIGTERM to this process is passed on to the child and to the runs `beside` it (started beside it, such as the
    node-shutdown probes' pytest); a Ctrl-C reached a child in this process group from the terminal as it reached
    this process, and one in a session of its own gets it from here. Once the child has ended after either,
    KeyboardInterrupt is raised, so that the caller stops as interrupted (130, one line) instead of going on.
    """
    stopped: list[int] = []
    with _WAITED_LOCK:
        _WAITED.add(process)

    def forward(signum: int, frame: object) -> None:
        stopped.append(signum)
        for running in (process, *beside):
            if running.poll() is None:
                running.send_signal(signal.SIGTERM)

    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, forward) if in_main else None
    try:
        while True:
            try:
                code = process.wait()
                if stopped:
                    raise KeyboardInterrupt
                return code
            except KeyboardInterrupt:
                if process.poll() is not None:
                    raise
                stopped.append(signal.SIGINT)
                for running in (process, *beside):
                    with contextlib.suppress(ProcessLookupError):
                        if running.poll() is None and os.getpgid(running.pid) != os.getpgrp():
                            os.killpg(running.pid, signal.SIGINT)
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)
        with _WAITED_LOCK:
            _WAITED.discard(process)


# The children wait_through_interrupt waits for, on any thread: a SIGTERM reaches only the main thread, which passes
# it on to those of the other threads (terminate_waited_children).
_WAITED: set[subprocess.Popen[bytes]] = set()
_WAITED_LOCK = threading.Lock()


def terminate_waited_children() -> None:
    """SIGTERM to every child still waited for (a kind matrix waits for its versions on worker threads, where no
    signal handler runs): what a SIGTERM to this process alone did not reach. Their waits go on to their end."""
    with _WAITED_LOCK:
        running = [process for process in _WAITED if process.poll() is None]
    for process in running:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)


def run_through_interrupt(argv: Sequence[str], stdout: IO[str] | None = None) -> int:
    """Run a child harness command (one version of a matrix or a bisection) to its end, through Ctrl-C and
    SIGTERM as wait_through_interrupt says; its exit code. Its output goes to `stdout` (stderr with it) if given."""
    stderr = subprocess.STDOUT if stdout is not None else None
    return wait_through_interrupt(subprocess.Popen(list(argv), stdout=stdout, stderr=stderr))


class StoppedChild(Exception):
    """A child run until stopped (run_until_stopped) was stopped; `cleaned`: it ended on its own after the SIGINT (its
    own cleanup ran), rather than being killed when its time for that ran out."""

    def __init__(self, cleaned: bool) -> None:
        super().__init__("stopped" if cleaned else "killed: it did not end within its time to clean up")
        self.cleaned = cleaned


def run_until_stopped(argv: Sequence[str], out: IO[str], stop: threading.Event, cleanup_s: float) -> int:
    """A long child run from a background thread, which no Ctrl-C reaches (make matrix's build of a runtime ahead),
    in a process group of its own, its output in `out`; its exit code. Once `stop` is set, or this thread is
    interrupted, it is stopped (stop_group) and StoppedChild raised (or the interrupt, which goes on)."""
    process = subprocess.Popen(list(argv), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        while True:
            try:
                return process.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                if stop.is_set():
                    raise StoppedChild(stop_group(process, cleanup_s)) from None
    except BaseException:
        if process.poll() is None:
            stop_group(process, cleanup_s)
        raise


def stop_group(process: subprocess.Popen[bytes], cleanup_s: float) -> bool:
    """Stop a child that leads a process group of its own as a terminal's Ctrl-C stops a command: SIGINT to the whole
    group, whose leader (a harness command) then removes its unfinished work; SIGKILL to the group if it has not ended
    within `cleanup_s`, and to what it left running in the group. Whether it ended on its own."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(timeout=cleanup_s)
        ended = True
    except subprocess.TimeoutExpired:
        ended = False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    return ended


def sigterm_as_interrupt() -> None:
    """Make SIGTERM (what CI and `kill` send) take the same path as Ctrl-C: KeyboardInterrupt, so that every
    cleanup written for Ctrl-C (clusters, builds, engines) runs for it too. Main thread only."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_interrupt)


class Terminated(KeyboardInterrupt):
    """SIGTERM, on Ctrl-C's path: unlike a terminal's Ctrl-C, it reached this process alone, not its children."""


def _raise_interrupt(signum: int, frame: object) -> None:
    raise Terminated(f"received signal {signum}")
