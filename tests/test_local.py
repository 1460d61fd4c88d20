"""The local cluster (harness/clusters/local/) offline: images, certificates, node access, stopping from a record,
and the checks that refuse before anything slow starts (its build: tests/test_gobuild.py).

Nothing here builds Kubernetes or starts a component: `go` and `ctr` are stood in for where a test needs
them (each says so). The live path is what `make probe VERSION=1.27.3 CLUSTER=local` runs (docs/local-provider.md).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from kubernetes import config

from harness.base.errors import LocalClusterError
from harness.clusters.local import cluster as local
from harness.clusters.local import clusters as local_clusters
from harness.clusters.local import containerd, host, teardown
from harness.clusters.local.pki import Pki
from harness.doors import cli
from harness.doors.commands import refusal
from harness.gobuild.go import BuildError
from harness.gobuild.kubernetes import Build
from harness.nodeimage.oci_images import FileEntry, layer_tar, oci_archive, pause_tag

# ------------------------------------------------------------------------------------------ images


def _members(archive: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_an_oci_archive_is_consistent_and_named_for_ctr_import() -> None:
    layer = layer_tar([FileEntry("bin"), FileEntry("bin/hello", b"#!/bin/sh\n"), FileEntry("bin/sh", link="hello")])
    archive, digest = oci_archive("docker.io/plp-local/test:1", layer, {"Cmd": ["/bin/sh"]})
    files = _members(archive)
    index = json.loads(files["index.json"])
    descriptor = index["manifests"][0]
    assert descriptor["digest"] == digest
    assert descriptor["annotations"]["io.containerd.image.name"] == "docker.io/plp-local/test:1"
    manifest = files[f"blobs/sha256/{digest.split(':')[1]}"]
    assert hashlib.sha256(manifest).hexdigest() == digest.split(":")[1]
    image_config = json.loads(files[f"blobs/sha256/{json.loads(manifest)['config']['digest'].split(':')[1]}"])
    assert image_config["rootfs"]["diff_ids"] == [f"sha256:{hashlib.sha256(layer).hexdigest()}"]
    assert oci_archive("docker.io/plp-local/test:1", layer, {"Cmd": ["/bin/sh"]})[1] == digest  # reproducible


def test_the_pause_tag_is_kubeadms_constant(tmp_path: Path) -> None:
    constants = tmp_path / "cmd" / "kubeadm" / "app" / "constants"
    constants.mkdir(parents=True)
    (constants / "constants.go").write_text('const (\n\t// PauseVersion ...\n\tPauseVersion = "3.9"\n)\n')
    assert pause_tag(tmp_path) == "3.9"


# ---------------------------------------------------------------------------------------- certificates


def test_certificates_are_signed_by_the_clusters_ca_with_their_identities(
    tmp_path: Path, keys_from_a_pool: None
) -> None:
    pki = Pki(tmp_path)
    cert_file, _ = pki.issue("kubelet", "system:node:n", "system:nodes", server=True, ips=("192.0.2.2",))
    ca = x509.load_pem_x509_certificate(pki.ca_file.read_bytes())
    cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
    cert.verify_directly_issued_by(ca)
    assert cert.subject.rfc4514_string() == "CN=system:node:n,O=system:nodes"
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["192.0.2.2"]
    assert oct((tmp_path / "kubelet.key").stat().st_mode & 0o777) == "0o600"


def test_every_private_key_is_readable_by_its_owner_only_even_where_a_file_was_left(
    tmp_path: Path, keys_from_a_pool: None
) -> None:
    (tmp_path / "sa.key").write_text("left by an earlier cluster")
    (tmp_path / "sa.key").chmod(0o644)
    pki = Pki(tmp_path)
    private, public = pki.service_account_keys()
    keys = [pki.ca_key_file, private, pki.issue("admin", "kubernetes-admin")[1]]
    assert [oct(key.stat().st_mode & 0o777) for key in keys] == ["0o600"] * 3
    assert private.read_bytes().startswith(b"-----BEGIN") and public.read_bytes().startswith(b"-----BEGIN PUBLIC KEY")
    assert pki.ca_key_file == tmp_path / "ca.key" and pki.ca_file == tmp_path / "ca.crt"


def test_kubeconfigs_load_with_the_official_client(tmp_path: Path, keys_from_a_pool: None) -> None:
    pki = Pki(tmp_path)
    cert, key = pki.issue("admin", "kubernetes-admin", "system:masters")
    path = pki.kubeconfig(tmp_path / "admin.kubeconfig", "https://192.0.2.2:6443", "admin", cert, key, "plp-x")
    contexts, current = config.list_kube_config_contexts(config_file=str(path))
    assert current["name"] == "plp-x" and [c["name"] for c in contexts] == ["plp-x"]


# ---------------------------------------------------------------------------------------- node access


CTR = """#!{python} -IS
import sys
args = sys.argv[1:]
assert args[:4] == ["--address", {socket!r}, "--namespace", "k8s.io"], args
if args[4:6] == ["containers", "list"]:
    print("aaa111\\nbbb222\\nccc333")
