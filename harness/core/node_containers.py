"""A node's containers as crictl reports them (`crictl ps -a -o json`, or the local cluster's same shape), and the
state of one container among them."""

from __future__ import annotations

import json
from typing import Any

JsonDict = dict[str, Any]


def crictl_containers(listing: str) -> list[JsonDict]:
    """The containers of `crictl ps -a -o json`'s output."""
    return list(json.loads(listing).get("containers") or [])


def container_state_on_node(containers: list[JsonDict], runtime_id: str) -> str:
    """'running', 'exited', 'created', 'unknown' from crictl's CONTAINER_* state, or 'removed' if absent."""
    for container in containers:
        if container.get("id") == runtime_id:
            return str(container.get("state", "CONTAINER_UNKNOWN")).removeprefix("CONTAINER_").lower()
    return "removed"
