"""The harness's failures that its front doors turn into a refusal or a failed cluster, whatever raised them."""

from __future__ import annotations


class PrerequisiteMissing(RuntimeError):
    """Something the run needs on this host is not usable (Docker, kind, Go, root ...): what to install or start."""


class ClusterFailed(RuntimeError):
    """A cluster (or the node image it needs) did not come up: what went wrong, and a hint."""


class LocalClusterError(RuntimeError):
    """The local cluster could not be made or did not come up; the message carries the component's log tail."""
