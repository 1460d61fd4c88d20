"""The suite's own containerd, reached with Debian's `ctr`: its runc cgroup option, and a node's containers as crictl
would list them.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.clusters.local.host import CNI_PLUGINS, NODE_NAME, HostCgroups

JsonDict = dict[str, Any]


def containerd_runc_cgroup_option(cgroups: HostCgroups) -> str:
    """runc's cgroup option in containerd's CRI config: the same driver as the kubelet's, or pods fail to start."""
    return f"SystemdCgroup = {'true' if cgroups.driver == 'systemd' else 'false'}"


def cni_conflist(bridge: str, cni_data: Path) -> JsonDict:
    """The pod network: one bridge of the cluster's own, addresses from 10.244.0.0/24, no route out."""
    return {
        "cniVersion": "0.4.0",
        "name": "plp-local",
        "plugins": [
            {
                "type": "bridge",
                "bridge": bridge,
                "isGateway": False,  # no route out, so no ip_forward change on the host: pods need none
                "ipMasq": False,
                "ipam": {"type": "host-local", "dataDir": str(cni_data), "ranges": [[{"subnet": "10.244.0.0/24"}]]},
            }
        ],
    }


def containerd_config(base: Path, socket: Path, pause_image: str, runc_cgroup_option: str, cni_conf: Path) -> str:
    """The config.toml of the suite's containerd: its own root, state and socket under `base`, the CRI with this
    release's pause image, runc with the kubelet's cgroup driver, CNI from the suite's folder; negative OOM scores
    restricted (hosts whose root lacks CAP_SYS_RESOURCE refuse them)."""
    return f"""version = 2
root = "{base / "root"}"
state = "{base / "state"}"
[grpc]
  address = "{socket}"
[ttrpc]
  address = "{socket}.ttrpc"
[debug]
  level = "info"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause_image}"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        {runc_cgroup_option}
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_PLUGINS}"
    conf_dir = "{cni_conf}"
"""


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
