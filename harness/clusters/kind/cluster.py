"""The kind CLI and Docker: prerequisites, cluster create/delete, logs, and the node's container list.

Flags and behaviour used here were read in kubernetes-sigs/kind's source (v0.17.0 ... v0.32.0):
- `kind create cluster --name --image --kubeconfig --wait` (pkg/cmd/kind/create/cluster/createcluster.go);
  `--wait` only waits for control-plane nodes and exits 0 even when it times out
  (pkg/cluster/internal/create/actions/waitforready/waitforready.go), so readiness is checked by the
  suite itself; without `--retain`, kind removes the node containers of a cluster that failed to come up, so
  the suite passes it, keeps kind's logs of a failed cluster and then deletes the cluster itself.
- `--kubeconfig F` makes kind write (and on delete, clean) only F, never ~/.kube/config.
- `kind delete cluster --name --kubeconfig` is idempotent (pkg/cmd/kind/delete/cluster/deletecluster.go).
- `kind export logs DIR --name` (pkg/cmd/kind/export/logs/logs.go).
- `kind version` prints `kind v0.20.0 go1.20.4 linux/amd64` (pkg/cmd/kind/version/version.go).
- Node containers are named `<cluster>-control-plane`, `<cluster>-worker`, ... and the Kubernetes node
  name is the container's hostname, i.e. the same name (providers/common/namer.go, docker/provision.go).
- Inside a node, crictl talks to containerd through /etc/crictl.yaml (images/base/files/etc/crictl.yaml).
"""

from __future__ import annotations

import os
import platform
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.base.errors import ClusterFailed, PrerequisiteMissing
from harness.base.process import Completed, InterruptedUndo, Runner, run_command, run_to_the_end
from harness.core.node_containers import JsonDict, crictl_containers

INSTALL_DOCKER = "install Docker Engine or Docker Desktop: https://docs.docker.com/get-docker/"
INSTALL_KIND = "install kind: https://kind.sigs.k8s.io/docs/user/quick-start/#installation"


# Where Docker does not answer and this is a root Linux host, the suite has two ways on of its own.
ROOT_LINUX_WAYS_FORWARD = (
    "two ways forward on this root Linux host: start a Docker engine (on hosts whose root lacks "
    "CAP_SYS_RESOURCE, nested VMs and some CI sandboxes, the suite's own: make engine), or run without "
    "Docker: make probe CLUSTER=local VERSION=<release, e.g. 1.27.3>"
)


def is_root_on_linux() -> bool:
    return platform.system() == "Linux" and os.geteuid() == 0


def check_docker(
    runner: Runner = run_command,
    which: Callable[[str], str | None] = shutil.which,
    root_on_linux: Callable[[], bool] = is_root_on_linux,
) -> None:
    """Fail within seconds when Docker is missing or its daemon does not answer."""
    if which("docker") is None:
        raise PrerequisiteMissing(f"live probes need Docker:\n  docker is not on PATH: {INSTALL_DOCKER}")
    info = runner(["docker", "info", "--format", "{{.ServerVersion}}"], 20)
    if info.returncode != 0:
        said = "docker is installed but its daemon does not answer (is Docker running?):\n  " + info.output
        if root_on_linux():
            said += "\n  " + ROOT_LINUX_WAYS_FORWARD
        raise PrerequisiteMissing(said)


def check_prerequisites(
    runner: Runner = run_command, which: Callable[[str], str | None] = shutil.which, kind_bin: str = "kind"
) -> str:
    """Fail within seconds when Docker or kind cannot be used; return the kind version line."""
    missing = []
    if which("docker") is None:
        missing.append(f"docker is not on PATH: {INSTALL_DOCKER}")
    if which(kind_bin) is None:
        missing.append(f"{kind_bin} is not on PATH: {INSTALL_KIND}")
    if missing:
        raise PrerequisiteMissing("live probes need Docker and kind:\n  " + "\n  ".join(missing))
    check_docker(runner, which)
    version = runner([kind_bin, "version"], 20)
    if version.returncode != 0:
        raise PrerequisiteMissing(f"`{kind_bin} version` failed:\n  {version.output}")
    return version.stdout.strip()


def parse_kind_version(line: str) -> str | None:
    """'kind v0.20.0 go1.20.4 linux/amd64' -> 'v0.20.0' (also '0.32.0' from `kind version -q`)."""
    match = re.search(r"v?(\d+\.\d+\.\d+(?:-[\w.]+)?)", line)
    return f"v{match[1]}" if match else None


def _hint(output: str) -> str:
    hints = [
        ("already exist for a cluster with the name", "a cluster of that name exists; pick another name or delete it"),
        ("Cannot connect to the Docker daemon", "start Docker"),
        ("permission denied", "your user cannot reach the Docker socket (add it to the docker group)"),
        ("pull", "the node image could not be pulled: check the network and the image reference"),
        ("port is already allocated", "another process holds the API server port"),
        ("cgroup", "see kind's known issues for this host (cgroup setup)"),
    ]
    for needle, hint in hints:
        if needle.lower() in output.lower():
            return hint
    return "see kind's output above and https://kind.sigs.k8s.io/docs/user/known-issues/"


