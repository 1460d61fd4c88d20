"""harness/clusters/kind/node_shutdown.py and harness/nodeimage/shutdown.py: the derived node image, the shutdown
cluster's config and the shutdown signal.

Stood in: the docker and kind processes (tests/doubles.FakeRunner answers from a script and records argv).
Real: the argv the suite builds, the Dockerfile it writes, the kind config it writes, and their parsing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest
import yaml

from harness.base.errors import ClusterFailed
from harness.base.process import Completed
from harness.base.versions import KubeVersion
from harness.clusters.kind import node_shutdown
from harness.clusters.kind.cluster import KindCluster
from harness.clusters.kind.node_shutdown import (
    SHUTDOWN_NODE_LABEL,
    NodeShutdownUnavailable,
    announce_shutdown,
    cluster_config,
    control_plane_of,
)
from harness.core.observe import ProbeTimeout
from harness.core.probe import Probe
from harness.core.timeline import Timeline
from harness.core.transport import Transport
from harness.nodeimage.shutdown import ensure_derived_image
from harness.nodeimage.tags import shutdown_image_tag as derived_image_tag
from tests.doubles import FakeRunner, failed, ok

BASE = "kindest/node:v1.29.14@sha256:8703bd94ee24e51b778d5556ae310c6c0fa67d761add3d1f1a4c1b0c8f3cf4a6"


def test_the_derived_image_is_tagged_per_base_and_built_only_when_absent(tmp_path: Path) -> None:
    tag = derived_image_tag(BASE)
    assert tag.startswith("plp-node-shutdown:v1.29.14-") and tag != derived_image_tag(BASE.replace("87", "78"))
    present = FakeRunner({"docker image inspect": ok("[{}]")})
    assert ensure_derived_image(BASE, tmp_path, present)[0] == tag
    assert not present.ran("docker", "build")

    absent = FakeRunner({"docker image inspect": failed("No such image")})
    built, said = ensure_derived_image(BASE, tmp_path, absent)
    build = next(call for call in absent.calls if call[:2] == ["docker", "build"])
    dockerfile = (Path(build[-1]) / "Dockerfile").read_text()
    assert f"FROM {BASE}" in dockerfile  # the pinned digest, not a tag
    assert "install -y --no-install-recommends dbus" in dockerfile
    assert "systemd-logind.service" in dockerfile and "dbus.service" in dockerfile
    assert build[:4] == ["docker", "build", "--tag", built] and "built" in said


def test_a_failed_build_is_a_cluster_failure_with_dockers_output_and_a_hint(tmp_path: Path) -> None:
    runner = FakeRunner(
        {"docker image inspect": failed("No such image"), "docker build --tag": failed("E: no network")}
    )
    with pytest.raises(ClusterFailed, match=r"(?s)could not build .*E: no network.*needs network access"):
        ensure_derived_image(BASE, tmp_path, runner)


def test_the_cluster_config_has_a_labelled_worker_and_a_kubelet_shutdown_grace_from_1_21() -> None:
    config = yaml.safe_load(cluster_config(KubeVersion.parse("v1.29.14")))
    assert config["kind"] == "Cluster" and config["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    assert [n["role"] for n in config["nodes"]] == ["control-plane", "worker"]
    assert config["nodes"][1]["labels"] == {SHUTDOWN_NODE_LABEL: "true"}
    kubelet = yaml.safe_load(config["kubeadmConfigPatches"][0])
    assert kubelet == {
        "kind": "KubeletConfiguration",
        "shutdownGracePeriod": "30s",
        "shutdownGracePeriodCriticalPods": "10s",
    }
    for without_gate in ("v1.20.15", "v1.21.0-beta.0"):  # the gate off: its kubelet refuses a grace period
        assert "kubeadmConfigPatches" not in yaml.safe_load(cluster_config(KubeVersion.parse(without_gate)))
    first_on = yaml.safe_load(cluster_config(KubeVersion.parse("v1.21.0-beta.1")))
    assert yaml.safe_load(first_on["kubeadmConfigPatches"][0]) == kubelet


def test_kind_gets_the_config_file(tmp_path: Path) -> None:
    runner = FakeRunner()
    cluster = KindCluster("plp-1-29-abcd-gns", "plp-node-shutdown:x", tmp_path / "kc", runner=runner)
    cluster.config = tmp_path / "kind-config-gns.yaml"
    cluster.create(tmp_path / "logs")
    create = runner.calls[0]
    assert create[create.index("--config") + 1] == str(cluster.config)
    assert create[create.index("--image") + 1] == "plp-node-shutdown:x"


def test_announcing_a_shutdown_emits_prepare_for_shutdown_and_says_whether_the_kubelet_listens() -> None:
    listening = FakeRunner({"docker exec kind-worker": ok("kubelet 0 root 212 kubelet shutdown ... delay")})
    answer = announce_shutdown("kind-worker", True, listening)
    assert answer["kubelet_inhibitor"] is True
    assert listening.calls[-1] == [
        "docker",
        "exec",
        "kind-worker",
        "busctl",
        "emit",
        "/org/freedesktop/login1",
        "org.freedesktop.login1.Manager",
        "PrepareForShutdown",
        "b",
        "true",
    ]
    deaf = FakeRunner({"docker exec kind-worker": ok("0 inhibitors listed.")})
    assert announce_shutdown("kind-worker", False, deaf)["kubelet_inhibitor"] is False
    assert deaf.calls[-1][-1] == "false"


def test_a_signal_that_cannot_be_sent_is_an_error_not_a_silent_no_op() -> None:
    class BusctlMissing(FakeRunner):
        def __call__(self, argv: Sequence[str], timeout: float) -> Completed:
            result = super().__call__(argv, timeout)
            return failed("busctl: not found", 127) if "busctl" in argv else result

    with pytest.raises(NodeShutdownUnavailable, match="busctl: not found"):
        announce_shutdown("kind-worker", True, BusctlMissing({"docker exec kind-worker": ok("kubelet ... delay")}))


@dataclass
class LockAfterRestart(FakeRunner):
    """Stands in for a node whose kubelet lost its lock after a cancelled shutdown and takes it again on restart
    (or never, with `regains=False`)."""

    regains: bool = True
    restarted: bool = False
    # The running pods bound to the node, and how many times the restarted kubelet's /pods lacks them first
    # (None: it never lists them)
    bound: tuple[str, ...] = ("uid-stateful-0",)
    lists_them_after: int | None = 0
    kubelet_asked: int = 0

    def __call__(self, argv: Sequence[str], timeout: float) -> Completed:
        self.calls.append(list(argv))
        if "restart" in argv:
            self.restarted = True
        if "systemd-inhibit" in argv:
            return ok("kubelet 0 root 212 kubelet shutdown ... delay" if self.restarted and self.regains else "")
        if argv[:3] == ["docker", "exec", "kind-control-plane"] and "--raw" in argv:
            self.kubelet_asked += 1
            ready = self.lists_them_after is not None and self.kubelet_asked > self.lists_them_after
            return ok(json.dumps({"items": [{"metadata": {"uid": u}} for u in (self.bound if ready else ())]}))
        if argv[:3] == ["docker", "exec", "kind-control-plane"]:
            return ok(json.dumps({"items": [{"metadata": {"uid": u}} for u in self.bound]}))
        return ok()


def test_a_kubelet_without_its_lock_is_restarted_before_a_shutdown_and_the_answer_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(node_shutdown, "LOCK_POLL_S", 0.01)
    node = LockAfterRestart()
    answer = announce_shutdown("kind-worker", True, node)
    assert answer["kubelet_inhibitor"] is True and answer["kubelet_restarted_for_its_lock"] is True
    assert ["docker", "exec", "kind-worker", "systemctl", "restart", "kubelet"] in node.calls
    assert node.calls[-1][-1] == "true"  # the shutdown is announced after the lock is back
    assert answer["kubelet_took_back_its_pods"] is True


def test_after_a_restart_the_shutdown_waits_until_the_kubelet_lists_the_pods_on_its_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seen live on 1.37.2: a shutdown announced before the restarted kubelet took its running pod back turned the
    pod's admission down (reason NodeShutdown), so the pod ended with no DisruptionTarget."""
    monkeypatch.setattr(node_shutdown, "LOCK_POLL_S", 0.01)
    node = LockAfterRestart(lists_them_after=2)
    answer = announce_shutdown("kind-worker", True, node)
    asked = [i for i, call in enumerate(node.calls) if "--raw" in call]
    assert len(asked) == 3 and node.calls[asked[0]][-1] == "/api/v1/nodes/kind-worker/proxy/pods"
    emitted = next(i for i, call in enumerate(node.calls) if "PrepareForShutdown" in call)
    assert emitted > asked[-1] and answer["kubelet_took_back_its_pods"] is True


