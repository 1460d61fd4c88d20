"""How a probe talks to a cluster: live (Kubernetes API + node), recording, or replaying a recording.

Probes never call the Kubernetes client directly. They go through a `Transport`, so the same probe
code, waits and evaluation run against a live kind cluster and, offline, against a recording of one.
A recording is the list of calls the probe made with what came back, including every watch event it
received and when (seconds on the transport's clock). The calls are declared once, in `Transport`;
`LiveTransport` carries them out, `RecordingTransport` writes the list during a live run, and
`ReplayTransport` serves it back in order and refuses calls the recording does not have.

Over 600 lines: the three transports and the recording format are kept together on purpose, since a
recording must replay exactly what the live transport did.
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from tenacity import retry, retry_if_exception, stop_after_attempt, stop_after_delay, wait_exponential

from harness.base.kubeapi import APPS, BATCH, CORE, DISCOVERY, KindCalls, KubeApi

if TYPE_CHECKING:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

# The Kubernetes client (and urllib3 with it) is imported by the live transport's code only, where it is used: a
# replay, a collection or a refusal does not wait the few tenths of a second its import takes.

JsonDict = dict[str, Any]
RECORDING_FORMAT = "pod-lifecycle-probes/recording/v1"
# How Recording.write begins a file: its format, then the probe it is of (all --replay's collection needs of it).
RECORDING_HEAD = re.compile(r'\{\s*"format": "(?P<format>[^"\\]*)",\s*"probe": (?P<probe>"(?:[^"\\]|\\.)*"),')
RECORDING_HEAD_BYTES = 4096
# Calls that act on the cluster: their start is the instant the action happened (also when replayed).
ACTIONS = frozenset({"create", "delete", "patch", "evict", "node_shutdown"})

# Each kind the probes use: its API group's path and resource (harness/base/kubeapi.py); patched: the StatefulSet only.
KIND_RESOURCES = {
    "Pod": (CORE, "pods"),
    "Service": (CORE, "services"),
    "Endpoints": (CORE, "endpoints"),
    "Job": (BATCH, "jobs"),
    "Deployment": (APPS, "deployments"),
    "StatefulSet": (APPS, "statefulsets"),
    "DaemonSet": (APPS, "daemonsets"),
    "EndpointSlice": (DISCOVERY, "endpointslices"),
}
PATCHED_KINDS = frozenset({"StatefulSet"})

# Transient API failures worth retrying (k/k test/e2e/framework/get.go retries the same family:
# timeouts, 429 Too Many Requests, 5xx); everything else is an answer and is raised at once.
TRANSIENT_STATUS = frozenset({0, 429, 500, 502, 503, 504})


def is_transient(err: BaseException) -> bool:
    import urllib3
    from kubernetes.client.exceptions import ApiException

    if isinstance(err, ApiException):
        return (err.status or 0) in TRANSIENT_STATUS
    return isinstance(err, urllib3.exceptions.HTTPError | ConnectionError | TimeoutError)


api_retry = retry(
    retry=retry_if_exception(is_transient),
    stop=stop_after_attempt(6) | stop_after_delay(30),
    wait=wait_exponential(multiplier=0.5, max=5),
    reraise=True,
)


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


# --------------------------------------------------------------------------------------------- live


class Rejected(RuntimeError):
    """The API server refused a request as invalid (400/422): e.g. a field this version does not know."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message

    def to_json(self) -> JsonDict:
        return {"status": self.status, "message": self.message}


def _rejected(err: ApiException) -> Rejected:
    try:
        message = str(json.loads(err.body or "{}").get("message") or err.reason)
    except ValueError:
        message = str(err.body or err.reason)
    return Rejected(int(err.status or 0), message)


