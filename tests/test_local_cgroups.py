"""The local cluster's cgroup settings chosen from the host (harness/local/host.py, containerd.py, components.py),
against stand-in /sys/fs/cgroup trees and PID 1 names in tmp_path. The recorded live runs were all cgroup v1 without
systemd (cgroupfs); the v2 and systemd rows are checked only here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.local import cluster as local
from harness.local import components, containerd, host
from harness.local.build import Build


def stand_in_host(tmp_path: Path, version: int, pid1: str) -> tuple[Path, Path]:
    """A cgroup mount as a v1 host (one folder per controller) or a v2 host (unified) shows it, and PID 1's name."""
    mount = tmp_path / "sys-fs-cgroup"
    if version == 2:
        mount.mkdir()
        (mount / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids rdma misc\n")
    else:
        for controller in ("cpu", "memory", "pids", "systemd", "unified"):
            (mount / controller).mkdir(parents=True)
        (mount / "unified" / "cgroup.controllers").write_text("")  # hybrid: v2 mounted aside, still v1
    comm = tmp_path / "comm"
    comm.write_text(f"{pid1}\n")
    return mount, comm


@pytest.mark.parametrize(
    ("version", "pid1", "driver", "systemd_cgroup", "directory"),
    [
        (1, "process_api", "cgroupfs", "false", "/plp-1-27-ab12"),  # the hosts of the recorded live runs
        (1, "systemd", "systemd", "true", "/plp_1_27_ab12.slice"),
        (2, "systemd", "systemd", "true", "/plp_1_27_ab12.slice"),  # most laptops and CI runners
        (2, "tini", "cgroupfs", "false", "/plp-1-27-ab12"),  # a v2 container without systemd
    ],
)
def test_the_driver_and_the_cgroup_root_follow_the_host(
    tmp_path: Path, version: int, pid1: str, driver: str, systemd_cgroup: str, directory: str
) -> None:
    cgroups = host.host_cgroups(*stand_in_host(tmp_path, version, pid1))
    assert (cgroups.version, cgroups.driver) == (version, driver)
    assert containerd.containerd_runc_cgroup_option(cgroups) == f"SystemdCgroup = {systemd_cgroup}"
    settings = components.kubelet_cgroup_settings(cgroups, "/plp-1-27-ab12", "v1.27.3")
    assert settings == {"cgroupDriver": driver, "cgroupRoot": "/plp-1-27-ab12"}
    assert cgroups.root_directory("/plp-1-27-ab12") == directory
    recorded = cgroups.to_json()
    assert (recorded["version"], recorded["pid1"], recorded["driver"]) == (version, pid1, driver)


@pytest.mark.parametrize(("version", "kubernetes", "fail_cgroup_v1"), [(1, "v1.31.0", False), (1, "v1.30.9", None)])
def test_a_v1_host_tells_kubelets_from_1_31_not_to_refuse_it(
    tmp_path: Path, version: int, kubernetes: str, fail_cgroup_v1: bool | None
) -> None:
    cgroups = host.host_cgroups(*stand_in_host(tmp_path, version, "init"))
    assert components.kubelet_cgroup_settings(cgroups, "/plp", kubernetes).get("failCgroupV1") == fail_cgroup_v1


def test_a_v2_host_passes_no_fail_cgroup_v1(tmp_path: Path) -> None:
    cgroups = host.host_cgroups(*stand_in_host(tmp_path, 2, "systemd"))
    assert "failCgroupV1" not in components.kubelet_cgroup_settings(cgroups, "/plp", "v1.35.0")


def test_the_decision_goes_into_the_clusters_record_and_run_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cgroups = host.host_cgroups(*stand_in_host(tmp_path, 2, "systemd"))
    build = Build("v1.27.3", tmp_path / "build", {"toolchain": "go1.20.5"})
    cluster = local.LocalCluster("plp-1-27-ab12", build, tmp_path / "logs", tmp_path / "root", cgroups=cgroups)
    monkeypatch.setattr(local.LocalCluster, "_start_all", lambda self, timeout_s: None)  # no component starts
    cluster.start()
    saved = json.loads((cluster.state / "cluster.json").read_text())
    assert saved["cgroups"]["driver"] == cluster.provenance()["cgroups"]["driver"] == "systemd"
    assert saved["cgroups"]["containerd_systemd_cgroup"] is True


def test_an_unreadable_pid1_name_means_cgroupfs(tmp_path: Path) -> None:
    mount, _ = stand_in_host(tmp_path, 2, "systemd")
    assert host.host_cgroups(mount, tmp_path / "missing").driver == "cgroupfs"
