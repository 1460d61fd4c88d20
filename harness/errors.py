"""The harness's failures that its front doors turn into a refusal or a failed cluster, whatever raised them."""

from __future__ import annotations

# The exit code of every front door (make's commands, the engine, pytest through the suite's plugin) that Ctrl-C
# or SIGTERM stopped: 128 + SIGINT, as a shell reports a process Ctrl-C ended.
INTERRUPTED = 130

# Two classes of refusal, as both front doors name them in their one `error: <class>: ...` line (make's through
# harness/commands/refusal.py, pytest's through the plugin), and the exit code of the second outside pytest's own.
BAD_INPUT_CLASS, PREREQUISITE_MISSING_CLASS = "bad input", "prerequisite missing"
PREREQUISITE_MISSING_EXIT = 3


def one_line(message: str) -> str:
    """A refusal's message on one line: 'needs Docker:\\n  docker is not on PATH' -> 'needs Docker: docker is ...'."""
    return message.replace(":\n  ", ": ").replace("\n  ", "; ").replace("\n", " ")


class PrerequisiteMissing(RuntimeError):
    """Something the run needs on this host is not usable (Docker, kind, Go, root ...): what to install or start."""


class ClusterFailed(RuntimeError):
    """A cluster (or the node image it needs) did not come up: what went wrong, and a hint."""


class LocalClusterError(RuntimeError):
    """The local cluster could not be made or did not come up; the message carries the component's log tail."""
