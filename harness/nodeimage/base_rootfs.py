"""The Debian root file system every node image built from modules starts from: `debootstrap --variant=minbase`
of bookworm with what a kind node needs, trimmed the way kind trims its base image (no getty, udev, timers);
made once per package set and reused (harness/nodeimage/node.py builds the images on it)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.nodeimage.images import NodeImageError
from harness.nodeimage.tags import NODE_IMAGE_WORK

SUITE = "bookworm"
PACKAGES = (
    "systemd",
    "systemd-sysv",
    "conntrack",
    "iptables",
    "nftables",
    "iproute2",
    "ethtool",
    "util-linux",
    "mount",
    "kmod",
    "libseccomp2",
    "pigz",
    "bash",
    "ca-certificates",
    "curl",
    "jq",
    "procps",
)
# The named fallback's runtime (PARTS=debian): Debian's containerd 1.6, runc and CNI plugins. An image with kind's
# components (harness/nodeimage/kind_parts.py) has none of these packages.
DEBIAN_RUNTIME = ("containerd", "runc", "containernetworking-plugins")
# What the kubelet's graceful shutdown manager needs: the system bus and logind (kubernetes/kubernetes
# pkg/kubelet/nodeshutdown/nodeshutdown_manager_linux.go start(); kind#3135: kind nodes run no D-Bus).
SHUTDOWN_PACKAGES = ("dbus",)

Run = Callable[[Sequence[str]], str]


def run(argv: Sequence[str], stdin: bytes | None = None, timeout: float = 1800) -> str:
    """Run a build step; a failure raises NodeImageError with the command and its output."""
    done = subprocess.run(list(argv), input=stdin, capture_output=True, timeout=timeout, check=False)
    if done.returncode != 0:
        output = (done.stdout + done.stderr).decode(errors="replace").strip()[-3000:]
        raise NodeImageError(f"`{' '.join(argv)}` failed ({done.returncode}):\n{output}")
    return done.stdout.decode(errors="replace")


def base_packages(shutdown: bool, debian_runtime: bool = True) -> tuple[str, ...]:
    return PACKAGES + (DEBIAN_RUNTIME if debian_runtime else ()) + (SHUTDOWN_PACKAGES if shutdown else ())


def base_key(shutdown: bool, debian_runtime: bool = True) -> str:
    packages = base_packages(shutdown, debian_runtime)
    return hashlib.sha256(f"{SUITE} {' '.join(packages)} v1".encode()).hexdigest()[:12]


def base_rootfs(
    shutdown: bool, work: Path = NODE_IMAGE_WORK, debian_runtime: bool = True
) -> tuple[Path, dict[str, Any]]:
    """The Debian root file system all node images of a kind start from (debootstrap once, then reused)."""
    directory = work / f"base-{base_key(shutdown, debian_runtime)}"
    record_file = directory / "base.json"
    if record_file.is_file():
        return directory / "rootfs", dict(json.loads(record_file.read_text()))
    if shutil.which("debootstrap") is None:
        raise NodeImageError("building a node image needs debootstrap (apt-get install debootstrap)")
    discard(directory)
    directory.mkdir(parents=True)
    try:
        return _debootstrap(directory, shutdown, debian_runtime)
    except BaseException:  # a base without base.json is never reused; nothing of it stays mounted or on disk
        discard(directory)
        raise


def discard(directory: Path) -> None:
    """Remove an unfinished build folder: first what is mounted under it (debootstrap mounts /proc, /sys)."""
    if not directory.exists():
        return
    prefix = f"{directory.resolve()}/"
    with open("/proc/self/mounts") as mounts:
        targets = [line.split()[1] for line in mounts if line.split()[1].startswith(prefix)]
    for target in sorted(targets, key=len, reverse=True):
        subprocess.run(["umount", "--lazy", target], capture_output=True, check=False)
    shutil.rmtree(directory, ignore_errors=True)


def _debootstrap(directory: Path, shutdown: bool, debian_runtime: bool = True) -> tuple[Path, dict[str, Any]]:
    record_file = directory / "base.json"
    rootfs = directory / "rootfs"
    packages = base_packages(shutdown, debian_runtime)
    started = time.monotonic()
    run(["debootstrap", "--variant=minbase", f"--include={','.join(packages)}", SUITE, str(rootfs)], timeout=3600)
    trim_systemd(rootfs, shutdown)
    for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
        for path in (rootfs / leftover).glob("*"):
            if path.is_file():
                path.unlink()
    record = {
        "debian": SUITE,
        "packages": dict(
            line.split("\t", 1)
            for line in run(["chroot", str(rootfs), "dpkg-query", "-W"]).splitlines()
            if "\t" in line
        ),
        "debootstrap_s": round(time.monotonic() - started, 1),
        "shutdown_capable": shutdown,
    }
    record_file.write_text(json.dumps(record, indent=1) + "\n")
    return rootfs, record


def trim_systemd(rootfs: Path, shutdown: bool) -> None:
    """Start only what a node needs, as kind's base image does; the shutdown image also D-Bus and logind."""
    lib = rootfs / "lib/systemd/system"
    patterns = [
        "sysinit.target.wants/systemd-tmpfiles-setup.service",
        "multi-user.target.wants/*",
        "local-fs.target.wants/*",
        "sockets.target.wants/*udev*",
        "sockets.target.wants/*initctl*",
        "basic.target.wants/*",
    ]
    for pattern in patterns:
        for path in lib.glob(pattern):
            path.unlink()
    for path in (rootfs / "etc/systemd/system").glob("*.wants/*"):
        path.unlink()
    with (rootfs / "etc/systemd/journald.conf").open("a") as journald:
        journald.write("ReadKMsg=no\n")
    if shutdown:
        wants = rootfs / "etc/systemd/system/multi-user.target.wants"
        wants.mkdir(parents=True, exist_ok=True)
        for unit in ("dbus.service", "systemd-logind.service"):
            (wants / unit).symlink_to(f"/lib/systemd/system/{unit}")