@dataclass
class KindCluster:
    """A kind cluster this run creates, and deletes unless kept; never one it did not create."""

    name: str
    image: str
    kubeconfig: Path
    kind_bin: str = "kind"
    runner: Runner = run_command
    created: bool = False
    config: Path | None = None  # a kind cluster config (nodes, kubelet patches); None: one control-plane node
    # `kind delete cluster`: to its end even through Ctrl-C (harness/base/process.py), or `runner` where one is given
    undo_runner: Runner | None = None

    def __post_init__(self) -> None:
        if self.undo_runner is None:
            self.undo_runner = run_to_the_end if self.runner is run_command else self.runner

    def _delete(self, timeout: float) -> Completed:
        """`kind delete cluster` for this cluster, to its end; Ctrl-C meanwhile is raised again after it."""
        argv = [self.kind_bin, "delete", "cluster", "--name", self.name, "--kubeconfig", str(self.kubeconfig)]
        assert self.undo_runner is not None
        try:
            result = self.undo_runner(argv, timeout)
        except InterruptedUndo as stop:
            self.created = self.created and stop.completed.returncode != 0
            raise
        if result.returncode == 0:
            self.created = False
        return result

    def create(self, logs_dir: Path, timeout: float = 600) -> None:
        argv = [
            self.kind_bin,
            "create",
            "cluster",
            "--name",
            self.name,
            "--image",
            self.image,
            "--kubeconfig",
            str(self.kubeconfig),
            "--wait",
            "120s",
            "--retain",  # a cluster that fails to come up stays until its logs are kept; deleted below
            *(["--config", str(self.config)] if self.config else []),
        ]
        try:
            result = self.runner(argv, timeout)
        except BaseException:
            # Interrupted (Ctrl-C, CI's SIGTERM) while kind was creating the cluster: whatever exists under
            # this run's unique name is a half-created cluster of ours; remove it before giving up.
            self._delete(180)
            raise
        if result.returncode == 0:
            self.created = True
            return
        message = f"kind could not create cluster {self.name} from {self.image}:\n{result.output}"
        message += f"\nhint: {_hint(result.output)}"
        if "already exist for a cluster with the name" not in result.output:
            # Whatever kind left behind is ours: keep its logs, then remove it.
            exported = self.export_logs(logs_dir)
            self._delete(120)
            message += f"\nkind's logs: {exported}"
        raise ClusterFailed(message)

    def wait_ready(self, wait: Callable[[], list[str]], logs_dir: Path) -> list[str]:
        """Wait for the nodes (kind's own --wait does not fail); if they never get Ready, keep kind's logs and say so.

        `wait` raises an exception whose message says what was last seen (harness.clusters.lifecycle.wait_nodes_ready).
        The caller deletes the cluster afterwards, as after any failure.
        """
        try:
            return wait()
        except (TimeoutError, RuntimeError) as err:
            exported = self.export_logs(logs_dir)
            raise ClusterFailed(
                f"kind created cluster {self.name} from {self.image}, but its nodes never became Ready: {err}\n"
                "hint: the kubelet's log of each node is in kind's logs (<node>/kubelet.log); a node image much older "
                "than this host's kernel or cgroup setup is a common cause (see kind's known issues)\n"
                f"kind's logs: {exported}"
            ) from err

    def delete(self) -> Completed | None:
        if not self.created:
            return None
        return self._delete(180)

    def export_logs(self, directory: Path) -> str:
        result = self.runner([self.kind_bin, "export", "logs", str(directory), "--name", self.name], 180)
        return str(directory) if result.returncode == 0 else f"(kind export logs failed: {result.output})"

    def node_containers(self, node: str) -> list[JsonDict]:
        return list_node_containers(node, self.runner)

    def preload(self, images: list[str], nodes: list[str]) -> dict[str, str]:
        """Load the probes' images that Docker has locally into the nodes, so they need not be pulled again.

        `kind load docker-image` saves the image with `docker save` and imports it into each node's containerd
        (pkg/cmd/kind/load/docker-image, nodeutils.LoadImageArchive). The manifests pin images by digest; the
        kubelet finds a loaded image only if the node's CRI resolves that digest, which depends on what
        `docker save` exported (the multi-arch index with Docker's containerd image store, one platform's
        manifest otherwise). So each image is checked in the nodes afterwards with `crictl inspecti`, as kind
        itself looks images up (pkg/cluster/nodeutils/util.go ImageID), and the
        outcome is reported per image: preloaded, loaded but not resolvable by its digest (the node will pull
        it), not present locally, or the load's error. Nothing here can fail the run.
        """
        outcome: dict[str, str] = {}
        for image in images:
            if nodes and not self._unresolved(image, nodes):
                outcome[image] = "in the node image already"  # e.g. the suite's plp-node images preload it
                continue
            if self.runner(["docker", "image", "inspect", image], 60).returncode != 0:
                outcome[image] = "not in local Docker: the node pulls it"
                continue
            loaded = self.runner([self.kind_bin, "load", "docker-image", image, "--name", self.name], 300)
            if loaded.returncode != 0:
                outcome[image] = f"kind load failed: {loaded.output.strip()[:300]}"
                continue
            unresolved = self._unresolved(image, nodes)
            outcome[image] = (
                "preloaded"
                if not unresolved
                else f"loaded, but {', '.join(unresolved)} cannot resolve it by digest: the node pulls it"
            )
        return outcome

    def _unresolved(self, image: str, nodes: list[str]) -> list[str]:
        """The nodes whose CRI cannot resolve the image (`crictl inspecti` fails)."""
        return [n for n in nodes if self.runner(["docker", "exec", n, "crictl", "inspecti", image], 60).returncode]


def list_node_containers(node: str, runner: Runner = run_command) -> list[JsonDict]:
    """Every container on a kind node, running or exited, as crictl reports it (`crictl ps -a -o json`)."""
    result = runner(["docker", "exec", node, "crictl", "ps", "-a", "-o", "json"], 60)
    if result.returncode != 0:
        raise RuntimeError(f"could not list containers on node {node}: {result.output}")
    return crictl_containers(result.stdout)
