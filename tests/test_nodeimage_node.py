"""The node image builder's own decisions (harness/nodeimage/node.py), offline: no debootstrap, Docker or
containerd runs; the build steps are stood in by a recorder."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from harness.base.versions import KubeVersion
from harness.gobuild.kubernetes import Build
from harness.nodeimage import base_rootfs, containerd_config, node
from harness.nodeimage.images import NodeImageError
from harness.nodeimage.node import KIND_RELEASE, kind_release_for


def test_containerd_keeps_oom_scores_restricted_and_uses_systemd_cgroups_from_1_24() -> None:
    new = containerd_config.containerd_config(KubeVersion.parse("1.27.3"), "registry.k8s.io/pause:3.9")
    old = containerd_config.containerd_config(KubeVersion.parse("1.23.17"), "registry.k8s.io/pause:3.6")
    assert "restrict_oom_score_adj = true" in new and "restrict_oom_score_adj = true" in old
    assert "SystemdCgroup = true" in new and "SystemdCgroup = false" in old
    assert 'sandbox_image = "registry.k8s.io/pause:3.9"' in new


@pytest.mark.parametrize(
    ("version", "systemd"),
    [("1.21.14", False), ("1.23.17", False), ("1.24.0-alpha.1", True), ("1.24.0-rc.1", True), ("1.24.1", True)],
)
def test_runcs_cgroup_driver_is_the_one_kind_gives_the_kubelet(version: str, systemd: bool) -> None:
    """kind v0.20.0: cgroupfs below 1.24.0 as ParseGeneric reads it, so 1.24.0's pre-releases are systemd."""
    config = containerd_config.containerd_config(KubeVersion.parse(version), "k8s.gcr.io/pause:3.7")
    assert f"SystemdCgroup = {'true' if systemd else 'false'}" in config


def tree(root: Path, paths: list[str]) -> None:
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("")


def test_systemd_starts_only_what_a_node_needs_and_the_shutdown_image_adds_dbus_and_logind(tmp_path: Path) -> None:
    for shutdown in (False, True):
        rootfs = tmp_path / str(shutdown)
        tree(
            rootfs,
            [
                "lib/systemd/system/multi-user.target.wants/systemd-logind.service",
                "lib/systemd/system/sockets.target.wants/systemd-udevd-control.socket",
                "lib/systemd/system/sockets.target.wants/systemd-journald.socket",
                "etc/systemd/system/timers.target.wants/apt-daily.timer",
                "etc/systemd/journald.conf",
            ],
        )
        base_rootfs.trim_systemd(rootfs, shutdown)
        wanted = sorted(p.name for p in (rootfs / "etc/systemd/system").glob("*.wants/*"))
        assert wanted == (["dbus.service", "systemd-logind.service"] if shutdown else [])
        assert not (rootfs / "lib/systemd/system/multi-user.target.wants/systemd-logind.service").exists()
        assert not (rootfs / "lib/systemd/system/sockets.target.wants/systemd-udevd-control.socket").exists()
        assert (rootfs / "lib/systemd/system/sockets.target.wants/systemd-journald.socket").exists()
        assert (rootfs / "etc/systemd/journald.conf").read_text() == "ReadKMsg=no\n"


