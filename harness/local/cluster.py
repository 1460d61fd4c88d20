"""A one-node Kubernetes cluster run as processes on this Linux host (root), from binaries built here.

etcd (Debian's), a containerd of the suite's own (Debian's containerd and runc, its own root, state, socket
and CNI configuration; Docker's containerd is never touched), the control plane and a kubelet, with
certificates made for this cluster. Everything the cluster makes lives under `<root>/<name>/`
(`/var/lib/pod-lifecycle-probes/<name>` by default), and `cluster.json` there lists what `stop()` must undo:
process ids, the cgroup root, the CNI bridge, the kernel settings the kubelet changes (restored), and the
host paths the kubelet and containerd write to outside the state folder (/var/log/pods, /var/run/netns).

Host facts this relies on (checked on this workplace's machines, ../shared/research/live-cluster.md):
root lacks CAP_SYS_RESOURCE there, so a negative oom_score_adj is refused: containerd's CRI runs with
`restrict_oom_score_adj = true`. Only one local cluster runs on a host at a time: a kubelet removes the
/var/log/pods folders of pods its runtime does not know, so two would delete each other's logs.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from harness.local.build import Build, download_module, go_environment
from harness.local.images import ImageError, busybox_layer, oci_archive, pause_layer, pause_tag
from harness.versions import KubeVersion

if TYPE_CHECKING:  # imported where the certificates are made: cryptography is slow to import, and most never need it
    from harness.local.pki import Pki

JsonDict = dict[str, Any]
DEFAULT_ROOT = Path(os.environ.get("PLP_LOCAL_ROOT", "/var/lib/pod-lifecycle-probes"))
NODE_NAME = "plp-local-node"
PROBE_IMAGE_NAMES = (
    "docker.io/library/alpine:3.18.4@sha256:eece025e432126ce23f223450a0326fbebde39cdf496a85d8c016293fc851978",
    "docker.io/library/alpine@sha256:eece025e432126ce23f223450a0326fbebde39cdf496a85d8c016293fc851978",
)
LOCAL_PROBE_IMAGE = "docker.io/plp-local/busybox:debian"
# Kernel settings the kubelet writes when they differ (pkg/kubelet/cm/container_manager_linux.go
# setupKernelTunables); read before start, written back at stop.
KUBELET_SYSCTLS = (
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
)
HOST_PATHS_WRITTEN = (Path("/var/log/pods"), Path("/var/log/containers"), Path("/var/run/netns"))
REQUIRED_HOST_TOOLS = {
    "containerd": "apt-get install containerd",
    "runc": "apt-get install runc",
    "ctr": "apt-get install containerd",
    "etcd": "apt-get install etcd-server",
    "gcc": "apt-get install gcc libc6-dev",
}
CNI_PLUGINS = Path("/usr/lib/cni")


class LocalClusterError(RuntimeError):
    """The local cluster could not be made or did not come up; the message carries the component's log tail."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def node_ip() -> str:
    """The address of the interface of the default route: the kubelet refuses a loopback node IP."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("192.0.2.1", 9))  # TEST-NET-1; connect() on UDP sends nothing
            address = str(sock.getsockname()[0])
        except OSError:
            address = ""
    if not address or address.startswith("127."):
        raise LocalClusterError("the local cluster needs a non-loopback IPv4 address (a default route); none found")
    return address


def check_host() -> list[str]:
    """Why a local cluster cannot run here (empty when it can). Runs in a second, before any build."""
    problems = []
    if platform.system() != "Linux":
        return [f"a local cluster runs only on Linux, not {platform.system()}"]
    if os.geteuid() != 0:
        problems.append("a local cluster runs its kubelet and containerd as root: run as root (sudo)")
    for tool, install in REQUIRED_HOST_TOOLS.items():
        if shutil.which(tool) is None:
            problems.append(f"{tool} is not on PATH ({install})")
    for plugin in ("bridge", "host-local", "loopback"):
        if not (CNI_PLUGINS / plugin).is_file():
            problems.append(f"{CNI_PLUGINS / plugin} is missing (apt-get install containernetworking-plugins)")
    if not Path("/bin/busybox").is_file():
        problems.append("/bin/busybox is missing (apt-get install busybox-static)")
    if not Path("/sys/fs/cgroup").is_dir():
        problems.append("no /sys/fs/cgroup: cgroups are not mounted")
    return problems


@dataclass(frozen=True)
class HostCgroups:
    """How this host runs cgroups, and the cgroup settings the kubelet and containerd take from it.

    The driver follows PID 1: under systemd, cgroups belong to systemd and the kubelet and runc must ask it
    (the systemd driver, `SystemdCgroup = true`); elsewhere they write the cgroup file system (cgroupfs).
    """

    version: int  # 1 (one hierarchy per controller) or 2 (unified)
    init: str  # PID 1's name

    @property
    def driver(self) -> str:
        return "systemd" if self.init == "systemd" else "cgroupfs"

    def root_directory(self, kubelet_root: str) -> str:
        """Where the kubelet's cgroupRoot (`/plp-1-27-ab12`) is in the cgroup file system: the same path with
        cgroupfs; with systemd the slice the kubelet names it (`/plp_1_27_ab12.slice`: `-` nests slices)."""
        if self.driver != "systemd":
            return kubelet_root
        return "/" + kubelet_root.strip("/").replace("-", "_") + ".slice"

    def to_json(self) -> JsonDict:
        return {
            "version": self.version,
            "pid1": self.init,
            "driver": self.driver,
            "containerd_systemd_cgroup": self.driver == "systemd",
            "decided_from": "cgroup.controllers in the cgroup mount (v2) and PID 1's name (systemd driver)",
        }


def host_cgroups(cgroup_mount: Path = Path("/sys/fs/cgroup"), pid1_name: Path = Path("/proc/1/comm")) -> HostCgroups:
    """Read the host's cgroup version (a unified mount has cgroup.controllers) and whether systemd is PID 1."""
    version = 2 if (cgroup_mount / "cgroup.controllers").is_file() else 1
    try:
        init = pid1_name.read_text().strip()
    except OSError:
        init = "unknown"
    return HostCgroups(version, init)


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie of ours counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def stop_process(pid: int, grace_s: float = 15) -> str:
    """SIGTERM, then SIGKILL after `grace_s`: 'stopped', 'killed' or 'not running'."""
    if not _alive(pid):
        return "not running"
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        if not _alive(pid):
            return "stopped"
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    return "killed"