class LiveTransport(Transport):
    """The Kubernetes API through the official client, and the kind node through `node_lister`."""

    def __init__(
        self,
        api_client: client.ApiClient,
        node_lister: Callable[[str], list[JsonDict]] | None,
        node_shutdown: Callable[[str, bool], JsonDict] | None = None,
    ) -> None:
        self.core = KubeApi(api_client)  # every API call, not only the core group's (harness/base/kubeapi.py)
        self.node_access = node_lister is not None
        self._node_lister = node_lister
        self._node_shutdown = node_shutdown
        self._origin = time.monotonic()
        self._last_started = 0.0

    def now(self) -> float:
        return time.monotonic() - self._origin

    def pause(self, seconds: float) -> None:
        time.sleep(seconds)

    def last_call_started(self) -> float:
        return self._last_started

    def _kind(self, kind: str) -> KindCalls:
        """Each kind's calls, by its API group and resource (harness/base/kubeapi.py). discovery.k8s.io/v1 is served
        from 1.21; older servers answer 404 (see list_objects)."""
        if kind not in KIND_RESOURCES:
            raise ValueError(f"the live transport does not handle {kind} objects yet")
        return self.core.kind(*KIND_RESOURCES[kind])

    @api_retry
    def server_version(self) -> JsonDict:
        return raw_call(self.core.get_code)

    def wall_clock(self) -> float:
        return time.time()

    @api_retry
    def create(self, namespace: str, manifest: JsonDict) -> JsonDict:
        # The manifest goes to the server as written (the client passes dicts through unchanged), and
        # Strict field validation (server-side, GA in 1.27, ignored by older servers) rejects unknown
        # fields instead of silently dropping them.
        from kubernetes.client.exceptions import ApiException

        api = self._kind(manifest["kind"])
        self._last_started = self.now()
        try:
            return raw_call(api.create, namespace, body=manifest, field_validation="Strict")
        except ApiException as err:
            if err.status in (400, 422):
                raise _rejected(err) from err
            raise

    @api_retry
    def get(self, kind: str, namespace: str, name: str) -> JsonDict | None:
        from kubernetes.client.exceptions import ApiException

        try:
            return raw_call(self._kind(kind).read, name, namespace)
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    @api_retry
    def delete(self, kind: str, namespace: str, name: str, grace_period_seconds: int | None = None) -> JsonDict:
        options = {} if grace_period_seconds is None else {"gracePeriodSeconds": grace_period_seconds}
        self._last_started = self.now()
        return raw_call(self._kind(kind).delete, name, namespace, body=options)

    @api_retry
    def list_objects(self, kind: str, namespace: str) -> JsonDict:
        from kubernetes.client.exceptions import ApiException

        try:
            return raw_call(self._kind(kind).list, namespace)
        except ApiException as err:
            if err.status == 404:
                return {"notServed": True, "metadata": {}, "items": []}
            raise

    @api_retry
    def patch(self, kind: str, namespace: str, name: str, patch: JsonDict) -> JsonDict:
        if kind not in PATCHED_KINDS:
            raise ValueError(f"the live transport does not patch {kind} objects yet")
        patch_fn = self._kind(kind).patch
        self._last_started = self.now()
        # The generated client would send a dict as application/json-patch+json (its first JSON patch
        # type); a merge patch has to be named.
        return raw_call(patch_fn, name, namespace, patch, _content_type="application/merge-patch+json")

    @api_retry
    def evict(self, namespace: str, pod: str, api_version: str) -> JsonDict:
        # pods/eviction takes policy/v1 from 1.22 and policy/v1beta1 before (k/k#100724, CHANGELOG-1.22).
        body = {"apiVersion": api_version, "kind": "Eviction", "metadata": {"name": pod, "namespace": namespace}}
        self._last_started = self.now()
        return raw_call(self.core.create_namespaced_pod_eviction, pod, namespace, body)

    def watch(self, kind: str, namespace: str, name: str | None, resource_version: str) -> WatchHandle:
        return _LiveWatch(self._kind(kind).list, namespace, name, resource_version, self.now)

    @api_retry
    def list_events(self, namespace: str) -> list[JsonDict]:
        return list(raw_call(self.core.list_namespaced_event, namespace).get("items") or [])

    @api_retry
    def read_log(self, namespace: str, pod: str, container: str) -> str:
        return self.core.read_namespaced_pod_log(pod, namespace, container=container)

    def node_containers(self, node: str) -> list[JsonDict] | None:
        return self._node_lister(node) if self._node_lister else None

    def node_shutdown(self, node: str, starting: bool) -> JsonDict:
        if self._node_shutdown is None:
            raise NodeActionUnavailable(
                "this cluster's nodes cannot be told to shut down (not the suite's GNS cluster)"
            )
        self._last_started = self.now()
        return self._node_shutdown(node, starting)


