"""Running a command without a shell, as a value: what ran, its exit code and output (tests stand in a Runner)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass


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
