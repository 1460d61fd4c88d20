"""The harness's failures that its front doors turn into a refusal or a failed cluster, whatever raised them."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Sequence

# The exit code of every front door (make's commands, pytest through the suite's plugin) that Ctrl-C
# or SIGTERM stopped: 128 + SIGINT, as a shell reports a process Ctrl-C ended.
INTERRUPTED = 130

# Two classes of refusal, as both front doors name them in their one `error: <class>: ...` line (make's through
# harness/doors/commands/refusal.py, pytest's through the plugin), and the exit code of the second outside pytest's own.
BAD_INPUT_CLASS, PREREQUISITE_MISSING_CLASS = "bad input", "prerequisite missing"
PREREQUISITE_MISSING_EXIT = 3


def one_line(message: str) -> str:
    """A refusal's message on one line: 'needs Docker:\\n  docker is not on PATH' -> 'needs Docker: docker is ...'."""
    return message.replace(":\n  ", ": ").replace("\n  ", "; ").replace("\n", " ")


class BadInput(ValueError):
    """An input neither front door runs with; the message says what is wrong (harness/base/inputs.py checks them)."""


class PrerequisiteMissing(RuntimeError):
    """Something the run needs on this host is not usable (Docker, kind, Go, root ...): what to install or start."""


class ClusterFailed(RuntimeError):
    """A cluster (or what it needs made first) did not come up: what went wrong, and a hint."""


class LocalClusterError(RuntimeError):
    """The local cluster could not be made or did not come up; the message carries the component's log tail."""


class NotRunnable(RuntimeError):
    """A version could not be made runnable (what its kind builds for it failed): the run fails, saying why."""


class Interrupted(Exception):
    """Ctrl-C during a step: what that step was and what stopping it undid, for the one line main() says."""

    def __init__(self, stopped: str) -> None:
        super().__init__(stopped)
        self.stopped = stopped


@contextlib.contextmanager
def stopping(what: str | Callable[[], str]) -> Iterator[None]:
    """Turn Ctrl-C inside the block into Interrupted(what), once the block's own cleanup has run (`what` may be
    a function, asked then, when what was stopped depends on how that cleanup went)."""
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(what() if callable(what) else what) from None


def host_refusal(header: str, problems: Sequence[str]) -> str:
    """`header:` and each problem on its own line, ending with the one apt-get line that installs every
    Debian package the problems name (each says `apt-get install <packages>` where it comes from)."""
    packages = dict.fromkeys(
        package for hint in re.findall(r"apt-get install ([^)]+)", "\n".join(problems)) for package in hint.split()
    )
    lines = [f"{header}:", *problems]
    if packages:
        lines.append(f"install them all with: apt-get install {' '.join(packages)}")
    return "\n  ".join(lines)
