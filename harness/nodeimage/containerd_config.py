"""containerd's configuration in a node image: the suite's own (the Debian runtime) or kind's config.toml of the
release, each with what this host kind needs (restrict_oom_score_adj) and the cgroup driver kind gives the kubelet."""

from __future__ import annotations

import re

from harness.base.versions import KubeVersion
from harness.nodeimage.images import NodeImageError

# The kubelet's cgroup driver kind v0.20.0 writes into its kubeadm config: cgroupfs below 1.24.0, else systemd
# (pkg/cluster/internal/kubeadm/config.go). kind reads the version there with ParseGeneric, which ignores a
# pre-release, so 1.24.0's pre-releases get systemd too; containerd's runc must use the same driver.
SYSTEMD_CGROUP = ">=1.24.0-alpha.0"


def containerd_config(version: KubeVersion, pause_image: str) -> str:
    """containerd's configuration in the node: kind's choices, plus restrict_oom_score_adj for this host kind."""
    systemd_cgroup = "true" if version.satisfies(SYSTEMD_CGROUP) else "false"
    return (
        "# containerd in a pod-lifecycle-probes kind node (harness/nodeimage/containerd_config.py)\n"
        "version = 2\n\n"
        '[plugins."io.containerd.grpc.v1.cri"]\n'
        f'  sandbox_image = "{pause_image}"\n'
        "  tolerate_missing_hugepages_controller = true\n"
        "  # Hosts whose root lacks CAP_SYS_RESOURCE refuse negative OOM scores (-998 for sandboxes).\n"
        "  restrict_oom_score_adj = true\n\n"
        '[plugins."io.containerd.grpc.v1.cri".containerd]\n'
        "  discard_unpacked_layers = true\n"
        '  snapshotter = "overlayfs"\n'
        '  default_runtime_name = "runc"\n\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
        '  runtime_type = "io.containerd.runc.v2"\n'
        '  base_runtime_spec = "/etc/containerd/cri-base.json"\n'
        '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n'
        f"    SystemdCgroup = {systemd_cgroup}\n"
    )


def kind_node_containerd_config(kind_config: str, version: KubeVersion) -> str:
    """kind's own containerd config.toml of the release, with what this builder must change, each said in it:
    restrict_oom_score_adj (hosts whose root lacks CAP_SYS_RESOURCE refuse negative OOM scores), and SystemdCgroup
    off below 1.24, as kind's node image build does for such releases (configureContainerdSystemdCgroupFalse)."""
    config, changed = re.subn(
        r"^(\s*)restrict_oom_score_adj = false$",
        r"\1# pod-lifecycle-probes: true (kind: false), as hosts whose root lacks CAP_SYS_RESOURCE need\n"
        r"\1restrict_oom_score_adj = true",
        kind_config,
        flags=re.M,
    )
    if changed != 1:
        raise NodeImageError("kind's containerd config.toml has no `restrict_oom_score_adj = false` line to change")
    if not version.satisfies(SYSTEMD_CGROUP):
        config = re.sub(r"^(\s*)SystemdCgroup = true$", r"\1SystemdCgroup = false", config, flags=re.M)
    return (
        "# kind's images/base/files/etc/containerd/config.toml, as harness/nodeimage/containerd_config.py adapts it\n"
        + config
    )


def kind_sandbox_image(config: str) -> str:
    """The sandbox (pause) image a containerd config names."""
    found = re.search(r'^\s*sandbox_image\s*=\s*"([^"]+)"', config, re.M)
    if not found:
        raise NodeImageError("the containerd config names no sandbox_image")
    return found[1]
