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
give), processes.py (one process: alive, log, health, stop), containerd.py (the suite's containerd through
`ctr`), components.py (arguments that depend on the host or release), pki.py (what it signs), teardown.py
(removing all of it, also from another process); the images it imports are made by harness/nodeimage/oci_images.py.
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
    remote_runtime_flag,
)
from harness.clusters.local.containerd import containerd_runc_cgroup_option, ctr, list_containers
from harness.clusters.local.host import (
    CNI_PLUGINS,
    DEFAULT_ROOT,
    NODE_NAME,
    HostCgroups,
    free_port,
    host_cgroups,
    node_ip,
)
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
from harness.nodeimage.oci_images import (
    LOCAL_PROBE_IMAGE,
    PROBE_IMAGE_NAMES,
    ImageError,
    busybox_layer,
    oci_archive,
    pause_layer,
    pause_tag,
)

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
        cni = {
            "cniVersion": "0.4.0",
            "name": "plp-local",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": bridge,
                    "isGateway": False,  # no route out, so no ip_forward change on the host: pods need none
                    "ipMasq": False,
                    "ipam": {"type": "host-local", "dataDir": str(cni_data), "ranges": [[{"subnet": "10.244.0.0/24"}]]},
                }
            ],
        }
        (cni_conf / "10-plp-local.conflist").write_text(json.dumps(cni, indent=1))
        # the sandbox image: the pause tag this release's kubeadm names, built from its source (_import_images)
        source = Path(download_module("k8s.io/kubernetes", self.build.version, go_environment(), self.state)["Dir"])
        self.record["pause_image"] = f"registry.k8s.io/pause:{pause_tag(source)}"
        self.record["kubernetes_source"] = str(source)
        config = f"""version = 2
root = "{base / "root"}"
state = "{base / "state"}"
[grpc]
  address = "{self.containerd_socket}"
[ttrpc]
  address = "{self.containerd_socket}.ttrpc"
[debug]
  level = "info"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{self.record["pause_image"]}"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        {containerd_runc_cgroup_option(self.cgroups)}
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_PLUGINS}"
    conf_dir = "{cni_conf}"
"""
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

    def _import(self, name: str, archive: bytes) -> None:
        path = self.state / f"{name.rsplit('/', 1)[-1].replace(':', '_')}.oci.tar"
        path.write_bytes(archive)
        done = self._ctr("images", "import", "--snapshotter", "overlayfs", str(path))
        path.unlink()
        if done.returncode != 0:
            raise ImageError(f"ctr images import of {name} failed: {done.stderr.strip()}")

    def _import_images(self) -> None:
        pause = str(self.record["pause_image"])
        work = self.state / "images"
        work.mkdir(exist_ok=True)
        source = Path(self.record["kubernetes_source"]) / "build" / "pause" / "linux" / "pause.c"
        archive, pause_digest = oci_archive(
            pause,
            pause_layer(source, work, pause.rsplit(":", 1)[1]),
            {
                "Entrypoint": ["/pause"],
                "User": "65535:65535",
            },
        )
        self._import(pause, archive)
        env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
        archive, probe_digest = oci_archive(LOCAL_PROBE_IMAGE, busybox_layer(), {"Env": env, "Cmd": ["/bin/sh"]})
        self._import(LOCAL_PROBE_IMAGE, archive)
        for alias in PROBE_IMAGE_NAMES:
            tagged = self._ctr("images", "tag", "--force", LOCAL_PROBE_IMAGE, alias)
            if tagged.returncode != 0:
                raise ImageError(f"ctr images tag {alias} failed: {tagged.stderr.strip()}")
        busybox = subprocess.run(
            ["dpkg-query", "-W", "-f", "busybox-static ${Version}", "busybox-static"],
            capture_output=True,
            text=True,
            check=False,
        )
        self.record["images"] = {
            pause: {"digest": pause_digest, "built_from": f"{source.name} of k8s.io/kubernetes@{self.build.version}"},
            LOCAL_PROBE_IMAGE: {
                "digest": probe_digest,
                "built_from": f"Debian {busybox.stdout.strip() or 'busybox-static'} (/bin/busybox and its applets)",
                "also_named": list(PROBE_IMAGE_NAMES),
            },
        }
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
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            **kubelet_cgroup_settings(self.cgroups, self._cgroup_root(), self.build.version),
            "failSwapOn": False,
            "address": address,
            "port": ports["kubelet"],
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": ports["healthz"],
            "readOnlyPort": 0,
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": str(pki.ca_file)},
            },
            "authorization": {"mode": "Webhook"},
            "tlsCertFile": str(pki.directory / "kubelet-serving.crt"),
            "tlsPrivateKeyFile": str(pki.directory / "kubelet-serving.key"),
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
