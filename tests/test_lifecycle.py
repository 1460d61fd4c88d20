"""The one cluster lifecycle (harness/clusters/lifecycle.py) with a stand-in provider: what is recorded and removed when
creation fails, when the nodes never get Ready, when a probe is interrupted, and when the cluster is kept."""

from __future__ import annotations

import json
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

import pytest

from harness.base.errors import ClusterFailed
from harness.base.run import Run
from harness.clusters import lifecycle
from harness.clusters.existing.clusters import ExistingClusters
from harness.clusters.kind.clusters import KindClusters
from harness.clusters.kind.provider import kind_facts
from harness.clusters.kinds import Runnable
from harness.clusters.local import provider as local_provider
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.local.teardown import StopReport
from harness.core import transport_live
from harness.gobuild.kubernetes import Build


class StandInCluster(LocalCluster):
    """A LocalCluster whose start and stop only say what they were asked to do (no process is started)."""

    fail_start: bool = False
    stops: int = 0

    def start(self, timeout_s: float = 180) -> None:
        if self.fail_start:
            raise OSError("containerd exited while starting; last lines of containerd.log: boom")
        self.started = True

    def stop(self) -> StopReport:
        self.stops += 1
        self.started = False
        return StopReport(self.name, {"kubelet": "stopped"}, ["cgroup /x"], [])

    def provenance(self) -> dict[str, Any]:
        return {"containerd_version": "containerd 1.6.20", "images": {}}


def provider(tmp_path: Path, fail_start: bool = False) -> local_provider.LocalProvider:
    cluster = StandInCluster("plp-1-27-abcd", Build("v1.27.3", tmp_path, {"version": "v1.27.3"}), tmp_path / "logs")
    cluster.fail_start = fail_start
    return local_provider.LocalProvider(cluster)


def test_a_cluster_that_does_not_come_up_is_recorded_and_nothing_is_left(tmp_path: Path) -> None:
    notes: dict[str, Any] = {}
    local = provider(tmp_path, fail_start=True)
    with (
        pytest.raises(ClusterFailed, match="did not come up: containerd exited"),
        lifecycle.cluster_life(local, notes.update, keep=False, logs_dir=tmp_path),
    ):
        pytest.fail("the body must not run")
    assert notes["cluster"] == "local" and "containerd exited" in notes["cluster_error"]
    assert "cluster_deleted" not in notes  # never created: nothing to delete


def test_nodes_that_never_get_ready_end_in_a_removed_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def never_ready(core: object, timeout_s: float = 0) -> list[str]:
        raise TimeoutError("nodes not Ready after 120s; last seen: plp-local-node: Ready=False")

    monkeypatch.setattr(local_provider, "wait_nodes_ready", never_ready)
    monkeypatch.setattr("kubernetes.config.new_client_from_config", lambda **kwargs: None)
    notes: dict[str, Any] = {}
    local = provider(tmp_path)
    with (
        pytest.raises(ClusterFailed, match=r"never became Ready: .*Ready=False"),
        lifecycle.cluster_life(local, notes.update, keep=False, logs_dir=tmp_path),
    ):
        pytest.fail("the body must not run")
    assert isinstance(local.cluster, StandInCluster) and local.cluster.stops == 1
    assert notes["cluster_deleted"] is True and notes["local_stop"]["processes"] == {"kubelet": "stopped"}


def _reachable(monkeypatch: pytest.MonkeyPatch) -> None:
    class Transport:
        def __init__(self, api: object, node_lister: object, node_shutdown: object) -> None: ...

        def server_version(self) -> dict[str, str]:
            return {"gitVersion": "v1.27.3"}

    monkeypatch.setattr(local_provider, "wait_nodes_ready", lambda core, timeout_s=0: ["plp-local-node"])
    monkeypatch.setattr("kubernetes.config.new_client_from_config", lambda **kwargs: None)
    monkeypatch.setattr(transport_live, "LiveTransport", Transport)


