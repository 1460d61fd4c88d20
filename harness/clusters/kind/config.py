"""The kind cluster config the suite writes: its nodes, and one KubeletConfiguration patch that every node's
kubelet takes (kubeadm reads the kubelet configuration from the first node only: kind docs, kind#3849).

What the host asks of every kubelet (harness/clusters/kubelet_host.py: on cgroup v1, from 1.31.0-rc.0, `failCgroupV1:
false`) goes into that patch: kind v0.20.0 writes no such field, so on a cgroup v1 Docker engine a 1.35 node's
kubelet would exit and its control plane never come up. kubeadm's own cgroup v1 refusal
(kubernetes/kubernetes#134744) is in its preflight phase, which kind skips (`--skip-phases=preflight`,
pkg/cluster/internal/create/actions/kubeadminit).
"""

from __future__ import annotations

from typing import Any

from harness.base.process import Runner, run_command

JsonDict = dict[str, Any]


def engine_cgroup_version(runner: Runner = run_command) -> int:
    """The cgroup version of the Docker engine that runs the nodes (`docker info`: "1" or "2"); 2 if unsaid."""
    info = runner(["docker", "info", "--format", "{{.CgroupVersion}}"], 20)
    return 1 if info.returncode == 0 and info.stdout.strip() == "1" else 2


def cluster_config(nodes: list[JsonDict], kubelet: JsonDict) -> str:
    """A kind.x-k8s.io/v1alpha4 Cluster of these nodes; with settings, one KubeletConfiguration patch for all."""
    import yaml  # (only where a cluster is made: not with every process that knows the kinds of cluster)

    config: JsonDict = {"kind": "Cluster", "apiVersion": "kind.x-k8s.io/v1alpha4", "nodes": nodes}
    if kubelet:
        patch = yaml.safe_dump({"kind": "KubeletConfiguration", **kubelet}, sort_keys=False)
        config["kubeadmConfigPatches"] = [patch]
    return yaml.safe_dump(config, sort_keys=False)
