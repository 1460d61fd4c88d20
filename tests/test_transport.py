"""Recording and replaying a probe's conversation with a cluster (harness/core/transport.py and its transport_*.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from kubernetes.client.exceptions import ApiException

from harness.core.transport import Rejected, Transport, WatchEvent
from harness.core.transport_live import LiveTransport, _LiveWatch
from harness.core.transport_raw import is_transient
from harness.core.transport_recording import Recording, RecordingTransport
from harness.core.transport_replay import RecordingMismatch, ReplayTransport
from tests.doubles import ScriptedWatch, pod


class ScriptedCluster(Transport):
    """Stands in for LiveTransport: fixed answers and a scripted watch, on a virtual clock."""

    node_access = True
    # call -> (seconds it takes, its answer to the request)
    ANSWERS: ClassVar[dict[str, tuple[float, Callable[..., Any]]]] = {
        "server_version": (0.0, lambda: {"gitVersion": "v1.27.3"}),
        "wall_clock": (0.0, lambda: 1_700_000_000.0),
        "create": (0.0, lambda namespace, manifest: pod(rv="1")),
        "get": (0.0, lambda **_: None),
        "delete": (0.05, lambda **_: pod(rv="2")),
        "list_objects": (0.0, lambda **_: {"metadata": {"resourceVersion": "1"}, "items": []}),
        "list_events": (0.0, lambda namespace: []),
        "read_log": (0.0, lambda **_: "Hello world\n"),
        "node_containers": (0.0, lambda node: [{"id": "abc123", "state": "CONTAINER_EXITED"}]),
        "patch": (0.25, lambda kind, namespace, name, patch: {"kind": kind, "metadata": {"name": name}, **patch}),
        "evict": (0.25, lambda api_version, **_: {"kind": "Status", "status": "Success", "apiVersion": api_version}),
        "node_shutdown": (0.25, lambda node, starting: {"kubelet_inhibitor": True, "output": f"{node} {starting}"}),
    }

    def __init__(self) -> None:
        self.watch_stream = ScriptedWatch(
            [WatchEvent(1.0, "MODIFIED", pod(rv="2")), WatchEvent(3.0, "DELETED", pod(rv="3"))]
        )

    def now(self) -> float:
        return self.watch_stream.now

    def pause(self, seconds: float) -> None:
        self.watch_stream.now += seconds

    def last_call_started(self) -> float:
        return self.watch_stream.now

    def call(self, call_name: str, /, **request: Any) -> Any:
        if call_name == "watch":
            return self.watch_stream
        seconds, answer = self.ANSWERS[call_name]
        self.watch_stream.now += seconds
        return answer(**request)


def converse(transport: Any) -> list[Any]:
    """A fixed conversation, as a probe would have it."""
    seen: list[Any] = [transport.server_version()["gitVersion"], transport.create("ns", {"kind": "Pod", "x": 1})]
    handle = transport.watch("Pod", "ns", "running-pod", "1")
    seen.append(transport.delete("Pod", "ns", "running-pod"))
    while (event := handle.next_event(2.0)) is not None:
        seen.append((event.type, event.t))
    handle.close()
    seen.append(transport.node_containers("kind-control-plane"))
    seen.append((transport.patch("StatefulSet", "ns", "web", {"spec": {"replicas": 2}}), transport.last_call_started()))
    seen.append((transport.evict("ns", "running-pod", "policy/v1"), transport.last_call_started()))
    seen.append((transport.node_shutdown("kind-worker", True), transport.last_call_started()))
    return seen


def test_a_recording_replays_the_same_conversation(tmp_path: Any) -> None:
    recording = Recording("p.py::test_x", {"kind": "live", "namespace": "ns", "run_id": "r"})
    live = converse(RecordingTransport(ScriptedCluster(), recording))
    recording.write(tmp_path / "r.json")
    replay = ReplayTransport(Recording.load(tmp_path / "r.json"))
    assert converse(replay) == live
    assert replay.unused_calls() == []


def test_replay_refuses_a_call_the_recording_does_not_have(tmp_path: Any) -> None:
    recording = Recording("p.py::test_x", {"kind": "live"})
    converse(RecordingTransport(ScriptedCluster(), recording))
    replay = ReplayTransport(recording)
    replay.server_version()
    with pytest.raises(RecordingMismatch, match=r"call 2 of the recording of p.py::test_x is create\(namespace='ns'\)"):
        replay.delete("Pod", "ns", "running-pod")


def test_replay_refuses_a_different_manifest_and_says_where_it_differs() -> None:
    recording = Recording("p.py::test_x", {"kind": "live"})
    converse(RecordingTransport(ScriptedCluster(), recording))
    replay = ReplayTransport(recording)
    replay.server_version()
    with pytest.raises(RecordingMismatch, match=r"\.x: recorded 1, probe 2"):
        replay.create("ns", {"kind": "Pod", "x": 2})


def test_replay_refuses_to_watch_longer_than_was_recorded() -> None:
    recording = Recording("p.py::test_x", {"kind": "live"})
    converse(RecordingTransport(ScriptedCluster(), recording))
    replay = ReplayTransport(recording)
    replay.server_version(), replay.create("ns", {"kind": "Pod", "x": 1})
    handle = replay.watch("Pod", "ns", "running-pod", "1")
    while handle.next_event(2.0) is not None:
        pass
    with pytest.raises(RecordingMismatch, match="stopped watching at t="):
        handle.next_event(30.0)


def test_node_access_off_makes_node_listings_unobservable() -> None:
    recording = Recording("p.py::test_x", {"kind": "live", "node_access": False})
    recording.interactions.append({"call": "node_containers", "request": {"node": "n"}, "t_start": 0, "response": []})
    replay = ReplayTransport(recording)
    assert replay.node_access is False
    assert replay.node_containers("n") is None


@pytest.mark.parametrize(
    ("err", "transient"),
    [
        (ApiException(status=429), True),
        (ApiException(status=503), True),
        (ApiException(status=0), True),
        (ApiException(status=404), False),
        (ApiException(status=409), False),
        (ApiException(status=410), False),
        (ConnectionResetError(), True),
        (ValueError(), False),
    ],
)
def test_only_transient_api_failures_are_retried(err: BaseException, transient: bool) -> None:
    assert is_transient(err) is transient


class GoneOnceWatch(_LiveWatch):
    """_LiveWatch with its stream replaced: the stand-in for the API server's watch endpoint expires once."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.streams = 0
        self.relisted = threading.Event()
        super().__init__(*args, **kwargs)

    def _stream(self) -> Iterator[dict[str, Any]]:
        self.streams += 1
        if self.streams == 1:
            yield {"type": "MODIFIED", "object": pod(rv="5")}
            raise ApiException(status=410, reason="Gone")
        yield {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "12"}}}
        yield {"type": "MODIFIED", "object": pod(rv="13")}
        self._stop.wait(5)


