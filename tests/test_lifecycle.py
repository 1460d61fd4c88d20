"""The one cluster lifecycle (harness/lifecycle.py) with a stand-in provider: what is recorded and removed when
creation fails, when the nodes never get Ready, when a probe is interrupted, and when the cluster is kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness import lifecycle
from harness.kind import ClusterFailed
from harness.local.build import Build
from harness.local.cluster import LocalCluster, StopReport


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


def provider(tmp_path: Path, fail_start: bool = False) -> lifecycle.LocalProvider:
    cluster = StandInCluster("plp-1-27-abcd", Build("v1.27.3", tmp_path, {"version": "v1.27.3"}), tmp_path / "logs")
    cluster.fail_start = fail_start
    return lifecycle.LocalProvider(cluster)


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

    monkeypatch.setattr(lifecycle, "wait_nodes_ready", never_ready)
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

    monkeypatch.setattr(lifecycle, "wait_nodes_ready", lambda core, timeout_s=0: ["plp-local-node"])
    monkeypatch.setattr("kubernetes.config.new_client_from_config", lambda **kwargs: None)
    monkeypatch.setattr(lifecycle, "LiveTransport", Transport)


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
    """The CLI records the kind cluster it made in run.json; PARALLEL workers name it in their recordings."""
    from harness.pytest_plugin import _kind_facts

    assert _kind_facts(tmp_path / "run.json") == {}
    (tmp_path / "run.json").write_text(
        json.dumps(
            {"cluster_name": "plp-1-27-c8ba", "node_image": "plp-node:v1.27.3", "kind_version": "v0.20.0", "x": 1}
        )
    )
    assert _kind_facts(tmp_path / "run.json") == {
        "cluster_name": "plp-1-27-c8ba",
        "node_image": "plp-node:v1.27.3",
        "kind_version": "v0.20.0",
    }