class NodeActionUnavailable(RuntimeError):
    """The probe asked for something done on a node the suite cannot act on."""


def _interrupt(response: Any) -> None:
    """Close a streamed response that another thread is reading, at once.

    Its socket is shut down first: closing the response alone waits for the buffered reader's lock, which the
    reading thread holds until its next event or the server's timeout. Seen live (v1.37.0, local, py-spy): a Job
    probe's teardown waited 22 s in `close`, one watch after another, and each probe's end waited as long.
    """
    # The socket: on the urllib3 connection while it may be kept alive (HTTP/1.1, the API server), else handed to
    # the http.client response's reader (a connection that closes after the response)
    sock = getattr(getattr(response, "connection", None), "sock", None)
    if sock is None:
        reader = getattr(getattr(response, "_fp", None), "fp", None)
        sock = getattr(getattr(reader, "raw", None), "_sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):  # already closed: close() below has nothing to wait for
            sock.shutdown(socket.SHUT_RDWR)
    response.close()


def raw_call(call: Callable[..., Any], *args: Any, **kwargs: Any) -> JsonDict:
    """Call the client without building its models: the JSON exactly as the API server sent it.

    The client (37.x) validates responses against its own, newest schema; an older server's objects (or a
    field the client marks required) would fail there for no reason the suite cares about.
    """
    return cast(JsonDict, json.loads(call(*args, _preload_content=False, **kwargs).data))


def raw_watch_events(response: Any) -> Iterator[JsonDict]:
    """The events of one watch response as raw JSON; an ERROR event (e.g. 410 Gone) becomes an ApiException."""
    for line in _lines(response):
        if not line.strip():
            continue
        event = json.loads(line)
        if event.get("type") == "ERROR":
            from kubernetes.client.exceptions import ApiException

            status = event.get("object") or {}
            raise ApiException(status=status.get("code"), reason=f"{status.get('reason')}: {status.get('message')}")
        yield event


def watch_until(
    list_fn: Callable[..., Any], done: Callable[[str, JsonDict], bool], timeout_s: float, **kwargs: Any
) -> bool:
    """Watch a list call until done(event_type, object) holds; False when the server-side timeout ends first.

    A watch the server ends with an error it may not give again is started anew in the time left: seen live on
    v1.37.0 (local, 17 workers and a Go build beside), a namespace's deletion watch got 504 "Too large resource
    version: 799, current: 795" (the watch cache behind etcd). A new watch without a resourceVersion starts with
    the objects as they are, so nothing the first one missed is lost for `done`.
    """
    from kubernetes.client.exceptions import ApiException

    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        response = list_fn(watch=True, timeout_seconds=max(int(left), 1), _preload_content=False, **kwargs)
        try:
            return any(done(event["type"], event["object"]) for event in raw_watch_events(response))
        except ApiException as err:
            if err.status not in WATCH_AGAIN or deadline - time.monotonic() < 1:
                raise
        finally:
            response.close()
            response.release_conn()


# A watch's ERROR statuses worth a new watch: 410 Gone (expired), 500 and 504 (the watch cache behind etcd).
WATCH_AGAIN = (410, 500, 504)


def _lines(response: Any) -> Iterator[str]:
    """The lines of a streamed HTTP response as they arrive (the API server sends one watch event a line)."""
    pending = b""
    for chunk in response.stream(amt=None, decode_content=False):
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            yield line.decode()
    if pending:
        yield pending.decode()


class _LiveWatch:
    """A watch on one named object (or all of a kind in a namespace), read by a background thread.

    It starts from a given resourceVersion, so nothing after that version is missed even though the
    stream is opened a few milliseconds after the call returns. When the server ends the stream it
    resumes from the last version seen; on 410 Gone or a dropped connection it re-lists, resumes from
    the list's version and marks the gap in a RELISTED event (the Python client does not re-list by
    itself: kubernetes-client/python#728).
    """

    SERVER_TIMEOUT_S = 30

    def __init__(
        self,
        list_fn: Callable[..., Any],
        namespace: str,
        name: str | None,
        resource_version: str,
        clock: Callable[[], float],
    ) -> None:
        self._list_fn = list_fn
        self._response: Any = None
        self._namespace = namespace
        self._selector = {"field_selector": f"metadata.name={name}"} if name else {}
        self._rv = resource_version
        self._clock = clock
        self._events: queue.Queue[WatchEvent] = queue.Queue()
        self._gap_reasons: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"watch-{name or namespace}", daemon=True)
        self._thread.start()

    def next_event(self, timeout: float) -> WatchEvent | None:
        try:
            return self._events.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return None

    def close(self) -> None:
        self._stop.set()
        response = self._response
        if response is not None:
            _interrupt(response)  # unblocks the reading thread, which then sees the stop flag

    def _run(self) -> None:
        import urllib3
        from kubernetes.client.exceptions import ApiException

        failures = 0
        while not self._stop.is_set():
            try:
                for raw in self._stream():
                    failures = 0
                    obj = raw["object"]
                    self._rv = obj.get("metadata", {}).get("resourceVersion", self._rv)
                    if raw["type"] != "BOOKMARK":
                        self._events.put(WatchEvent(self._clock(), raw["type"], obj))
                    if self._stop.is_set():
                        return
            except ApiException as err:
                if self._stop.is_set():
                    return
                if err.status != 410 and not is_transient(err):
                    self._events.put(
                        WatchEvent(self._clock(), "ERROR", None, gap=f"watch failed: {err.status} {err.reason}")
                    )
                    return
                failures += 1
                self._relist(
                    f"watch {'expired (410 Gone)' if err.status == 410 else f'failed ({err.status})'}", failures
                )
            except (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError) as err:
                if self._stop.is_set():
                    return
                failures += 1
                self._relist(f"watch connection lost ({type(err).__name__})", failures)
            except Exception as err:  # anything else ends the watch visibly instead of killing the thread silently
                gap = f"watch failed: {type(err).__name__}: {err}"
                self._events.put(WatchEvent(self._clock(), "ERROR", None, gap=gap))
                return

    def _stream(self) -> Iterator[JsonDict]:
        """One watch request, read line by line as raw JSON events; an ERROR event becomes an ApiException.

        (kubernetes.watch.Watch would build models from every event, and with deserialize=False it cannot
        read ERROR events in client 37.x.)
        """
        response = self._list_fn(
            self._namespace,
            watch=True,
            resource_version=self._rv,
            allow_watch_bookmarks=True,
            timeout_seconds=self.SERVER_TIMEOUT_S,
            _preload_content=False,
            _request_timeout=(10, self.SERVER_TIMEOUT_S + 30),
            **self._selector,
        )
        self._response = response
        try:
            yield from raw_watch_events(response)
        finally:
            self._response = None
            response.close()
            response.release_conn()

    def _relist(self, why: str, failures: int) -> None:
        """Re-list after a gap: what exists now (and, by omission, what is gone) becomes a RELISTED event.

        Every failure since the last good answer is named in the gap (a failed re-list is one too).
        """
        import urllib3
        from kubernetes.client.exceptions import ApiException

        self._gap_reasons.append(why)
        self._stop.wait(min(0.2 * 2**failures, 5.0))
        try:
            listing = raw_call(self._list_fn, self._namespace, **self._selector)
        except ApiException as err:
            self._gap_reasons.append(f"re-list failed ({err.status})")
            return  # the next loop iteration fails again and retries with a longer pause
        except (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError) as err:
            self._gap_reasons.append(f"re-list failed ({type(err).__name__})")
            return
        self._rv = listing["metadata"]["resourceVersion"]
        gap, self._gap_reasons = "; ".join(self._gap_reasons), []
        self._events.put(WatchEvent(self._clock(), "RELISTED", {"items": listing.get("items") or []}, gap=gap))