def test_an_interrupt_while_probing_still_removes_the_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _reachable(monkeypatch)
    notes: dict[str, Any] = {}
    local = provider(tmp_path)
    seen: dict[str, Any] = {}

    def probe_interrupted() -> None:
        with lifecycle.cluster_life(local, notes.update, keep=False, logs_dir=tmp_path) as target:
            seen.update(origin=target.origin, server_version=notes["server_version"], nodes=notes["nodes"])
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        probe_interrupted()
    assert seen["origin"]["cluster"] == "local"
    assert seen["server_version"] == {"gitVersion": "v1.27.3"} and seen["nodes"] == ["plp-local-node"]
    assert isinstance(local.cluster, StandInCluster) and local.cluster.stops == 1
    assert notes["cluster_deleted"] is True


def test_a_kept_cluster_is_not_removed_and_the_user_is_told_where_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _reachable(monkeypatch)
    notes: dict[str, Any] = {}
    local = provider(tmp_path)
    with lifecycle.cluster_life(local, notes.update, keep=True, logs_dir=tmp_path):
        pass
    assert isinstance(local.cluster, StandInCluster) and local.cluster.stops == 0
    assert notes["cluster_kept"] is True
    assert "kept local cluster plp-1-27-abcd; kubeconfig:" in notes["cluster_kept_message"]
    assert "make clean" in notes["cluster_kept_message"]


def test_parallel_kind_workers_take_the_image_and_kind_from_the_run_record(tmp_path: Path) -> None:
    """The CLI records the kind cluster it made in run.json; PARALLEL workers re-attach to it as its kind says: a
    cluster they reach, whose nodes they read with docker exec, named in their recordings."""
    assert kind_facts(tmp_path / "run.json") == {}
    (tmp_path / "run.json").write_text(
        json.dumps(
            {"cluster_name": "plp-1-27-c8ba", "node_image": "plp-node:v1.27.3", "kind_version": "v0.20.0", "x": 1}
        )
    )
    worker = KindClusters().attach(
        tmp_path / "kubeconfig", "kind-plp-1-27-c8ba", {"--kind-nodes": True}.get, tmp_path / "run.json"
    )
    assert worker.origin() == {
        "cluster": "kind",
        "cluster_name": "plp-1-27-c8ba",
        "node_image": "plp-node:v1.27.3",
        "kind_version": "v0.20.0",
        "context": "kind-plp-1-27-c8ba",
    }
    assert worker.facts()["cluster"] == "kind (created by make probe)" and worker.node_lister is not None
    assert worker.goes_with_the_run and not worker.created


def test_parallel_kind_workers_record_the_runtime_the_cli_recorded(tmp_path: Path) -> None:
    """Under PARALLEL the probes' workers attach to the cluster the CLI made: their recordings name its whole origin
    (runtime, node components, cgroup, how the image was built), as a recording made with PARALLEL=1 does."""
    origin = {
        "cluster": "kind",
        "cluster_name": "plp-1-27-27bb",
        "node_image": "plp-node:v1.27.16-kind.v0.25.0",
        "kind_version": "v0.25.0",
        "containerd": "v1.7.18 (built here)",
        "runc": "v1.1.13 (built here)",
        "cni": "ptp",
        "crictl": "v1.30.0",
        "node_components": "kind v0.25.0's components built from Go modules, except: kindnetd",
        "cgroup": "v1 (the Docker engine's)",
    }
    (tmp_path / "run.json").write_text(
        json.dumps({"cluster_name": "plp-1-27-27bb", "node_image": "plp-node:v1.27.16-kind.v0.25.0", "origin": origin})
    )
    worker = KindClusters().attach(
        tmp_path / "kubeconfig", "kind-plp-1-27-27bb", {"--kind-nodes": True}.get, tmp_path / "run.json"
    )
    assert worker.origin() == {**origin, "context": "kind-plp-1-27-27bb"}


