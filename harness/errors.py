"""The harness's failures that its front doors turn into a refusal or a failed cluster, whatever raised them."""

from __future__ import annotations

# The exit code of every front door (make's commands, the engine, pytest through the suite's plugin) that Ctrl-C
# or SIGTERM stopped: 128 + SIGINT, as a shell reports a process Ctrl-C ended.
INTERRUPTED = 130


class PrerequisiteMissing(RuntimeError):
    """Something the run needs on this host is not usable (Docker, kind, Go, root ...): what to install or start."""


class ClusterFailed(RuntimeError):
    """A cluster (or the node image it needs) did not come up: what went wrong, and a hint."""


class LocalClusterError(RuntimeError):
    """The local cluster could not be made or did not come up; the message carries the component's log tail."""