# ---------------------------------------------------------------------------------------- recording


@dataclass
class Recording:
    """A probe's calls and what came back, in order; the file format of probes/<family>/recordings/."""

    probe: str
    origin: JsonDict
    interactions: list[JsonDict] = field(default_factory=list)

    def to_json(self) -> JsonDict:
        return {
            "format": RECORDING_FORMAT,
            "probe": self.probe,
            "origin": self.origin,
            "interactions": self.interactions,
        }

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=1, sort_keys=False) + "\n")

    @classmethod
    def probe_of(cls, path: Path) -> str:
        """The probe a recording is of, from the head of the file where Recording.write puts it (the file is read
        whole when the probe replays it: a recording is about 120 KB, its head is all collection needs); a file that
        does not begin so is read whole here, refused as Recording.load refuses it."""
        with path.open("rb") as file:
            head = file.read(RECORDING_HEAD_BYTES).decode("utf-8", errors="replace")
        found = RECORDING_HEAD.match(head)
        if found is None or found["format"] != RECORDING_FORMAT:
            return cls.load(path).probe
        return str(json.loads(found["probe"]))

    @classmethod
    def load(cls, path: Path) -> Recording:
        data = json.loads(path.read_text())
        if data.get("format") != RECORDING_FORMAT:
            raise ValueError(f"{path}: not a recording in format {RECORDING_FORMAT} (format={data.get('format')!r})")
        return cls(data["probe"], data["origin"], data["interactions"])

    def server_git_version(self) -> str:
        for step in self.interactions:
            if step["call"] == "server_version":
                return str(step["response"]["gitVersion"])
        raise ValueError(f"recording of {self.probe} never asked for the server version")