elif args[4:6] == ["tasks", "list"]:
    print("TASK      PID     STATUS\\naaa111    4242    RUNNING\\nccc333    0       STOPPED")
"""


def test_the_nodes_containers_come_from_the_suites_containerd(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A stand-in `ctr` (not containerd's) prints a container list and a task list as ctr 1.6 does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    socket_path = str(tmp_path / "state" / "containerd" / "containerd.sock")
    (bin_dir / "ctr").write_text(CTR.format(python=sys.executable, socket=socket_path))
    (bin_dir / "ctr").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    listed = containerd.list_containers(tmp_path / "state", host.NODE_NAME)
    assert listed == [
        {"id": "aaa111", "state": "CONTAINER_RUNNING"},
        {"id": "bbb222", "state": "CONTAINER_EXITED"},
        {"id": "ccc333", "state": "CONTAINER_EXITED"},
    ]
    with pytest.raises(RuntimeError, match="has one node"):
        containerd.list_containers(tmp_path / "state", "other-node")


# ---------------------------------------------------------------------------------------- stopping


def test_stopping_from_the_record_ends_its_processes_and_removes_its_folder(tmp_path: Path) -> None:
    state = tmp_path / "plp-1-27-abcd"
    (state / "containerd").mkdir(parents=True)
    sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
    record = {"pids": {"etcd": sleeper.pid, "kube-apiserver": 2**22 + 7}}  # the second one is long gone
    (state / "cluster.json").write_text(json.dumps(record))
    assert teardown.running_clusters(tmp_path) == ["plp-1-27-abcd"]
    report = teardown.stop_cluster(state)
    assert sleeper.wait(timeout=600) is not None
    assert report.processes == {"kube-apiserver": "not running", "etcd": "stopped"}
    assert report.errors == []
    assert not state.exists()
    assert teardown.running_clusters(tmp_path) == []
    assert teardown.stop_cluster(state).errors == []  # twice is harmless


def test_a_second_local_cluster_is_refused_while_one_runs(tmp_path: Path) -> None:
    running = tmp_path / "plp-1-26-0001"
    running.mkdir()
    (running / "cluster.json").write_text(json.dumps({"pids": {"kubelet": os.getpid()}}))
    built = Build("v1.27.3", tmp_path, {})
    second = local.LocalCluster("plp-1-27-0002", built, tmp_path / "logs", root=tmp_path)
    with pytest.raises(LocalClusterError, match=r"already running on this host \(plp-1-26-0001\)"):
        second.start()
    assert not (tmp_path / "plp-1-27-0002").exists()


def test_a_host_that_cannot_run_it_is_told_why_before_anything_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    monkeypatch.setattr("shutil.which", lambda name: None if name == "etcd" else f"/usr/bin/{name}")
    problems = host.check_host()
    assert "run as root" in problems[0]
    assert "etcd is not on PATH (apt-get install etcd-server)" in problems


# ---------------------------------------------------------------------------------------- make probe


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--version", "1.27"], "give a full Kubernetes release to build (e.g. 1.27.3"),
        (["--version", "1.27.3", "--image", "kindest/node:v1.27.3"], "IMAGE is a kind node image"),
        (["--version", "nonsense"], "nonsense"),
    ],
)
def test_bad_local_input_is_refused_in_seconds(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_clusters, "build_kubernetes", lambda v: pytest.fail("nothing may be built"))
    assert cli.main(["probe", "--cluster", "local", *argv]) == refusal.BAD_INPUT
    assert expected in capsys.readouterr().err


def test_a_host_that_cannot_run_a_local_cluster_exits_3_naming_each_problem(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(host, "check_host", lambda: ["x is not on PATH (apt-get install x)"])
    monkeypatch.setattr(local_clusters, "build_kubernetes", lambda v: pytest.fail("nothing may be built"))
    assert cli.main(["probe", "--cluster", "local", "--version", "1.27.3"]) == refusal.PREREQUISITE_MISSING
    assert "a local cluster cannot run here:\n  x is not on PATH" in capsys.readouterr().err


def host_ready_and_nothing_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host that could run a local cluster, with Go, and no build of the version yet."""
    monkeypatch.setattr(host, "check_host", lambda: [])
    monkeypatch.setattr(teardown, "running_clusters", lambda: [])
    monkeypatch.setattr(local_clusters, "existing_build", lambda v: None)
    monkeypatch.setattr(local_clusters, "check_go", lambda: "go version go1.26.8 linux/amd64")


