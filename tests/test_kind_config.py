"""harness/clusters/kind/config.py and kubelet_host.py: the kind cluster config, and what a cgroup v1 host asks of
every kubelet.

Stood in: `docker info` (tests/doubles.FakeRunner). Real: the YAML kind reads and the version ranges.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harness.base.run import Run
from harness.base.versions import KubeVersion, Release
from harness.clusters.kind.clusters import KindClusters
from harness.clusters.kind.config import cluster_config, engine_cgroup_version
from harness.clusters.kind.node_shutdown import cluster_config as shutdown_cluster_config
from harness.clusters.kind.provider import KindProvider
from harness.clusters.kinds import Runnable
from harness.clusters.kubelet_host import host_kubelet_settings
from tests.doubles import FakeRunner, failed, ok


def test_the_engines_cgroup_version_is_read_from_docker_info_and_is_2_when_it_does_not_say() -> None:
    assert engine_cgroup_version(FakeRunner({"docker info": ok("1\n")})) == 1
    assert engine_cgroup_version(FakeRunner({"docker info": ok("2\n")})) == 2
    assert engine_cgroup_version(FakeRunner({"docker info": failed("no daemon")})) == 2


def test_a_cgroup_v1_engine_tells_kubelets_from_1_31_not_to_refuse_it() -> None:
    for version in ("v1.35.8", "v1.36.4", "v1.31.0-rc.0", "v1.31.0", "v1.37.2"):
        assert host_kubelet_settings(KubeVersion.parse(version), 1) == {"failCgroupV1": False}, version
    assert host_kubelet_settings(KubeVersion.parse("v1.30.14"), 1) == {}  # the field is unknown before 1.31
    # k/k#126031 came in 1.31.0-rc.0: pkg/kubelet/apis/config/types.go has no FailCgroupV1 at alpha.2 or beta.0
    for version in ("v1.31.0-alpha.0", "v1.31.0-alpha.2", "v1.31.0-beta.0"):
        assert host_kubelet_settings(KubeVersion.parse(version), 1) == {}, version
    assert host_kubelet_settings(KubeVersion.parse("v1.35.8"), 2) == {}  # cgroup v2 hosts need nothing


def test_the_config_carries_one_kubelet_patch_only_when_there_are_settings() -> None:
    config = yaml.safe_load(cluster_config([{"role": "control-plane"}], {"failCgroupV1": False}))
    assert config["kind"] == "Cluster" and config["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    assert config["nodes"] == [{"role": "control-plane"}]
    assert [yaml.safe_load(p) for p in config["kubeadmConfigPatches"]] == [
        {"kind": "KubeletConfiguration", "failCgroupV1": False}
    ]
    assert "kubeadmConfigPatches" not in yaml.safe_load(cluster_config([{"role": "control-plane"}], {}))


def test_the_shutdown_cluster_keeps_its_grace_period_beside_the_hosts_setting() -> None:
    config = yaml.safe_load(shutdown_cluster_config(KubeVersion.parse("v1.35.8"), {"failCgroupV1": False}))
    assert [yaml.safe_load(p) for p in config["kubeadmConfigPatches"]] == [
        {
            "kind": "KubeletConfiguration",
            "shutdownGracePeriod": "30s",
            "shutdownGracePeriodCriticalPods": "10s",
            "failCgroupV1": False,
        }
    ]


def test_a_kind_cluster_on_a_cgroup_v1_engine_gets_the_config_and_its_origin_says_so(tmp_path: Path) -> None:
    image = "plp-node:v1.35.8"
    runnable = Runnable(
        "kind", Release.parse("1.35.8"), {"image": image, "kind_release": "v0.20.0", "kind_bin": "kind"}
    )
    notes: dict[str, Any] = {}
    facts = {"kind_line": "kind v0.20.0 go1.20.4 linux/amd64", "engine_cgroup": "1"}
    provider = KindClusters().provider(runnable.with_facts(**facts), Run.start(tmp_path), notes.update)
    assert isinstance(provider, KindProvider) and provider.cluster.config is not None
    config = yaml.safe_load(provider.cluster.config.read_text())
    assert [yaml.safe_load(p) for p in config["kubeadmConfigPatches"]] == [
        {"kind": "KubeletConfiguration", "failCgroupV1": False}
    ]
    assert provider.origin()["kubelet_config_added"] == {
        "settings": {"failCgroupV1": False},
        "why": "the Docker engine runs cgroup v1",
    }
    assert notes["kubelet_config_added"] == {"failCgroupV1": False}

    on_v2 = KindClusters().provider(runnable.with_facts(**{**facts, "engine_cgroup": "2"}), Run.start(tmp_path), print)
    assert isinstance(on_v2, KindProvider) and on_v2.cluster.config is None
    assert "kubelet_config_added" not in on_v2.origin()