class RecordingTransport(Transport):
    """Passes every call to a live transport and writes down what it asked and what came back."""

    def __init__(self, inner: Transport, recording: Recording) -> None:
        self.inner = inner
        self.recording = recording
        self.node_access = inner.node_access

    def now(self) -> float:
        return self.inner.now()

    def pause(self, seconds: float) -> None:
        self.inner.pause(seconds)

    def last_call_started(self) -> float:
        return self.inner.last_call_started()

    def call(self, call_name: str, /, **request: Any) -> Any:
        step: JsonDict = {"call": call_name, "request": request, "t_start": round(self.inner.now(), 3)}
        if call_name == "watch":  # its events are written down as they arrive
            step["events"] = []
            self.recording.interactions.append(step)
            return _RecordingWatch(self.inner.watch(**request), step, self.inner.now)
        try:
            response = getattr(self.inner, call_name)(**request)
        except Rejected as rejected:
            self._write(step, rejected=rejected.to_json())
            raise
        self._write(step, response=response)
        return response

    def _write(self, step: JsonDict, **outcome: Any) -> None:
        if step["call"] in ACTIONS:
            step["t_start"] = round(self.inner.last_call_started(), 3)
        step["t_end"] = round(self.inner.now(), 3)
        self.recording.interactions.append({**step, **outcome})


class _RecordingWatch:
    def __init__(self, inner: WatchHandle, step: JsonDict, clock: Callable[[], float]) -> None:
        self._inner = inner
        self._step = step
        self._clock = clock

    def next_event(self, timeout: float) -> WatchEvent | None:
        event = self._inner.next_event(timeout)
        if event is not None:
            self._step["events"].append(event.to_json())
        return event

    def close(self) -> None:
        self._step.setdefault("closed_at", round(self._clock(), 3))
        self._inner.close()


# ------------------------------------------------------------------------------------------- replay


class RecordingMismatch(AssertionError):
    """The probe asked for something the recording does not contain: the probe changed since."""