def _cgroup_hierarchies() -> list[Path]:
    """Every mounted cgroup hierarchy (v1: one per controller group; v2: the unified one)."""
    out = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] in ("cgroup", "cgroup2"):
            out.append(Path(fields[1]))
    return out


def _remove_cgroup_tree(top: Path) -> list[str]:
    """rmdir a cgroup and its children, deepest first; what could not be removed."""
    if not top.is_dir():
        return []
    left = []
    for directory in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        try:
            directory.rmdir()
        except OSError as err:
            left.append(f"{directory}: {err.strerror}")
    try:
        top.rmdir()
    except OSError as err:
        left.append(f"{top}: {err.strerror}")
    return left


def _mounts_under(prefixes: list[Path]) -> list[str]:
    targets = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        target = line.split()[1].replace("\\040", " ")
        if any(target == str(p) or target.startswith(f"{p}/") for p in prefixes):
            targets.append(target)
    return sorted(set(targets), key=len, reverse=True)


def _listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []


@dataclass
class StopReport:
    """What stopping a local cluster did, and what it could not undo."""

    name: str
    processes: dict[str, str] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> JsonDict:
        return {"name": self.name, "processes": self.processes, "removed": self.removed, "errors": self.errors}


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
            "kubernetes": self.build.version,
            "build": self.build.record,
            "node": NODE_NAME,
            "host_paths_before": {str(p): _listing(p) for p in HOST_PATHS_WRITTEN},
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
        (self.state / "cluster.json").write_text(json.dumps(self.record, indent=1) + "\n")

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
        self._save()
        return process.pid

    def _wait_for(self, component: str, ready: Callable[[], bool], timeout_s: float, what: str) -> None:
        pid = self.record["pids"][component]
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if ready():
                return
            if not _alive(pid):
                raise LocalClusterError(
                    f"{component} exited while starting; last lines of {self.logs / (component + '.log')}:\n"
                    + _tail(self.logs / f"{component}.log")
                )
            time.sleep(0.5)
        raise LocalClusterError(
            f"{component} not {what} after {timeout_s:.0f}s; last lines of {self.logs / (component + '.log')}:\n"
            + _tail(self.logs / f"{component}.log")
        )

    def _start_all(self, timeout_s: float) -> None:
        ports = {k: _free_port() for k in ("etcd", "etcd_peer", "apiserver", "kcm", "scheduler", "kubelet", "healthz")}
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
        for hierarchy in _cgroup_hierarchies():
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
                f"containerd's CRI plugin is not ok: {cri}; its log ends:\n{_tail(self.logs / 'containerd.log')}"
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
        from harness.local.pki import Pki

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
        from harness.local.pki import Pki

        pki = Pki(self.state / "pki" / "etcd")
        pki.issue("etcd-server", "plp-etcd", server=True, client=True, dns=("localhost",), ips=("127.0.0.1",))
        pki.issue("apiserver-etcd-client", "kube-apiserver-etcd-client")
        return pki

    def _start_etcd(self, pki: Pki, ports: dict[str, int]) -> None:
        self._spawn("etcd", etcd_argv(self.state / "etcd", pki.directory, ports))
        client_cert, client_key = (pki.directory / f"apiserver-etcd-client.{ext}" for ext in ("crt", "key"))
        health = f"https://127.0.0.1:{ports['etcd']}/health"
        self._wait_for("etcd", lambda: _https_ok(health, pki.ca_file, client_cert, client_key), 30, "healthy")
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
            lambda: _https_ok(f"{server}/readyz", pki.ca_file, p / "admin.crt", p / "admin.key"),
            90,
            "ready (/readyz)",
        )

    def _start_controllers(self, pki: Pki, ports: dict[str, int]) -> None:
        kcm = str(self.state / "controller-manager.kubeconfig")
        self._spawn(
            "kube-controller-manager",
            [
                str(self.build.binary("kube-controller-manager")),
                f"--kubeconfig={kcm}",
                f"--authentication-kubeconfig={kcm}",
                f"--authorization-kubeconfig={kcm}",
                f"--service-account-private-key-file={pki.directory / 'sa.key'}",
                f"--root-ca-file={pki.ca_file}",
                f"--cluster-signing-cert-file={pki.ca_file}",
                f"--cluster-signing-key-file={pki.ca_key_file}",
                "--use-service-account-credentials=true",
                "--service-cluster-ip-range=10.96.0.0/24",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={ports['kcm']}",
                *insecure_ports_off(self._help("kube-controller-manager")),
                "--v=2",
            ],
        )
        scheduler = str(self.state / "scheduler.kubeconfig")
        self._spawn(
            "kube-scheduler",
            [
                str(self.build.binary("kube-scheduler")),
                f"--kubeconfig={scheduler}",
                f"--authentication-kubeconfig={scheduler}",
                f"--authorization-kubeconfig={scheduler}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={ports['scheduler']}",
                *insecure_ports_off(self._help("kube-scheduler")),
                "--v=2",
            ],
        )

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
            "kubelet", lambda: _http_ok(f"http://127.0.0.1:{ports['healthz']}/healthz"), 60, "healthy (/healthz)"
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