def test_a_version_the_proxy_does_not_serve_is_bad_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(version: str) -> dict[str, Any]:
        raise BuildError("the Go module proxy does not serve k8s.io/kubernetes@v1.27.99: 404")

    host_ready_and_nothing_built(monkeypatch)
    monkeypatch.setattr(local_clusters, "resolve_module", refuse)
    monkeypatch.setattr(local_clusters, "build_kubernetes", lambda v: pytest.fail("nothing may be built"))
    assert cli.main(["probe", "--cluster", "local", "--version", "1.27.99"]) == refusal.BAD_INPUT
    assert "does not serve k8s.io/kubernetes@v1.27.99" in capsys.readouterr().err


def test_a_failed_build_shows_the_end_of_its_log(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(version: str) -> Build:
        raise BuildError("building Kubernetes v1.27.3 failed (go build); last lines of x:\nundefined: y")

    host_ready_and_nothing_built(monkeypatch)
    monkeypatch.setattr(local_clusters, "resolve_module", lambda v: {})
    monkeypatch.setattr(local_clusters, "build_kubernetes", fail)
    assert cli.main(["probe", "--cluster", "local", "--version", "1.27.3"]) == 1
    assert "undefined: y" in capsys.readouterr().err


def test_a_component_that_does_not_come_up_is_reported_with_its_log_tail(tmp_path: Path) -> None:
    """A stand-in component (sh, not a Kubernetes binary) that prints and exits while the cluster waits for it."""
    built = Build("v1.27.3", tmp_path, {})
    cluster = local.LocalCluster("plp-1-27-0003", built, tmp_path / "logs", root=tmp_path)
    cluster.state.mkdir(parents=True)
    cluster.logs.mkdir()
    cluster.record = {"pids": {}}
    cluster._spawn("kube-apiserver", ["sh", "-c", "echo 'E1123 open /x/apiserver.crt: no such file'; exit 1"])
    with pytest.raises(LocalClusterError) as err:
        cluster._wait_for("kube-apiserver", lambda: False, 10, "ready (/readyz)")
    assert "kube-apiserver exited while starting" in str(err.value)
    assert "open /x/apiserver.crt: no such file" in str(err.value)
    assert json.loads((cluster.state / "cluster.json").read_text())["pids"]["kube-apiserver"] > 0


def test_a_mount_listed_by_its_real_path_is_found_through_a_symlinked_prefix(tmp_path: Path) -> None:
    """/var/run/netns is /run/netns, and the kernel lists a pod's network namespace under the latter: matched by the
    given path only, the namespaces of pods still there at teardown were never unmounted (10 left on this host)."""
    from harness.clusters.local.teardown import _mounts_under

    (tmp_path / "run" / "netns").mkdir(parents=True)
    (tmp_path / "var-run").symlink_to(tmp_path / "run")
    netns = tmp_path / "var-run" / "netns" / "cni-1"
    netns.touch()
    mounts = f"nsfs {tmp_path}/run/netns/cni-1 nsfs rw 0 0\nproc /proc proc rw 0 0\n"
    assert _mounts_under([netns], mounts) == [f"{tmp_path}/run/netns/cni-1"]
    assert _mounts_under([tmp_path / "elsewhere"], mounts) == []
