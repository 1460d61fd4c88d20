"""What this host gives a local cluster, checked in a second before any build: Linux, root, the Debian tools and
CNI plugins, a non-loopback address, free ports, and how it runs cgroups; and where local clusters keep their state.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.base.errors import LocalClusterError

JsonDict = dict[str, Any]


DEFAULT_ROOT = Path(os.environ.get("PLP_LOCAL_ROOT", "/var/lib/pod-lifecycle-probes"))


NODE_NAME = "plp-local-node"


REQUIRED_HOST_TOOLS = {
    "containerd": "apt-get install containerd",
    "runc": "apt-get install runc",
    "ctr": "apt-get install containerd",
    "etcd": "apt-get install etcd-server",
    "gcc": "apt-get install gcc libc6-dev",
}


CNI_PLUGINS = Path("/usr/lib/cni")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def node_ip() -> str:
    """The address of the interface of the default route: the kubelet refuses a loopback node IP."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("192.0.2.1", 9))  # TEST-NET-1; connect() on UDP sends nothing
            address = str(sock.getsockname()[0])
        except OSError:
            address = ""
    if not address or address.startswith("127."):
        raise LocalClusterError("the local cluster needs a non-loopback IPv4 address (a default route); none found")
    return address


def check_host() -> list[str]:
    """Why a local cluster cannot run here (empty when it can). Runs in a second, before any build."""
    problems = []
    if platform.system() != "Linux":
        return [f"a local cluster runs only on Linux, not {platform.system()}"]
    if os.geteuid() != 0:
        problems.append("a local cluster runs its kubelet and containerd as root: run as root (sudo)")
    for tool, install in REQUIRED_HOST_TOOLS.items():
        if shutil.which(tool) is None:
            problems.append(f"{tool} is not on PATH ({install})")
    for plugin in ("bridge", "host-local", "loopback"):
        if not (CNI_PLUGINS / plugin).is_file():
            problems.append(f"{CNI_PLUGINS / plugin} is missing (apt-get install containernetworking-plugins)")
    if not Path("/bin/busybox").is_file():
        problems.append("/bin/busybox is missing (apt-get install busybox-static)")
    if not Path("/sys/fs/cgroup").is_dir():
        problems.append("no /sys/fs/cgroup: cgroups are not mounted")
    return problems


@dataclass(frozen=True)
class HostCgroups:
    """How this host runs cgroups, and the cgroup settings the kubelet and containerd take from it.

    The driver follows PID 1: under systemd, cgroups belong to systemd and the kubelet and runc must ask it
    (the systemd driver, `SystemdCgroup = true`); elsewhere they write the cgroup file system (cgroupfs).
    """

    version: int  # 1 (one hierarchy per controller) or 2 (unified)
    init: str  # PID 1's name

    @property
    def driver(self) -> str:
        return "systemd" if self.init == "systemd" else "cgroupfs"

    def root_directory(self, kubelet_root: str) -> str:
        """Where the kubelet's cgroupRoot (`/plp-1-27-ab12`) is in the cgroup file system: the same path with
        cgroupfs; with systemd the slice the kubelet names it (`/plp_1_27_ab12.slice`: `-` nests slices)."""
        if self.driver != "systemd":
            return kubelet_root
        return "/" + kubelet_root.strip("/").replace("-", "_") + ".slice"

    def to_json(self) -> JsonDict:
        return {
            "version": self.version,
            "pid1": self.init,
            "driver": self.driver,
            "containerd_systemd_cgroup": self.driver == "systemd",
            "decided_from": "cgroup.controllers in the cgroup mount (v2) and PID 1's name (systemd driver)",
        }


def host_cgroups(cgroup_mount: Path = Path("/sys/fs/cgroup"), pid1_name: Path = Path("/proc/1/comm")) -> HostCgroups:
    """Read the host's cgroup version (a unified mount has cgroup.controllers) and whether systemd is PID 1."""
    version = 2 if (cgroup_mount / "cgroup.controllers").is_file() else 1
    try:
        init = pid1_name.read_text().strip()
    except OSError:
        init = "unknown"
    return HostCgroups(version, init)