def kubelet_cgroup_settings(cgroups: HostCgroups, cgroup_root: str, version: str) -> JsonDict:
    """The kubelet's cgroup fields for this host: its driver, the suite's root, and on cgroup v1 from 1.31
    `failCgroupV1: false` (from 1.35 the kubelet refuses a v1 host unless told; the field is unknown before)."""
    settings: JsonDict = {"cgroupDriver": cgroups.driver, "cgroupRoot": cgroup_root}
    if cgroups.version == 1 and KubeVersion.parse(version).satisfies(">=1.31.0-alpha.0"):
        settings["failCgroupV1"] = False
    return settings


def containerd_runc_cgroup_option(cgroups: HostCgroups) -> str:
    """runc's cgroup option in containerd's CRI config: the same driver as the kubelet's, or pods fail to start."""
    return f"SystemdCgroup = {'true' if cgroups.driver == 'systemd' else 'false'}"


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


def insecure_ports_off(help_text: str) -> list[str]:
    """Turn off the plain-HTTP port of releases that still open one by default, as their --help shows.

    Unauthenticated: the API server's --insecure-port (8080 on loopback before 1.20), the controller
    manager's and scheduler's --port (10252 / 10251 on every address before 1.22 / 1.23).
    """
    flags = re.findall(r"^\s*(--insecure-port|--port)\b", help_text, re.M)
    return [f"{flag}=0" for flag in dict.fromkeys(flags)]


