"""The suite's own containerd, reached with Debian's `ctr`: its runc cgroup option, and a node's containers as crictl
would list them.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.clusters.local.host import (
    NODE_NAME,
    HostCgroups,
)

JsonDict = dict[str, Any]


def containerd_runc_cgroup_option(cgroups: HostCgroups) -> str:
    """runc's cgroup option in containerd's CRI config: the same driver as the kubelet's, or pods fail to start."""
    return f"SystemdCgroup = {'true' if cgroups.driver == 'systemd' else 'false'}"


def ctr(state: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Debian's `ctr` against the containerd of the local cluster whose state folder is `state`, CRI namespace."""
    return subprocess.run(
        ["ctr", "--address", str(state / "containerd" / "containerd.sock"), "--namespace", "k8s.io", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def list_containers(state: Path, node: str) -> list[JsonDict]:
    """The node's containers as crictl would list them: {"id", "state": CONTAINER_RUNNING/EXITED}.

    Read from the suite's containerd with Debian's `ctr` (crictl's Go module is not served by the proxy this
    suite reaches): a CRI container is a containerd container under the CRI's id; it has a running task while
    it runs (the CRI deletes the task when the container exits, and the container when it is removed).
    """
    if node != NODE_NAME:
        raise RuntimeError(f"the local cluster has one node, {NODE_NAME}, not {node}")
    containers = ctr(state, "containers", "list", "--quiet", timeout=30)
    tasks = ctr(state, "tasks", "list", timeout=30)
    if containers.returncode != 0 or tasks.returncode != 0:
        raise RuntimeError(f"ctr could not list the node's containers: {containers.stderr or tasks.stderr}")
    running = {fields[0] for fields in (line.split() for line in tasks.stdout.splitlines()[1:]) if "RUNNING" in fields}
    return [
        {"id": cid, "state": "CONTAINER_RUNNING" if cid in running else "CONTAINER_EXITED"}
        for cid in containers.stdout.split()
    ]


def local_node_lister(state: Path) -> Callable[[str], list[JsonDict]]:
    """Node access for a process that did not start the cluster (make probe PARALLEL=N's workers)."""
    return lambda node: list_containers(state, node)
