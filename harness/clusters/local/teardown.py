"""Stopping a local cluster from its cluster.json and removing everything it made, safe to run twice and from another
process (make clean): processes, pods, mounts, network namespaces, pod logs, cgroups, the bridge, kernel settings.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.clusters.local.containerd import ctr
from harness.clusters.local.host import (
    DEFAULT_ROOT,
)
from harness.clusters.local.processes import alive, stop_process

JsonDict = dict[str, Any]


# Kernel settings the kubelet writes when they differ (pkg/kubelet/cm/container_manager_linux.go
# setupKernelTunables); read before start, written back at stop.
KUBELET_SYSCTLS = (
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
)


HOST_PATHS_WRITTEN = (Path("/var/log/pods"), Path("/var/log/containers"), Path("/var/run/netns"))


def cgroup_hierarchies() -> list[Path]:
    """Every mounted cgroup hierarchy (v1: one per controller group; v2: the unified one)."""
    out = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] in ("cgroup", "cgroup2"):
            out.append(Path(fields[1]))
    return out


def _remove_cgroup_tree(top: Path) -> list[str]:
    """rmdir a cgroup and its children, deepest first; what could not be removed."""
    if not top.is_dir():
        return []
    left = []
    for directory in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        try:
            directory.rmdir()
        except OSError as err:
            left.append(f"{directory}: {err.strerror}")
    try:
        top.rmdir()
    except OSError as err:
        left.append(f"{top}: {err.strerror}")
    return left


def _mounts_under(prefixes: list[Path], mounts: str | None = None) -> list[str]:
    """The mount points at or under `prefixes`, deepest first. The kernel lists them by their real path: a prefix
    through a symlink (/var/run/netns is /run/netns) is matched by what it resolves to as well; matched by the
    path as given only, the network namespaces of pods still there at teardown were never unmounted, so never
    removed, nor their veths (seen live: 10 left on this host, from runs stopped with pods still running)."""
    every = {str(p) for p in prefixes} | {str(p.resolve()) for p in prefixes}
    targets = []
    for line in (Path("/proc/self/mounts").read_text() if mounts is None else mounts).splitlines():
        target = line.split()[1].replace("\\040", " ")
        if any(target == p or target.startswith(f"{p}/") for p in every):
            targets.append(target)
    return sorted(set(targets), key=len, reverse=True)


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []


@dataclass
class StopReport:
    """What stopping a local cluster did, and what it could not undo."""

    name: str
    processes: dict[str, str] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> JsonDict:
        return {"name": self.name, "processes": self.processes, "removed": self.removed, "errors": self.errors}


def running_clusters(root: Path = DEFAULT_ROOT) -> list[str]:
    """Local clusters with a recorded process still alive."""
    found = []
    for record in sorted(root.glob("*/cluster.json")) if root.is_dir() else []:
        with contextlib.suppress(OSError, ValueError):
            pids = json.loads(record.read_text()).get("pids") or {}
            if any(alive(int(pid)) for pid in pids.values()):
                found.append(record.parent.name)
    return found


def leftover_clusters(root: Path = DEFAULT_ROOT) -> list[Path]:
    return sorted(p.parent for p in root.glob("*/cluster.json")) if root.is_dir() else []


def _shims_of(socket_path: str) -> list[int]:
    """containerd-shim processes started by the containerd at `socket_path` (their command line names it)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and b"containerd-shim" in argv[0] and socket_path.encode() in argv:
            pids.append(int(proc.name))
    return pids