def test_a_kubelet_that_never_lists_its_pods_is_reported_and_the_shutdown_goes_ahead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(node_shutdown, "LOCK_WAIT_S", 0.2)
    monkeypatch.setattr(node_shutdown, "LOCK_POLL_S", 0.01)
    answer = announce_shutdown("kind-worker", True, LockAfterRestart(lists_them_after=None))
    assert answer["kubelet_took_back_its_pods"] is False and answer["kubelet_inhibitor"] is True
    held = announce_shutdown("kind-worker", True, FakeRunner({"docker exec kind-worker": ok("kubelet ... delay")}))
    assert "kubelet_took_back_its_pods" not in held  # no restart, nothing to wait for
    assert control_plane_of("plp-1-37-cdff-gns-worker") == "plp-1-37-cdff-gns-control-plane"


def test_a_kubelet_that_never_takes_its_lock_is_reported_after_a_bounded_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_shutdown, "LOCK_WAIT_S", 0.5)
    monkeypatch.setattr(node_shutdown, "LOCK_POLL_S", 0.01)
    node = LockAfterRestart(regains=False)
    answer = announce_shutdown("kind-worker", True, node)
    assert answer["kubelet_inhibitor"] is False and answer["kubelet_restarted_for_its_lock"] is True
    cancelled = LockAfterRestart()
    assert announce_shutdown("kind-worker", False, cancelled)["kubelet_restarted_for_its_lock"] is False
    assert not cancelled.restarted  # cancelling never restarts anything