def _http_ok(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status) == 200
    except OSError:
        return False


def _https_ok(url: str, ca: Path, cert: Path, key: Path) -> bool:
    import ssl
    import urllib.request

    context = ssl.create_default_context(cafile=str(ca))
    context.load_cert_chain(str(cert), str(key))
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as response:
            return int(response.status) == 200
    except OSError:
        return False


def ctr(state: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Debian's `ctr` against the containerd of the local cluster whose state folder is `state`, CRI namespace."""
    return subprocess.run(
        ["ctr", "--address", str(state / "containerd" / "containerd.sock"), "--namespace", "k8s.io", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def list_containers(state: Path, node: str) -> list[JsonDict]:
    """The node's containers as crictl would list them: {"id", "state": CONTAINER_RUNNING/EXITED}.

    Read from the suite's containerd with Debian's `ctr` (crictl's Go module is not served by the proxy this
    suite reaches): a CRI container is a containerd container under the CRI's id; it has a running task while
    it runs (the CRI deletes the task when the container exits, and the container when it is removed).
    """
    if node != NODE_NAME:
        raise RuntimeError(f"the local cluster has one node, {NODE_NAME}, not {node}")
    containers = ctr(state, "containers", "list", "--quiet", timeout=30)
    tasks = ctr(state, "tasks", "list", timeout=30)
    if containers.returncode != 0 or tasks.returncode != 0:
        raise RuntimeError(f"ctr could not list the node's containers: {containers.stderr or tasks.stderr}")
    running = {fields[0] for fields in (line.split() for line in tasks.stdout.splitlines()[1:]) if "RUNNING" in fields}
    return [
        {"id": cid, "state": "CONTAINER_RUNNING" if cid in running else "CONTAINER_EXITED"}
        for cid in containers.stdout.split()
    ]


def local_node_lister(state: Path) -> Callable[[str], list[JsonDict]]:
    """Node access for a process that did not start the cluster (make probe PARALLEL=N's workers)."""
    return lambda node: list_containers(state, node)


def running_clusters(root: Path = DEFAULT_ROOT) -> list[str]:
    """Local clusters with a recorded process still alive."""
    found = []
    for record in sorted(root.glob("*/cluster.json")) if root.is_dir() else []:
        with contextlib.suppress(OSError, ValueError):
            pids = json.loads(record.read_text()).get("pids") or {}
            if any(_alive(int(pid)) for pid in pids.values()):
                found.append(record.parent.name)
    return found


def leftover_clusters(root: Path = DEFAULT_ROOT) -> list[Path]:
    return sorted(p.parent for p in root.glob("*/cluster.json")) if root.is_dir() else []


def _shims_of(socket_path: str) -> list[int]:
    """containerd-shim processes started by the containerd at `socket_path` (their command line names it)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and b"containerd-shim" in argv[0] and socket_path.encode() in argv:
            pids.append(int(proc.name))
    return pids


def stop_cluster(state: Path) -> StopReport:
    """Stop a local cluster from its cluster.json and remove everything it made. Safe to run twice."""
    report = StopReport(state.name)
    try:
        record: JsonDict = json.loads((state / "cluster.json").read_text())
    except (OSError, ValueError):
        record = {"pids": {}}
    pids: dict[str, int] = {k: int(v) for k, v in (record.get("pids") or {}).items()}
    socket_path = str(state / "containerd" / "containerd.sock")
    # 1. controllers first (nothing recreates pods), then the kubelet, then the pods' processes through
    #    containerd (tasks killed), then containerd, the API server and etcd.
    for component in ("kube-controller-manager", "kube-scheduler", "kubelet"):
        if component in pids:
            report.processes[component] = stop_process(pids[component])
    if "containerd" in pids and _alive(pids["containerd"]):
        _remove_all_pods(state, report)
    for component in ("containerd", "kube-apiserver", "etcd"):
        if component in pids:
            report.processes[component] = stop_process(pids[component])
    for pid in _shims_of(socket_path):
        report.processes[f"containerd-shim {pid}"] = stop_process(pid, grace_s=5)
    # 2. mounts under the state folder (container rootfs, sandbox shm, kubelet volumes) and the network
    #    namespaces the CRI made under /var/run/netns while this cluster ran
    before = record.get("host_paths_before") or {}
    netns_dir = Path("/var/run/netns")
    # only what appeared while this cluster ran: a record without the listing from before removes nothing there
    known = before.get(str(netns_dir))
    new_netns = [netns_dir / n for n in _listing(netns_dir) if known is not None and n not in known]
    for target in _mounts_under([state, *new_netns]):
        done = subprocess.run(["umount", "--lazy", target], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            report.errors.append(f"umount {target}: {done.stderr.strip()}")
    for path in new_netns:
        with contextlib.suppress(OSError):
            path.unlink()
            report.removed.append(str(path))
    # 3. pod log folders the kubelet wrote outside the state folder
    for host_dir in (Path("/var/log/pods"), Path("/var/log/containers")):
        listed_before = before.get(str(host_dir))
        if listed_before is None:
            continue
        for name in _listing(host_dir):
            if name not in listed_before:
                written = host_dir / name
                if written.is_symlink() or written.is_file():
                    written.unlink()
                else:
                    shutil.rmtree(written, ignore_errors=True)
                report.removed.append(str(written))
    # 4. the cgroups, the bridge, the kernel settings
    if cgroup_root := record.get("cgroup_directory") or record.get("cgroup_root"):
        if (record.get("cgroups") or {}).get("driver") == "systemd":
            # the kubelet's slices are systemd units: stopping the top one stops and removes those under it
            subprocess.run(["systemctl", "stop", cgroup_root.strip("/")], capture_output=True, check=False)
        for hierarchy in _cgroup_hierarchies():
            report.errors += _remove_cgroup_tree(hierarchy / cgroup_root.strip("/"))
        report.removed.append(f"cgroup {cgroup_root}")
    if (bridge := record.get("bridge")) and Path(f"/sys/class/net/{bridge}").exists():
        done = subprocess.run(["ip", "link", "delete", bridge], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            report.errors.append(f"ip link delete {bridge}: {done.stderr.strip()}")
        else:
            report.removed.append(f"network device {bridge}")
    for key, value in (record.get("sysctls_before") or {}).items():
        path = Path("/proc/sys", key)
        if path.read_text().strip() != value:
            try:
                path.write_text(value)
                report.removed.append(f"sysctl {key} restored to {value}")
            except OSError as err:
                report.errors.append(f"restore sysctl {key}={value}: {err}")
    # 5. the state folder itself
    if not report.errors:
        shutil.rmtree(state, ignore_errors=True)
        if state.exists():
            report.errors.append(f"{state} could not be removed")
        else:
            report.removed.append(str(state))
    return report


def _remove_all_pods(state: Path, report: StopReport) -> None:
    """Kill every task of the suite's containerd and remove its containers, so nothing of the pods runs on."""
    tasks = [line.split()[0] for line in ctr(state, "tasks", "list").stdout.splitlines()[1:] if line.split()]
    for task in tasks:
        ctr(state, "tasks", "kill", "--signal", "SIGKILL", task)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(
        "RUNNING" in line for line in ctr(state, "tasks", "list").stdout.splitlines()[1:]
    ):
        time.sleep(0.5)
    for task in tasks:
        ctr(state, "tasks", "delete", "--force", task)
    containers = ctr(state, "containers", "list", "--quiet").stdout.split()
    for container in containers:
        ctr(state, "containers", "delete", container)
    if tasks or containers:
        report.removed.append(f"{len(tasks)} tasks killed, {len(containers)} containers removed")
