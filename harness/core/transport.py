"""How a probe talks to a cluster: live (Kubernetes API + node), recording, or replaying a recording.

Probes never call the Kubernetes client directly. They go through a `Transport`, so the same probe
code, waits and evaluation run against a live kind cluster and, offline, against a recording of one.
A recording is the list of calls the probe made with what came back, including every watch event it
received and when (seconds on the transport's clock). The calls are declared once, here, in `Transport`;
`LiveTransport` carries them out (transport_live.py, through transport_raw.py's raw JSON calls),
`RecordingTransport` writes the list during a live run and `Recording` is its file (transport_recording.py), and
`ReplayTransport` serves it back in order and refuses calls the recording does not have (transport_replay.py).
A recording must replay exactly what the live transport did: what each call is, and what a watch event and a
rejection hold, is said here once for all three.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol, cast

JsonDict = dict[str, Any]
# The view made of each object a replay's watches showed and what the timeline keeps of it, by the observed kind and
# the object's id(), with the object itself (kept, so that no other object takes its id): the copies a test makes of
# a recording, which share its objects and never change one, share it too (harness/core/transport_recording.py
# Recording.views).
ViewMemo = dict[tuple[str, int], tuple[JsonDict, Any, JsonDict]]
# Calls that act on the cluster: their start is the instant the action happened (also when replayed).
ACTIONS = frozenset({"create", "delete", "patch", "evict", "node_shutdown"})


@dataclass(frozen=True)
class WatchEvent:
    """One thing a watch delivered: ADDED / MODIFIED / DELETED, or RELISTED after a gap.

    A RELISTED event carries the whole list (`{"items": [...]}`) the watch re-read after a gap: objects
    missing from it were deleted during the gap.
    """

    t: float
    type: str
    object: JsonDict | None
    gap: str | None = None  # why events may be missing before this one (410 Gone, dropped connection)

    def to_json(self) -> JsonDict:
        out: JsonDict = {"t": round(self.t, 3), "type": self.type, "object": self.object}
        if self.gap:
            out["gap"] = self.gap
        return out

    @classmethod
    def from_json(cls, data: JsonDict) -> WatchEvent:
        return cls(float(data["t"]), data["type"], data.get("object"), data.get("gap"))


class WatchHandle(Protocol):
    def next_event(self, timeout: float) -> WatchEvent | None:
        """The next event, or None when none arrived within `timeout` seconds."""
        ...

    def close(self) -> None: ...


class Transport(ABC):
    """Everything a probe may ask of a cluster, each call declared once: here.

    A call is its name and its arguments by name (the request); what it returns is the response. That is
    what a recording holds and a replay matches. `LiveTransport` overrides the calls with the Kubernetes
    API and the node; `RecordingTransport` and `ReplayTransport` implement `call` alone, for every call.
    """

    node_access: bool  # False on clusters the suite did not create: node checks are "not observable"
    views: ViewMemo | None = None  # a replay's: the views its observers made of the recording's objects

    @abstractmethod
    def now(self) -> float: ...

    @abstractmethod
    def pause(self, seconds: float) -> None:
        """Wait between polls of something that cannot be watched (the node's containers)."""

    @abstractmethod
    def last_call_started(self) -> float:
        """When the last action (see ACTIONS) was sent (transport clock): the instant it happened."""

    def call(self, call_name: str, /, **request: Any) -> Any:
        """Carry out one of the calls below, by name (the layers that do not override the calls themselves)."""
        raise NotImplementedError(f"{type(self).__name__} does not carry out {call_name}")

    def server_version(self) -> JsonDict:
        return cast(JsonDict, self.call("server_version"))

    def wall_clock(self) -> float:
        """Seconds since the epoch on this machine, which in kind is also the API server's and nodes' clock."""
        return float(self.call("wall_clock"))

    def create(self, namespace: str, manifest: JsonDict) -> JsonDict:
        return cast(JsonDict, self.call("create", namespace=namespace, manifest=manifest))

    def get(self, kind: str, namespace: str, name: str) -> JsonDict | None:
        return cast("JsonDict | None", self.call("get", kind=kind, namespace=namespace, name=name))

    def delete(self, kind: str, namespace: str, name: str, grace_period_seconds: int | None = None) -> JsonDict:
        request = {"kind": kind, "namespace": namespace, "name": name, "grace_period_seconds": grace_period_seconds}
        return cast(JsonDict, self.call("delete", **request))

    def list_objects(self, kind: str, namespace: str) -> JsonDict:
        """The list, or `{"notServed": true}` when the server does not serve this kind's API version."""
        return cast(JsonDict, self.call("list_objects", kind=kind, namespace=namespace))

    def patch(self, kind: str, namespace: str, name: str, patch: JsonDict) -> JsonDict:
        """A JSON merge patch (RFC 7386) of one object; the request's start is an action instant."""
        return cast(JsonDict, self.call("patch", kind=kind, namespace=namespace, name=name, patch=patch))

    def evict(self, namespace: str, pod: str, api_version: str) -> JsonDict:
        """POST an Eviction (`policy/v1`, or `policy/v1beta1` before 1.22) for a pod; returns the server's Status."""
        return cast(JsonDict, self.call("evict", namespace=namespace, pod=pod, api_version=api_version))

    def watch(self, kind: str, namespace: str, name: str | None, resource_version: str) -> WatchHandle:
        """Watch one named object, or (name None) every object of the kind in the namespace."""
        request = {"kind": kind, "namespace": namespace, "name": name, "resource_version": resource_version}
        return cast(WatchHandle, self.call("watch", **request))

    def list_events(self, namespace: str) -> list[JsonDict]:
        return cast(list[JsonDict], self.call("list_events", namespace=namespace))

    def read_log(self, namespace: str, pod: str, container: str) -> str:
        return cast(str, self.call("read_log", namespace=namespace, pod=pod, container=container))

    def node_containers(self, node: str) -> list[JsonDict] | None:
        return cast("list[JsonDict] | None", self.call("node_containers", node=node))

    def node_shutdown(self, node: str, starting: bool) -> JsonDict:
        """Tell a node's kubelet that the node is shutting down (True) or that the shutdown was cancelled (False).

        Only on clusters the suite created from its shutdown-capable node image (harness/nodeimage/shutdown.py);
        returns whether the kubelet held its inhibitor lock, and what the node printed.
        """
        return cast(JsonDict, self.call("node_shutdown", node=node, starting=starting))


class Rejected(RuntimeError):
    """The API server refused a request as invalid (400/422): e.g. a field this version does not know."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message

    def to_json(self) -> JsonDict:
        return {"status": self.status, "message": self.message}