def test_an_existing_cluster_is_reached_through_the_same_life_and_never_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _reachable(monkeypatch)
    for module in (lifecycle, local_provider):
        monkeypatch.setattr(
            module, "wait_nodes_ready", lambda core, timeout_s=0: pytest.fail("not the suite's to wait")
        )
    notes: dict[str, Any] = {}
    given = Runnable("existing", None, {"kubeconfig": str(tmp_path / "kubeconfig"), "context": "theirs"})
    existing = ExistingClusters().provider(given, Run.start(tmp_path / "runs"), notes.update)
    with lifecycle.cluster_life(existing, notes.update, keep=False, logs_dir=tmp_path) as target:
        assert target.origin == {"cluster": "existing", "context": "theirs"}
        assert not target.goes_with_the_run  # the user's: the probes' namespaces are waited for until gone
    assert existing.node_lister is None  # node-level claims: not observable
    assert notes == {
        "cluster": "existing",
        "kubeconfig": str(tmp_path / "kubeconfig"),
        "context": "theirs",
        "server_version": {"gitVersion": "v1.27.3"},
    }  # no readiness time, nothing deleted


@dataclass
class RecordingProvider:
    """A provider the lifecycle has never heard of: it only says what it was asked to do."""

    asked: list[str] = dataclass_field(default_factory=list)
    kind: str = "stand-in"
    name: str = "plp-stand-in"
    created: bool = False
    node_shutdown: None = None
    node_lister: None = None
    apiserver_restart: None = None
    goes_with_the_run: bool = True
    kubeconfig: Path = Path("kubeconfig")
    context: str | None = None

    def facts(self) -> dict[str, Any]:
        return {"cluster": self.kind}

    def create(self, logs_dir: Path) -> None:
        self.asked.append("create")
        self.created = True

    def wait_ready(self, core: object, logs_dir: Path) -> list[str]:
        self.asked.append("wait_ready")
        return ["node-a"]

    def prepare(self, nodes: list[str]) -> dict[str, Any]:
        self.asked.append(f"prepare {' '.join(nodes)}")
        return {"prepared": nodes}

    def delete(self) -> lifecycle.Removal:
        self.asked.append("delete")
        self.created = False
        return lifecycle.Removal(None, {"stand_in_removed": True})

    def kept(self) -> str:
        return "kept"

    def keep_logs(self, directory: Path) -> str:
        self.asked.append("keep_logs")
        return str(directory)

    def origin(self) -> dict[str, Any]:
        return {"cluster": self.kind}


def test_any_provider_goes_through_the_one_life_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _reachable(monkeypatch)
    notes: dict[str, Any] = {}
    provider = RecordingProvider()
    with lifecycle.cluster_life(provider, notes.update, keep=False, logs_dir=tmp_path) as target:
        assert target.origin == {"cluster": "stand-in"} and target.goes_with_the_run
        assert provider.asked == ["create", "wait_ready", "prepare node-a"]
    assert provider.asked[-1] == "delete"
    assert notes["prepared"] == ["node-a"] and notes["nodes"] == ["node-a"] and "cluster_ready_after_s" in notes
    assert notes["cluster_deleted"] is True and notes["stand_in_removed"] is True


def test_ctrl_c_during_the_removal_is_raised_once_the_removal_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A removal that Ctrl-C came through ran to its end (harness/base/process.py run_to_the_end): noted, then the
    interrupt goes on, so the run still ends as interrupted (130) and says truly what became of the cluster."""
    _reachable(monkeypatch)
    notes: dict[str, Any] = {}

    class InterruptedRemoval(RecordingProvider):
        def delete(self) -> lifecycle.Removal:
            super().delete()
            return lifecycle.Removal(None, {"stand_in_removed": True}, interrupted=True)

    with pytest.raises(KeyboardInterrupt), lifecycle.cluster_life(InterruptedRemoval(), notes.update, False, tmp_path):
        pass
    assert notes["cluster_deleted"] is True and notes["stand_in_removed"] is True


def test_a_failed_run_keeps_the_clusters_component_logs_before_the_cluster_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen on kind v1.26.6: a probe's ContainerStatusUnknown whose kubelet log went with the cluster."""
    _reachable(monkeypatch)
    notes: dict[str, Any] = {}
    provider = RecordingProvider()
    with lifecycle.cluster_life(provider, notes.update, False, tmp_path / "kind-logs", failed=lambda: True):
        pass
    assert provider.asked[-2:] == ["keep_logs", "delete"] and notes["component_logs"] == str(tmp_path / "kind-logs")
    passed = RecordingProvider()
    with lifecycle.cluster_life(passed, {}.update, False, tmp_path, failed=lambda: False):
        pass
    assert "keep_logs" not in passed.asked