class ShutdownNodes:
    """Stands in for the shutdown cluster's transport: records each announce / cancel; can fail the cancel."""

    def __init__(self, cancel_fails: bool = False) -> None:
        self.sent: list[tuple[str, bool]] = []
        self.cancel_fails = cancel_fails

    def node_shutdown(self, node: str, starting: bool) -> dict[str, object]:
        self.sent.append((node, starting))
        if not starting and self.cancel_fails:
            raise RuntimeError("busctl: no such node")
        return {"kubelet_inhibitor": True}

    def now(self) -> float:
        return 1.0

    def last_call_started(self) -> float:
        return 1.0


def probe_on(nodes: ShutdownNodes) -> Probe:
    probe = Probe.__new__(Probe)  # only the timeline and the transport take part in a shutdown
    probe.timeline, probe.transport = Timeline(), cast(Transport, nodes)
    return probe


def test_a_shutdown_is_cancelled_when_the_block_ends_and_when_it_fails() -> None:
    nodes = ShutdownNodes()
    with probe_on(nodes).node_shut_down("worker") as answer:
        assert answer["kubelet_inhibitor"] is True
    assert nodes.sent == [("worker", True), ("worker", False)]
    nodes = ShutdownNodes()
    with pytest.raises(ProbeTimeout), probe_on(nodes).node_shut_down("worker"):
        raise ProbeTimeout("the pod never stopped")
    assert nodes.sent == [("worker", True), ("worker", False)]


def test_a_failed_cancel_does_not_hide_the_probes_own_error() -> None:
    nodes = ShutdownNodes(cancel_fails=True)
    probe = probe_on(nodes)
    with pytest.raises(ProbeTimeout), probe.node_shut_down("worker"):
        raise ProbeTimeout("the pod never stopped")
    assert "cancel failed" in probe.timeline.render()