def stop_cluster(state: Path) -> StopReport:
    """Stop a local cluster from its cluster.json and remove everything it made. Safe to run twice."""
    report = StopReport(state.name)
    try:
        record: JsonDict = json.loads((state / "cluster.json").read_text())
    except (OSError, ValueError):
        record = {"pids": {}}
    pids: dict[str, int] = {k: int(v) for k, v in (record.get("pids") or {}).items()}
    socket_path = str(state / "containerd" / "containerd.sock")
    # 1. controllers first (nothing recreates pods), then the kubelet, then the pods' processes through
    #    containerd (tasks killed), then containerd, the API server and etcd.
    for component in ("kube-controller-manager", "kube-scheduler", "kubelet"):
        if component in pids:
            report.processes[component] = stop_process(pids[component])
    if "containerd" in pids and alive(pids["containerd"]):
        _remove_all_pods(state, report)
    for component in ("containerd", "kube-apiserver", "etcd"):
        if component in pids:
            report.processes[component] = stop_process(pids[component])
    for pid in _shims_of(socket_path):
        report.processes[f"containerd-shim {pid}"] = stop_process(pid, grace_s=5)
    # 2. mounts under the state folder (container rootfs, sandbox shm, kubelet volumes) and the network
    #    namespaces the CRI made under /var/run/netns while this cluster ran
    before = record.get("host_paths_before") or {}
    netns_dir = Path("/var/run/netns")
    # only what appeared while this cluster ran: a record without the listing from before removes nothing there
    known = before.get(str(netns_dir))
    new_netns = [netns_dir / n for n in listing(netns_dir) if known is not None and n not in known]
    for target in _mounts_under([state, *new_netns]):
        done = subprocess.run(["umount", "--lazy", target], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            report.errors.append(f"umount {target}: {done.stderr.strip()}")
    for path in new_netns:
        try:
            path.unlink()
            report.removed.append(str(path))
        except FileNotFoundError:
            pass
        except OSError as err:  # still mounted: said, not passed over
            report.errors.append(f"remove {path}: {err}")
    # 3. pod log folders the kubelet wrote outside the state folder
    for host_dir in (Path("/var/log/pods"), Path("/var/log/containers")):
        listed_before = before.get(str(host_dir))
        if listed_before is None:
            continue
        for name in listing(host_dir):
            if name not in listed_before:
                written = host_dir / name
                if written.is_symlink() or written.is_file():
                    written.unlink()
                else:
                    shutil.rmtree(written, ignore_errors=True)
                report.removed.append(str(written))
    # 4. the cgroups, the bridge, the kernel settings
    if cgroup_root := record.get("cgroup_directory") or record.get("cgroup_root"):
        if (record.get("cgroups") or {}).get("driver") == "systemd":
            # the kubelet's slices are systemd units: stopping the top one stops and removes those under it
            subprocess.run(["systemctl", "stop", cgroup_root.strip("/")], capture_output=True, check=False)
        for hierarchy in cgroup_hierarchies():
            report.errors += _remove_cgroup_tree(hierarchy / cgroup_root.strip("/"))
        report.removed.append(f"cgroup {cgroup_root}")
    if (bridge := record.get("bridge")) and Path(f"/sys/class/net/{bridge}").exists():
        done = subprocess.run(["ip", "link", "delete", bridge], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            report.errors.append(f"ip link delete {bridge}: {done.stderr.strip()}")
        else:
            report.removed.append(f"network device {bridge}")
    for key, value in (record.get("sysctls_before") or {}).items():
        path = Path("/proc/sys", key)
        if path.read_text().strip() != value:
            try:
                path.write_text(value)
                report.removed.append(f"sysctl {key} restored to {value}")
            except OSError as err:
                report.errors.append(f"restore sysctl {key}={value}: {err}")
    # 5. the state folder itself
    if not report.errors:
        shutil.rmtree(state, ignore_errors=True)
        if state.exists():
            report.errors.append(f"{state} could not be removed")
        else:
            report.removed.append(str(state))
    return report


def _remove_all_pods(state: Path, report: StopReport) -> None:
    """Kill every task of the suite's containerd and remove its containers, so nothing of the pods runs on."""
    tasks = [line.split()[0] for line in ctr(state, "tasks", "list").stdout.splitlines()[1:] if line.split()]
    for task in tasks:
        ctr(state, "tasks", "kill", "--signal", "SIGKILL", task)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(
        "RUNNING" in line for line in ctr(state, "tasks", "list").stdout.splitlines()[1:]
    ):
        time.sleep(0.5)
    for task in tasks:
        ctr(state, "tasks", "delete", "--force", task)
    containers = ctr(state, "containers", "list", "--quiet").stdout.split()
    for container in containers:
        ctr(state, "containers", "delete", container)
    if tasks or containers:
        report.removed.append(f"{len(tasks)} tasks killed, {len(containers)} containers removed")
