"""The arguments of the local cluster's components: the kubelet's configuration and its cgroup fields for this host,
etcd's TLS, how the API server reaches etcd, and flags only some releases know.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.base.versions import KubeVersion
from harness.clusters.kubelet_host import host_kubelet_settings
from harness.clusters.local.host import (
    HostCgroups,
)

JsonDict = dict[str, Any]


def kubelet_cgroup_settings(cgroups: HostCgroups, cgroup_root: str, version: str) -> JsonDict:
    """The kubelet's cgroup fields for this host: its driver, the suite's root, and on cgroup v1 from 1.31.0-rc.0
    `failCgroupV1: false` (from 1.35 the kubelet refuses a v1 host unless told; the field is unknown before)."""
    settings: JsonDict = {"cgroupDriver": cgroups.driver, "cgroupRoot": cgroup_root}
    return {**settings, **host_kubelet_settings(KubeVersion.parse(version), cgroups.version)}


def kubelet_configuration(
    cgroup_settings: JsonDict, address: str, ports: dict[str, int], ca_file: Path, serving: Path
) -> JsonDict:
    """The kubelet's KubeletConfiguration: its cgroup fields, its ports, webhook authentication and authorization
    against the cluster's CA with its serving certificate (`serving`.crt and .key), and kind's choices."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        **cgroup_settings,
        "failSwapOn": False,
        "address": address,
        "port": ports["kubelet"],
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": ports["healthz"],
        "readOnlyPort": 0,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca_file)},
        },
        "authorization": {"mode": "Webhook"},
        "tlsCertFile": f"{serving}.crt",
        "tlsPrivateKeyFile": f"{serving}.key",
        "clusterDomain": "cluster.local",
        "clusterDNS": ["10.96.0.10"],  # no DNS runs; an empty list makes the kubelet warn on every pod
        # kind's choices: no disk-pressure evictions and no image GC (a collected image cannot come back)
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "0%",
            "nodefs.inodesFree": "0%",
            "imagefs.available": "0%",
        },
        "imageGCHighThresholdPercent": 100,
        "makeIPTablesUtilChains": False,
        "serializeImagePulls": False,
        "staticPodPath": "",
    }


def etcd_argv(data_dir: Path, pki_dir: Path, ports: dict[str, int]) -> list[str]:
    """etcd on loopback with TLS for clients and its peer, each asked for a certificate of etcd's own CA.

    Without them anyone on the host (any user) reads and writes the store with a plain HTTP request.
    """
    client_url, peer_url = f"https://127.0.0.1:{ports['etcd']}", f"https://127.0.0.1:{ports['etcd_peer']}"
    cert, key, ca = pki_dir / "etcd-server.crt", pki_dir / "etcd-server.key", pki_dir / "ca.crt"
    return [
        "etcd",
        "--name", "plp",
        "--data-dir", str(data_dir),
        "--listen-client-urls", client_url,
        "--advertise-client-urls", client_url,
        "--cert-file", str(cert),
        "--key-file", str(key),
        "--trusted-ca-file", str(ca),
        "--client-cert-auth",
        "--listen-peer-urls", peer_url,
        "--initial-advertise-peer-urls", peer_url,
        "--initial-cluster", f"plp={peer_url}",
        "--peer-cert-file", str(cert),
        "--peer-key-file", str(key),
        "--peer-trusted-ca-file", str(ca),
        "--peer-client-cert-auth",
        "--unsafe-no-fsync",  # throw-away data: fsync latency is a small VM's usual etcd bottleneck
    ]  # fmt: skip


def apiserver_etcd_flags(pki_dir: Path, etcd_port: int) -> list[str]:
    """How the API server reaches etcd: TLS, etcd's CA, and the one client certificate that CA signed."""
    return [
        f"--etcd-servers=https://127.0.0.1:{etcd_port}",
        f"--etcd-cafile={pki_dir / 'ca.crt'}",
        f"--etcd-certfile={pki_dir / 'apiserver-etcd-client.crt'}",
        f"--etcd-keyfile={pki_dir / 'apiserver-etcd-client.key'}",
    ]


def remote_runtime_flag(help_text: str) -> list[str]:
    """`--container-runtime=remote` for kubelets that still know the flag: before 1.24 it defaults to "docker"
    (dockershim), so without it a 1.21-1.23 kubelet looks for Docker instead of the suite's containerd."""
    return ["--container-runtime=remote"] if re.search(r"^\s*--container-runtime\s", help_text, re.M) else []


def insecure_ports_off(help_text: str) -> list[str]:
    """Turn off the plain-HTTP port of releases that still open one by default, as their --help shows.

    Unauthenticated: the API server's --insecure-port (8080 on loopback before 1.20), the controller
    manager's and scheduler's --port (10252 / 10251 on every address before 1.22 / 1.23).
    """
    flags = re.findall(r"^\s*(--insecure-port|--port)\b", help_text, re.M)
    return [f"{flag}=0" for flag in dict.fromkeys(flags)]