def test_the_node_gets_kubernetes_binaries_its_version_the_pod_network_and_its_units(tmp_path: Path) -> None:
    rootfs = tmp_path / "rootfs"
    tree(rootfs, ["usr/lib/cni/ptp", "usr/lib/cni/host-local", "usr/bin/.keep", "usr/local/bin/.keep"])
    bin_dir = tmp_path / "build" / "bin"
    tree(bin_dir, ["kubeadm", "kubelet", "kubectl"])
    build = Build("v1.27.3", tmp_path / "build", {})
    (tmp_path / "crictl").write_text("")
    calls: list[list[str]] = []

    def run_step(argv: Sequence[str]) -> str:
        calls.append(list(argv))
        return json.dumps({"process": {"rlimits": [{"type": "RLIMIT_NOFILE"}], "args": []}})

    images = ["registry.k8s.io/kube-apiserver:v1.27.3", "registry.k8s.io/pause:3.9"]
    node.install_node(rootfs, build, tmp_path / "crictl", images, KubeVersion.parse("1.27.3"), run_step)
    assert (rootfs / "kind/version").read_text() == "v1.27.3\n"
    assert all((rootfs / "usr/bin" / c).is_file() for c in ("kubeadm", "kubelet", "kubectl"))
    assert (rootfs / "usr/local/bin/crictl").is_file()
    assert (rootfs / "usr/local/bin/entrypoint").is_file()
    assert sorted(p.name for p in (rootfs / "opt/cni/bin").iterdir()) == ["host-local", "ptp"]
    assert str((rootfs / "opt/cni/bin/ptp").readlink()) == "/usr/lib/cni/ptp"
    assert "rlimits" not in json.loads((rootfs / "etc/containerd/cri-base.json").read_text())["process"]
    assert calls == [["chroot", str(rootfs), "ctr", "oci", "spec"]]
    wants = sorted(p.name for p in (rootfs / "etc/systemd/system/multi-user.target.wants").iterdir())
    assert wants == sorted(node.UNITS)
    cni = (rootfs / "kind/manifests/default-cni.yaml").read_text()
    assert "would you kindly template this file" in cni and "would you kindly patch this file" in cni


def _install(tmp_path: Path, version: str, images: list[str]) -> Path:
    rootfs = tmp_path / "rootfs"
    tree(rootfs, ["usr/lib/cni/ptp", "usr/bin/.keep", "usr/local/bin/.keep"])
    tree(tmp_path / "build" / "bin", ["kubeadm", "kubelet", "kubectl"])
    (tmp_path / "crictl").write_text("")
    spec = json.dumps({"process": {"args": []}})
    build = Build(f"v{version}", tmp_path / "build", {})
    node.install_node(rootfs, build, tmp_path / "crictl", images, KubeVersion.parse(version), lambda argv: spec)
    return rootfs


def test_containerds_sandbox_image_is_kubeadms_pause_under_the_registry_kubeadm_names(tmp_path: Path) -> None:
    images = ["k8s.gcr.io/kube-apiserver:v1.21.14", "k8s.gcr.io/pause:3.4.1", "k8s.gcr.io/etcd:3.4.13-0"]
    config = (_install(tmp_path, "1.21.14", images) / "etc/containerd/config.toml").read_text()
    assert 'sandbox_image = "k8s.gcr.io/pause:3.4.1"' in config and "SystemdCgroup = false" in config
    assert (tmp_path / "rootfs/kind/version").read_text() == "v1.21.14\n"


def test_a_kubeadm_list_without_a_pause_image_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NodeImageError, match="no pause image"):
        _install(tmp_path, "1.21.14", ["k8s.gcr.io/kube-apiserver:v1.21.14", "k8s.gcr.io/coredns/coredns:v1.8.0"])


def test_the_pod_network_manifest_has_one_daemonset_whose_first_container_has_env_for_kinds_patch() -> None:
    documents = list(yaml.safe_load_all((node.FILES / "kind/manifests/default-cni.yaml").read_text()))
    daemonsets = [d for d in documents if d["kind"] == "DaemonSet"]
    assert len(daemonsets) == 1
    container = daemonsets[0]["spec"]["template"]["spec"]["containers"][0]
    assert isinstance(container["env"], list)  # kind appends CONTROL_PLANE_ENDPOINT to it
    assert container["image"] == node.BUSYBOX_NAME


def test_a_failed_step_says_which_command_and_what_it_printed() -> None:
    with pytest.raises(NodeImageError, match=r"`sh -c echo broken >&2; exit 3` failed \(3\):\nbroken"):
        base_rootfs.run(["sh", "-c", "echo broken >&2; exit 3"])


def test_base_images_are_keyed_by_their_package_list() -> None:
    assert base_rootfs.base_key(False) != base_rootfs.base_key(True)
    assert base_rootfs.base_key(False) == base_rootfs.base_key(False)