class ReplayTransport(Transport):
    """Serves a recording back, in order, on a virtual clock: only the transport differs from a live run."""

    # A probe may ask for slightly more watch time than was recorded (float rounding of deadlines).
    CLOCK_SLACK_S = 1.0

    def __init__(self, recording: Recording, node_access: bool = True) -> None:
        self.recording = recording
        self.node_access = node_access and recording.origin.get("node_access", True)
        self._steps = list(recording.interactions)
        self._position = 0
        self._now = 0.0
        self._last_started = 0.0

    def now(self) -> float:
        return self._now

    def pause(self, seconds: float) -> None:
        self.advance_to(self._now + seconds)

    def last_call_started(self) -> float:
        return self._last_started

    def advance_to(self, t: float) -> None:
        self._now = max(self._now, t)

    def _next(self, call: str, request: JsonDict) -> JsonDict:
        if self._position >= len(self._steps):
            raise RecordingMismatch(
                f"the probe called {call}({_brief(request)}) but the recording of {self.recording.probe} "
                f"ended after {len(self._steps)} calls"
            )
        step = self._steps[self._position]
        recorded = {k: step["request"].get(k) for k in request}
        if step["call"] != call or recorded != request:
            raise RecordingMismatch(
                f"call {self._position + 1} of the recording of {self.recording.probe} is "
                f"{step['call']}({_brief(step['request'])}), but the probe called {call}({_brief(request)})"
            )
        self._position += 1
        self._last_started = float(step.get("t_start", self._now))
        self.advance_to(self._last_started)
        recorded_t = step["t_end"] if "t_end" in step else step.get("t_start", self._now)
        self.advance_to(float(recorded_t))
        return step

    def call(self, call_name: str, /, **request: Any) -> Any:
        # Matched: the call and its arguments, but for the version a watch starts from (the recorded server's)
        # and a manifest, which is compared on its own to say where it differs.
        step = self._next(call_name, {k: v for k, v in request.items() if k not in ("manifest", "resource_version")})
        if "manifest" in request and step["request"].get("manifest") != request["manifest"]:
            raise RecordingMismatch(
                f"the probe created a different {request['manifest'].get('kind')} than the recording of "
                f"{self.recording.probe} holds: {_diff(step['request'].get('manifest'), request['manifest'])}"
            )
        if "rejected" in step:
            raise Rejected(int(step["rejected"]["status"]), str(step["rejected"]["message"]))
        if call_name == "watch":
            events = [WatchEvent.from_json(e) for e in step["events"]]
            closed_at = step.get("closed_at", events[-1].t if events else self._now)
            return _ReplayWatch(self, events, float(closed_at))
        if call_name == "node_containers" and not self.node_access:
            return None
        return step["response"]

    def unused_calls(self) -> list[str]:
        return [f"{s['call']}({_brief(s['request'])})" for s in self._steps[self._position :]]


class _ReplayWatch:
    def __init__(self, transport: ReplayTransport, events: list[WatchEvent], closed_at: float) -> None:
        self._transport = transport
        self._events = events
        self._closed_at = closed_at
        self._position = 0

    def next_event(self, timeout: float) -> WatchEvent | None:
        now = self._transport.now()
        if self._position < len(self._events) and self._events[self._position].t <= now + timeout:
            event = self._events[self._position]
            self._position += 1
            self._transport.advance_to(event.t)
            return event
        if now + timeout > self._closed_at + self._transport.CLOCK_SLACK_S:
            raise RecordingMismatch(
                f"the probe kept watching until t={now + timeout:.1f}s but the recording of "
                f"{self._transport.recording.probe} stopped watching at t={self._closed_at:.1f}s"
            )
        self._transport.advance_to(now + timeout)
        return None

    def close(self) -> None:
        self._transport.advance_to(self._closed_at)


def _brief(request: JsonDict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in request.items() if k != "manifest")


def _diff(recorded: Any, asked: Any, path: str = "") -> str:
    if isinstance(recorded, dict) and isinstance(asked, dict):
        for key in sorted(set(recorded) | set(asked)):
            if recorded.get(key) != asked.get(key):
                return _diff(recorded.get(key), asked.get(key), f"{path}.{key}")
    return f"{path or '.'}: recorded {recorded!r}, probe {asked!r}"
