"""A one-node Kubernetes cluster run as processes on this Linux host (root), from binaries built here.

etcd (Debian's), a containerd of the suite's own (Debian's containerd and runc, its own root, state, socket
and CNI configuration; Docker's containerd is never touched), the control plane and a kubelet, with
certificates made for this cluster. Everything the cluster makes lives under `<root>/<name>/`
(`/var/lib/pod-lifecycle-probes/<name>` by default), and `cluster.json` there lists what `stop()` must undo:
process ids, the cgroup root, the CNI bridge, the kernel settings the kubelet changes (restored), and the
host paths the kubelet and containerd write to outside the state folder (/var/log/pods, /var/run/netns).

Host facts this relies on: where root lacks CAP_SYS_RESOURCE (nested VMs, some CI sandboxes) a negative
oom_score_adj is refused, so containerd's CRI runs with `restrict_oom_score_adj = true`. Only one local
cluster runs on a host at a time: a kubelet removes the /var/log/pods folders of pods its runtime does not
know, so two would delete each other's logs.

This module starts the components in order; what it relies on lives beside it: host.py (what the host must
give), processes.py (one process: alive, log, health, stop), containerd.py (the suite's containerd, its
configuration and the pod network, through `ctr`), images.py (the pause and probe images it imports, made by
harness/nodeimage/oci_images.py), components.py (the components' arguments and the kubelet's configuration),
pki.py (what it signs), teardown.py (removing all of it, also from another process).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from harness.base.errors import LocalClusterError
from harness.clusters.local.components import (
    apiserver_etcd_flags,
    etcd_argv,
    insecure_ports_off,
    kubelet_cgroup_settings,
    kubelet_configuration,
    remote_runtime_flag,
)
from harness.clusters.local.containerd import (
    cni_conflist,
    containerd_config,
    containerd_runc_cgroup_option,
    ctr,
    list_containers,
)
from harness.clusters.local.host import (
    DEFAULT_ROOT,
    NODE_NAME,
    HostCgroups,
    free_port,
    host_cgroups,
    node_ip,
)
from harness.clusters.local.images import import_images, pause_image
from harness.clusters.local.processes import alive, http_ok, https_ok, log_tail
from harness.clusters.local.teardown import (
    HOST_PATHS_WRITTEN,
    KUBELET_SYSCTLS,
    StopReport,
    cgroup_hierarchies,
    listing,
    running_clusters,
    stop_cluster,
)
from harness.gobuild.go import go_environment
from harness.gobuild.kubernetes import Build
from harness.gobuild.modules import download_module

if TYPE_CHECKING:  # imported where the certificates are made: cryptography is slow to import, and most never need it
    from harness.clusters.local.pki import Pki

JsonDict = dict[str, Any]


def write_cluster_record(state: Path, record: dict[str, Any]) -> None:
    """cluster.json replaced whole, so that another process reading it (teardown, the API server's restart in
    harness/clusters/local/disruption.py) never sees half of it."""
    temporary = state / "cluster.json.new"
    temporary.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(temporary, state / "cluster.json")


@dataclass
class LocalCluster:
    """One local cluster: `start()` brings it up and records what it made; `stop()` removes all of it."""

    name: str
    build: Build
    logs: Path  # where the components' logs go (the run directory)
    root: Path = DEFAULT_ROOT
    record: JsonDict = field(default_factory=dict)
    started: bool = False
    cgroups: HostCgroups = field(default_factory=host_cgroups)

    @property
    def state(self) -> Path:
        return self.root / self.name

    @property
    def kubeconfig(self) -> Path:
        return self.state / "admin.kubeconfig"

    @property
    def context(self) -> str:
        return self.name

    @property
    def containerd_socket(self) -> Path:
        return self.state / "containerd" / "containerd.sock"

    # ------------------------------------------------------------------------------------ start

    def start(self, timeout_s: float = 180) -> None:
        """Bring every component up, in order; on any failure stop what was started and raise with its log."""
        running = running_clusters(self.root)
        if running:
            raise LocalClusterError(
                f"a local cluster is already running on this host ({', '.join(running)}); one at a time, "
                "because a kubelet removes the pod logs of pods it does not know (make clean stops it)"
            )
        self.state.mkdir(parents=True, exist_ok=False)
        self.logs.mkdir(parents=True, exist_ok=True)
        self.started = True
        self.record = {
            "name": self.name,
            "state": str(self.state),
            "pids": {},
            "argv": {},  # each component's command line (harness/clusters/local/disruption.py restarts the API server)
            "logs": str(self.logs),
            "kubernetes": self.build.version,
            "build": self.build.record,
            "node": NODE_NAME,
            "host_paths_before": {str(p): listing(p) for p in HOST_PATHS_WRITTEN},
            "sysctls_before": {s: Path("/proc/sys", s).read_text().strip() for s in KUBELET_SYSCTLS},
            "cgroups": self.cgroups.to_json(),
        }
        self._save()
        try:
            self._start_all(timeout_s)
        except BaseException:
            self.stop()
            raise

    def _save(self) -> None:
        write_cluster_record(self.state, self.record)

    def _spawn(self, component: str, argv: list[str], env: dict[str, str] | None = None) -> int:
        log = self.logs / f"{component}.log"
        with log.open("ab") as out:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C in the terminal reaches the suite, which stops these in order
                env=env,
            )
        self.record["pids"][component] = process.pid
        self.record.setdefault("argv", {})[component] = argv
        self._save()
        return process.pid

    def _wait_for(self, component: str, ready: Callable[[], bool], timeout_s: float, what: str) -> None:
        pid = self.record["pids"][component]
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if ready():
                return
            if not alive(pid):
                raise LocalClusterError(
                    f"{component} exited while starting; last lines of {self.logs / (component + '.log')}:\n"
                    + log_tail(self.logs / f"{component}.log")
                )
            time.sleep(0.5)
        raise LocalClusterError(
            f"{component} not {what} after {timeout_s:.0f}s; last lines of {self.logs / (component + '.log')}:\n"
            + log_tail(self.logs / f"{component}.log")
        )

    def _start_all(self, timeout_s: float) -> None:
        ports = {k: free_port() for k in ("etcd", "etcd_peer", "apiserver", "kcm", "scheduler", "kubelet", "healthz")}
        address = node_ip()
        self.record.update(ports=ports, node_ip=address)
        self._save()
        self._start_containerd()
        self._import_images()
        pki = self._make_pki(address, ports["apiserver"])
        etcd_pki = self._make_etcd_pki()
        self._start_etcd(etcd_pki, ports)
        self._start_apiserver(pki, etcd_pki.directory, address, ports)
        self._start_controllers(pki, ports)
        self._start_kubelet(pki, address, ports)

    def _cgroup_root(self) -> str:
        """A cgroup of the suite's own that the kubelet puts every pod under (removed at stop)."""
        name = f"/{self.name}"
        directory = self.cgroups.root_directory(name)
        self.record.update(cgroup_root=name, cgroup_directory=directory)
        self._save()
        if self.cgroups.driver == "systemd":  # a slice systemd knows, so the kubelet's slices can nest in it
            subprocess.run(["systemctl", "start", directory.strip("/")], capture_output=True, check=False)
        for hierarchy in cgroup_hierarchies():
            (hierarchy / directory.strip("/")).mkdir(exist_ok=True)
        self._save()
        return name

    def _start_containerd(self) -> None:
        base = self.state / "containerd"
        cni_conf, cni_data = self.state / "cni" / "net.d", self.state / "cni" / "data"
        for d in (base / "root", base / "state", cni_conf, cni_data):
            d.mkdir(parents=True, exist_ok=True)
        bridge = f"plp{zlib.crc32(self.name.encode()) % 10**6:06d}"  # at most 15 characters
        self.record["bridge"] = bridge
        (cni_conf / "10-plp-local.conflist").write_text(json.dumps(cni_conflist(bridge, cni_data), indent=1))
        # the sandbox image: the pause tag this release's kubeadm names, built from its source (images.py)
        source = Path(download_module("k8s.io/kubernetes", self.build.version, go_environment(), self.state)["Dir"])
        self.record["pause_image"] = pause_image(source)
        self.record["kubernetes_source"] = str(source)
        config = containerd_config(
            base,
            self.containerd_socket,
            str(self.record["pause_image"]),
            containerd_runc_cgroup_option(self.cgroups),
            cni_conf,
        )
        (base / "config.toml").write_text(config)
        self._spawn("containerd", ["containerd", "--config", str(base / "config.toml")])
        self._wait_for("containerd", lambda: self._ctr("plugins", "ls").returncode == 0, 30, "answering on its socket")
        plugins = self._ctr("plugins", "ls").stdout
        cri = [line for line in plugins.splitlines() if " cri " in f" {line} "]
        if not cri or " ok" not in cri[0]:
            raise LocalClusterError(
                f"containerd's CRI plugin is not ok: {cri}; its log ends:\n{log_tail(self.logs / 'containerd.log')}"
            )
        self.record["containerd_version"] = subprocess.run(
            ["containerd", "--version"], capture_output=True, text=True, check=False
        ).stdout.strip()
        self.record["runc_version"] = subprocess.run(
            ["runc", "--version"], capture_output=True, text=True, check=False
        ).stdout.splitlines()[0]

    def _ctr(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return ctr(self.state, *args, timeout=timeout)

    def _import_images(self) -> None:
        self.record["images"] = import_images(
            self.state, str(self.record["pause_image"]), Path(self.record["kubernetes_source"]), self.build.version
        )
        self._save()

    def _make_pki(self, address: str, port: int) -> Pki:
        from harness.clusters.local.pki import Pki

        pki = Pki(self.state / "pki")
        server = f"https://{address}:{port}"
        pki.issue(
            "apiserver",
            "kube-apiserver",
            server=True,
            client=False,
            dns=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"),
            ips=("127.0.0.1", "10.96.0.1", address),
        )
        pki.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters")
        pki.service_account_keys()
        identities = {
            "admin": ("kubernetes-admin", "system:masters"),
            "controller-manager": ("system:kube-controller-manager", None),
            "scheduler": ("system:kube-scheduler", None),
            "kubelet": (f"system:node:{NODE_NAME}", "system:nodes"),
        }
        for name, (common_name, organization) in identities.items():
            cert, key = pki.issue(name, common_name, organization)
            pki.kubeconfig(self.state / f"{name}.kubeconfig", server, common_name, cert, key, self.name)
        pki.issue(
            "kubelet-serving",
            f"system:node:{NODE_NAME}",
            "system:nodes",
            server=True,
            client=False,
            dns=(NODE_NAME, "localhost"),
            ips=(address, "127.0.0.1"),
        )
        return pki

    def _make_etcd_pki(self) -> Pki:
        """etcd's own CA (as kubeadm's): it signs etcd's serving and peer certificate and one client
        certificate, the API server's, so no other certificate of the cluster opens the store."""
        from harness.clusters.local.pki import Pki

        pki = Pki(self.state / "pki" / "etcd")
        pki.issue("etcd-server", "plp-etcd", server=True, client=True, dns=("localhost",), ips=("127.0.0.1",))
        pki.issue("apiserver-etcd-client", "kube-apiserver-etcd-client")
        return pki

    def _start_etcd(self, pki: Pki, ports: dict[str, int]) -> None:
        self._spawn("etcd", etcd_argv(self.state / "etcd", pki.directory, ports))
        client_cert, client_key = (pki.directory / f"apiserver-etcd-client.{ext}" for ext in ("crt", "key"))
        health = f"https://127.0.0.1:{ports['etcd']}/health"
        self._wait_for("etcd", lambda: https_ok(health, pki.ca_file, client_cert, client_key), 30, "healthy")
        self.record["etcd_version"] = subprocess.run(
            ["etcd", "--version"], capture_output=True, text=True, check=False
        ).stdout.splitlines()[0]

    def _start_apiserver(self, pki: Pki, etcd_pki_dir: Path, address: str, ports: dict[str, int]) -> None:
        p = pki.directory
        self._spawn(
            "kube-apiserver",
            [
                str(self.build.binary("kube-apiserver")),
                *apiserver_etcd_flags(etcd_pki_dir, ports["etcd"]),
                *insecure_ports_off(self._help("kube-apiserver")),
                f"--advertise-address={address}",
                f"--bind-address={address}",
                f"--secure-port={ports['apiserver']}",
                "--service-cluster-ip-range=10.96.0.0/24",
                "--allow-privileged=true",
                "--authorization-mode=Node,RBAC",
                "--enable-admission-plugins=NodeRestriction",
                f"--client-ca-file={pki.ca_file}",
                f"--tls-cert-file={p / 'apiserver.crt'}",
                f"--tls-private-key-file={p / 'apiserver.key'}",
                f"--kubelet-client-certificate={p / 'apiserver-kubelet-client.crt'}",
                f"--kubelet-client-key={p / 'apiserver-kubelet-client.key'}",
                f"--kubelet-certificate-authority={pki.ca_file}",
                "--kubelet-preferred-address-types=InternalIP",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={p / 'sa.pub'}",
                f"--service-account-signing-key-file={p / 'sa.key'}",
                "--v=2",
            ],
        )
        server = f"https://{address}:{ports['apiserver']}"
        self._wait_for(
            "kube-apiserver",
            lambda: https_ok(f"{server}/readyz", pki.ca_file, p / "admin.crt", p / "admin.key"),
            90,
            "ready (/readyz)",
        )

    def _start_controllers(self, pki: Pki, ports: dict[str, int]) -> None:
        self._spawn(
            "kube-controller-manager",
            self._controller_argv(
                "kube-controller-manager",
                self.state / "controller-manager.kubeconfig",
                ports["kcm"],
                f"--service-account-private-key-file={pki.directory / 'sa.key'}",
                f"--root-ca-file={pki.ca_file}",
                f"--cluster-signing-cert-file={pki.ca_file}",
                f"--cluster-signing-key-file={pki.ca_key_file}",
                "--use-service-account-credentials=true",
                "--service-cluster-ip-range=10.96.0.0/24",
            ),
        )
        self._spawn(
            "kube-scheduler",
            self._controller_argv("kube-scheduler", self.state / "scheduler.kubeconfig", ports["scheduler"]),
        )

    def _controller_argv(self, component: str, kubeconfig: Path, port: int, *own_flags: str) -> list[str]:
        """A controller's command line: its kubeconfig for everything, its own flags, no leader election, its
        secure port on loopback, and the plain-HTTP port of older releases off."""
        return [
            str(self.build.binary(component)),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            *own_flags,
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            *insecure_ports_off(self._help(component)),
            "--v=2",
        ]

    def _start_kubelet(self, pki: Pki, address: str, ports: dict[str, int]) -> None:
        root_dir = self.state / "kubelet"
        root_dir.mkdir(exist_ok=True)
        config = kubelet_configuration(
            kubelet_cgroup_settings(self.cgroups, self._cgroup_root(), self.build.version),
            address,
            ports,
            pki.ca_file,
            pki.directory / "kubelet-serving",
        )
        if "failCgroupV1" in config:
            self.record["kubelet_notes"] = ["cgroup v1 host: failCgroupV1 false"]
        path = self.state / "kubelet.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        # --pod-infra-container-image was removed from the kubelet in later releases; pass it only where known.
        help_text = self._help("kubelet")
        pause_flag = (
            [f"--pod-infra-container-image={self.record['pause_image']}"]
            if "--pod-infra-container-image" in help_text
            else []
        )
        pause_flag += remote_runtime_flag(help_text)
        self._spawn(
            "kubelet",
            [
                str(self.build.binary("kubelet")),
                f"--config={path}",
                f"--kubeconfig={self.state / 'kubelet.kubeconfig'}",
                f"--root-dir={root_dir}",
                f"--container-runtime-endpoint=unix://{self.containerd_socket}",
                f"--hostname-override={NODE_NAME}",
                f"--node-ip={address}",
                *pause_flag,
                "--v=2",
            ],
        )
        self._wait_for(
            "kubelet", lambda: http_ok(f"http://127.0.0.1:{ports['healthz']}/healthz"), 60, "healthy (/healthz)"
        )

    def _help(self, component: str) -> str:
        """A component's --help text: which flags this release knows."""
        done = subprocess.run(
            [str(self.build.binary(component)), "--help"], capture_output=True, text=True, check=False
        )
        return done.stdout + done.stderr

    # ------------------------------------------------------------------------------------ node access

    def node_containers(self, node: str) -> list[JsonDict]:
        return list_containers(self.state, node)

    # ------------------------------------------------------------------------------------ stop

    def stop(self) -> StopReport:
        report = stop_cluster(self.state) if self.started else StopReport(self.name)
        self.started = False
        return report

    def provenance(self) -> JsonDict:
        keys = (
            "kubernetes",
            "node",
            "node_ip",
            "ports",
            "containerd_version",
            "runc_version",
            "etcd_version",
            "images",
            "cgroup_root",
            "cgroup_directory",
            "cgroups",
            "bridge",
            "kubelet_notes",
        )
        return {
            "state": str(self.state),
            "build": self.build.record,
            "kernel": platform.release(),
            **{k: self.record.get(k) for k in keys},
        }