def test_the_host_check_names_each_missing_tool_with_where_it_comes_from(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "harness.nodeimage.node.shutil.which", lambda tool: None if tool == "debootstrap" else f"/usr/bin/{tool}"
    )
    monkeypatch.setattr("harness.nodeimage.node.os.geteuid", lambda: 1000)
    assert node.host_problems()[:2] == [
        "root (debootstrap and chroot)",
        "debootstrap on PATH (apt-get install debootstrap)",
    ]


@pytest.mark.parametrize("stops_at", ["import", "build", None])
def test_the_staging_image_is_removed_also_when_the_build_stops_half_way(tmp_path: Path, stops_at: str | None) -> None:
    """Seen live: Ctrl-C 45 s into `make node-image VERSION=1.27.9` left plp-node:v1.27.9-stage behind."""
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir()
    ran: list[list[str]] = []

    def run_step(argv: Sequence[str]) -> str:
        ran.append(list(argv))
        if argv[0] == "tar":
            (tmp_path / "rootfs.tar").write_bytes(b"")
        if stops_at and stops_at in argv:
            raise KeyboardInterrupt
        return ""

    record = {"kubernetes": "v1.27.9", "kind_release": "v0.20.0"}
    if stops_at:
        with pytest.raises(KeyboardInterrupt):
            node.docker_image(rootfs, "plp-node:v1.27.9", record, run_step)
    else:
        node.docker_image(rootfs, "plp-node:v1.27.9", record, run_step)
    assert ran[-1] == ["docker", "image", "rm", "--force", "plp-node:v1.27.9-stage"]


def test_images_from_1_37_are_run_by_a_kind_that_writes_kubeadm_v1beta4() -> None:
    """kubeadm 1.37 refuses the v1beta3 configuration kind v0.20.0 writes; kind v0.33.0 writes v1beta4."""
    assert kind_release_for(KubeVersion.parse("v1.37.2")) == "v0.33.0"
    assert kind_release_for(KubeVersion.parse("v1.37.0-alpha.1")) == "v0.33.0"
    assert kind_release_for(KubeVersion.parse("v1.36.4")) == KIND_RELEASE == "v0.20.0"
    assert kind_release_for(KubeVersion.parse("v1.21.14")) == "v0.20.0"


def test_the_pod_network_touches_the_cni_folder_only_when_its_config_changes(tmp_path: Path) -> None:
    """containerd reloads its CNI config on every change in /etc/cni/net.d, and 2.0.1/2.0.2 deadlock when a reload
    meets a pod's network setup (containerd/go-cni#126): after its first write the script must leave the folder be."""
    documents = yaml.safe_load_all((node.FILES / "kind/manifests/default-cni.yaml").read_text())
    daemonset = next(d for d in documents if d["kind"] == "DaemonSet")
    script = daemonset["spec"]["template"]["spec"]["containers"][0]["command"][2]
    kubectl = tmp_path / "kubectl"
    kubectl.write_text('#!/bin/sh\ncase "$*" in *"get node node-a"*) echo 10.244.0.0/24;; esac\n')
    kubectl.chmod(0o755)
    folder = tmp_path / "net.d"
    folder.mkdir()
    script = script.replace("/etc/cni/net.d", str(folder)).replace("/node/kubectl", str(kubectl))
    script = script.replace("sleep 10", "sleep 0.05")
    env = {"PATH": os.environ["PATH"], "NODE_NAME": "node-a", "POD_SUBNET": "10.244.0.0/16"}
    env["CONTROL_PLANE_ENDPOINT"] = "plp-control-plane:6443"
    loop = subprocess.Popen(["sh", "-c", script], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        config = folder / "10-plp.conflist"
        deadline = time.monotonic() + 10
        while not config.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        first = [(p.name, p.stat().st_mtime_ns) for p in [folder, *sorted(folder.iterdir())]]
        time.sleep(1.0)  # about 20 more rounds of the loop
        later = [(p.name, p.stat().st_mtime_ns) for p in [folder, *sorted(folder.iterdir())]]
    finally:
        loop.kill()
        loop.wait()
    assert [name for name, _ in first] == ["net.d", "10-plp.conflist"]
    assert later == first
    assert json.loads(config.read_text())["plugins"][0]["ipam"]["ranges"] == [[{"subnet": "10.244.0.0/24"}]]