def test_live_watch_relists_after_410_and_marks_the_gap() -> None:
    listing = SimpleNamespace(
        data=json.dumps({"metadata": {"resourceVersion": "11"}, "items": [pod(rv="11")]}).encode()
    )
    calls: list[dict[str, Any]] = []

    def list_pods(namespace: str, **kwargs: Any) -> Any:  # stands in for CoreV1Api.list_namespaced_pod
        calls.append(kwargs)
        return listing

    watch = GoneOnceWatch(list_pods, "ns", "running-pod", "1", lambda: 0.0)
    try:
        events = [watch.next_event(5.0) for _ in range(3)]
    finally:
        watch.close()
    assert [e.type if e else None for e in events] == ["MODIFIED", "RELISTED", "MODIFIED"]
    assert events[1] is not None and events[1].gap == "watch expired (410 Gone)"
    assert events[1].object == {"items": [pod(rv="11")]}
    assert calls == [{"field_selector": "metadata.name=running-pod", "_preload_content": False}]
    assert watch._rv == "13"


def test_live_transport_refuses_kinds_it_does_not_handle() -> None:
    from kubernetes import client

    transport = LiveTransport(client.ApiClient(), node_lister=None)
    assert transport.node_access is False
    with pytest.raises(ValueError, match="does not handle ReplicaSet"):
        transport.watch("ReplicaSet", "ns", "x", "1")


class RefusingCluster(ScriptedCluster):
    """Stands in for a server that does not know a field: refuses the create as Strict validation would."""

    def create(self, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        raise Rejected(400, 'strict decoding error: unknown field "spec.podReplacementPolicy"')


def test_a_rejected_create_is_recorded_and_replayed_as_the_same_rejection() -> None:
    recording = Recording("p.py::test_x", {"kind": "live"})
    recorder = RecordingTransport(RefusingCluster(), recording)
    with pytest.raises(Rejected):
        recorder.create("ns", {"kind": "Job", "x": 1})
    assert recording.interactions[-1]["rejected"]["status"] == 400
    replay = ReplayTransport(Recording(recording.probe, recording.origin, recording.interactions))
    with pytest.raises(Rejected, match="unknown field") as replayed:
        replay.create("ns", {"kind": "Job", "x": 1})
    assert replayed.value.status == 400


def test_the_live_transport_carries_out_every_declared_call() -> None:
    """Transport declares the calls; a call LiveTransport did not override would reach `call` and fail live."""
    not_calls = {"now", "pause", "last_call_started", "call"}
    declared = {name for name, value in vars(Transport).items() if callable(value) and name[0] != "_"} - not_calls
    assert len(declared) == 13
    assert [name for name in sorted(declared) if getattr(LiveTransport, name) is getattr(Transport, name)] == []
