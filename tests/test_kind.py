"""The kind/Docker wrapper (harness/clusters/kind/cluster.py), the kind and docker processes stood in by FakeRunner."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.base.errors import ClusterFailed, PrerequisiteMissing
from harness.base.process import Completed, run_command
from harness.clusters.kind.cluster import KindCluster, check_prerequisites, parse_kind_version
from harness.core.node_containers import container_state_on_node
from tests.doubles import FakeRunner, failed, ok


def on_path(*present: str) -> object:
    return lambda name: f"/usr/bin/{name}" if name in present else None


def test_missing_docker_and_kind_are_both_named_with_what_to_install() -> None:
    with pytest.raises(PrerequisiteMissing) as err:
        check_prerequisites(runner=FakeRunner(), which=on_path())  # type: ignore[arg-type]
    message = str(err.value)
    assert "docker is not on PATH: install Docker" in message
    assert "kind is not on PATH: install kind: https://kind.sigs.k8s.io" in message


def test_a_docker_daemon_that_does_not_answer_is_reported_with_dockers_words() -> None:
    runner = FakeRunner({"docker info": failed("Cannot connect to the Docker daemon at unix:///var/run/docker.sock")})
    with pytest.raises(PrerequisiteMissing) as err:
        check_prerequisites(runner=runner, which=on_path("docker", "kind"))  # type: ignore[arg-type]
    assert "docker is installed but its daemon does not answer (is Docker running?)" in str(err.value)
    assert "Cannot connect to the Docker daemon" in str(err.value)


def test_prerequisites_return_the_kind_version_line() -> None:
    runner = FakeRunner({"kind version": ok("kind v0.20.0 go1.20.4 linux/amd64\n")})
    line = check_prerequisites(runner=runner, which=on_path("docker", "kind"))  # type: ignore[arg-type]
    assert parse_kind_version(line) == "v0.20.0"
    assert parse_kind_version("0.32.0") == "v0.32.0"


def cluster(runner: FakeRunner, tmp_path: Path) -> KindCluster:
    return KindCluster(
        "plp-1-27-ab12", "kindest/node:v1.27.3@sha256:" + "3" * 64, tmp_path / "kubeconfig", runner=runner
    )


def test_create_uses_a_private_kubeconfig_and_the_pinned_image(tmp_path: Path) -> None:
    runner = FakeRunner()
    c = cluster(runner, tmp_path)
    c.create(tmp_path / "logs")
    assert runner.calls[0] == [
        "kind", "create", "cluster", "--name", "plp-1-27-ab12", "--image", c.image,
        "--kubeconfig", str(tmp_path / "kubeconfig"), "--wait", "120s", "--retain",
    ]  # fmt: skip
    assert c.created


def test_a_failed_create_shows_kinds_output_exports_logs_then_removes_the_remains(tmp_path: Path) -> None:
    """kind is told to retain a failed cluster (--retain), so its logs exist to be kept before the suite deletes it."""
    runner = FakeRunner({"kind create cluster": failed("ERROR: failed to create cluster: failed to pull image")})
    c = cluster(runner, tmp_path)
    with pytest.raises(ClusterFailed) as err:
        c.create(tmp_path / "logs")
    assert "failed to pull image" in str(err.value)
    assert "hint: the node image could not be pulled" in str(err.value)
    assert [call[:3] for call in runner.calls[1:]] == [["kind", "export", "logs"], ["kind", "delete", "cluster"]]
    assert not c.created


def test_a_name_conflict_never_deletes_the_other_cluster(tmp_path: Path) -> None:
    conflict = 'ERROR: failed to create cluster: node(s) already exist for a cluster with the name "plp-1-27-ab12"'
    runner = FakeRunner({"kind create cluster": failed(conflict)})
    c = cluster(runner, tmp_path)
    with pytest.raises(ClusterFailed, match="a cluster of that name exists"):
        c.create(tmp_path / "logs")
    assert not runner.ran("kind", "delete")
    assert c.delete() is None
    assert not runner.ran("kind", "delete")


def test_delete_removes_only_a_cluster_this_run_created(tmp_path: Path) -> None:
    runner = FakeRunner()
    c = cluster(runner, tmp_path)
    assert c.delete() is None
    c.create(tmp_path / "logs")
    c.delete()
    assert runner.calls[-1] == [
        "kind",
        "delete",
        "cluster",
        "--name",
        "plp-1-27-ab12",
        "--kubeconfig",
        str(tmp_path / "kubeconfig"),
    ]
    assert not c.created


def test_node_containers_come_from_crictl_in_the_node(tmp_path: Path) -> None:
    listing = {"containers": [{"id": "abc", "state": "CONTAINER_EXITED"}, {"id": "def", "state": "CONTAINER_RUNNING"}]}
    runner = FakeRunner({"docker exec plp-1-27-ab12-control-plane": ok(json.dumps(listing))})
    containers = cluster(runner, tmp_path).node_containers("plp-1-27-ab12-control-plane")
    assert runner.calls[0] == ["docker", "exec", "plp-1-27-ab12-control-plane", "crictl", "ps", "-a", "-o", "json"]
    assert container_state_on_node(containers, "abc") == "exited"
    assert container_state_on_node(containers, "def") == "running"
    assert container_state_on_node(containers, "0123") == "removed"


def test_run_command_reports_a_missing_binary_instead_of_raising() -> None:
    result = run_command(["/nonexistent/kind", "version"], 5)
    assert result.returncode == 127


def test_an_interrupt_during_creation_removes_the_half_created_cluster(tmp_path: Path) -> None:
    class Interrupted(FakeRunner):
        def __call__(self, argv: Sequence[str], timeout: float) -> Completed:
            if list(argv[:3]) == ["kind", "create", "cluster"]:
                self.calls.append(list(argv))
                raise KeyboardInterrupt("SIGTERM")
            return super().__call__(argv, timeout)

    runner = Interrupted()
    c = cluster(runner, tmp_path)
    with pytest.raises(KeyboardInterrupt):
        c.create(tmp_path / "logs")
    assert runner.calls[-1][:5] == ["kind", "delete", "cluster", "--name", "plp-1-27-ab12"]


ALPINE = "docker.io/library/alpine:3.18.4@sha256:eece025e432126ce23f223450a0326fbebde39cdf496a85d8c016293fc851978"


def test_preload_loads_local_images_and_checks_the_nodes_can_resolve_them(tmp_path: Path) -> None:
    """Stood in: docker and kind (FakeRunner). The image is local, kind loads it, crictl finds it on one node
    of two: the outcome says which node will still pull."""

    class OneNodeMisses(FakeRunner):
        def __call__(self, argv: Sequence[str], timeout: float) -> Completed:
            result = super().__call__(argv, timeout)
            return failed("no such image") if list(argv[:3]) == ["docker", "exec", "c-worker"] else result

    runner = OneNodeMisses()
    cluster = KindCluster("c", "img", tmp_path / "kc", runner=runner)
    outcome = cluster.preload([ALPINE], ["c-control-plane", "c-worker"])
    assert ["kind", "load", "docker-image", ALPINE, "--name", "c"] in runner.calls
    assert ["docker", "exec", "c-control-plane", "crictl", "inspecti", ALPINE] in runner.calls
    assert outcome == {ALPINE: "loaded, but c-worker cannot resolve it by digest: the node pulls it"}


def test_preload_skips_images_docker_does_not_have_and_reports_load_errors(tmp_path: Path) -> None:
    not_in_node = {"docker exec c-control-plane": failed("no such image")}
    absent = FakeRunner({"docker image inspect": failed("No such image"), **not_in_node})
    cluster = KindCluster("c", "img", tmp_path / "kc", runner=absent)
    assert cluster.preload([ALPINE], ["c-control-plane"]) == {ALPINE: "not in local Docker: the node pulls it"}
    assert not absent.ran("kind", "load")
    broken = FakeRunner(
        {"kind load docker-image": failed("ERROR: failed to detect containerd snapshotter"), **not_in_node}
    )
    cluster = KindCluster("c", "img", tmp_path / "kc", runner=broken)
    said = cluster.preload([ALPINE], ["c-control-plane"])[ALPINE]
    assert said.startswith("kind load failed: ERROR: failed to detect containerd snapshotter")


def test_an_image_every_node_has_already_is_neither_looked_up_in_docker_nor_loaded(tmp_path: Path) -> None:
    """Stood in: docker (FakeRunner: crictl inspecti succeeds on both nodes, as in the suite's plp-node images)."""
    runner = FakeRunner()
    cluster = KindCluster("c", "img", tmp_path / "kc", runner=runner)
    assert cluster.preload([ALPINE], ["c-control-plane", "c-worker"]) == {ALPINE: "in the node image already"}
    assert not runner.ran("docker", "image", "inspect") and not runner.ran("kind", "load")


def test_nodes_that_never_get_ready_are_a_cluster_failure_with_kinds_logs_and_a_hint(tmp_path: Path) -> None:
    """Stood in: kind (FakeRunner) and the readiness wait (a function raising what wait_nodes_ready raises)."""
    from harness.clusters.lifecycle import NodesNotReady

    runner = FakeRunner()
    cluster = KindCluster("c", "kindest/node:v1.19.16@sha256:x", tmp_path / "kc", runner=runner)

    def never_ready() -> list[str]:
        raise NodesNotReady("nodes not Ready after 180s; last seen: c-control-plane: Ready=False")

    with pytest.raises(ClusterFailed) as failed_create:
        cluster.wait_ready(never_ready, tmp_path / "logs")
    message = str(failed_create.value)
    assert "nodes never became Ready" in message and "c-control-plane: Ready=False" in message
    assert "hint: the kubelet's log" in message and f"kind's logs: {tmp_path / 'logs'}" in message
    assert runner.calls == [["kind", "export", "logs", str(tmp_path / "logs"), "--name", "c"]]
