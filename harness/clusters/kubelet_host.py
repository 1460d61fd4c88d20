"""What a kubelet needs from the host that runs it, whichever cluster kind starts it (kind's nodes, the local
provider's processes).

From 1.35 the kubelet refuses to start on a cgroup v1 host unless its configuration says `failCgroupV1: false`
(CHANGELOG-1.35, kubernetes/kubernetes#134298); the field exists from 1.31.0-rc.0 (kubernetes/kubernetes#126031,
CHANGELOG-1.31 under v1.31.0-rc.0, "Changelog since v1.31.0-beta.0": pkg/kubelet/apis/config/types.go has no
FailCgroupV1 at v1.31.0-alpha.2 or v1.31.0-beta.0, and has it at v1.31.0; the proxy refuses rc.0 and rc.1) and is
unknown before, so older kubelets get none. Most hosts are cgroup v2 and get nothing from this.
"""

from __future__ import annotations

from typing import Any

from harness.base.versions import KubeVersion

FAIL_CGROUP_V1_KNOWN = ">=1.31.0-rc.0"


def host_kubelet_settings(version: KubeVersion, cgroup_version: int) -> dict[str, Any]:
    """What every kubelet of this version needs on this host: on cgroup v1 from 1.31.0-rc.0, failCgroupV1 false."""
    if cgroup_version == 1 and version.satisfies(FAIL_CGROUP_V1_KNOWN):
        return {"failCgroupV1": False}
    return {}
