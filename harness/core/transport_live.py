"""The live transport: the Kubernetes API through the official client (as raw JSON, transport_raw.py) and the node
through the cluster's own lister, each call as `Transport` declares it; its watches are read by a background thread
that resumes, and re-lists across a gap, marking it.
"""

from __future__ import annotations

import contextlib
import json
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from harness.base.kubeapi import APPS, BATCH, CORE, DISCOVERY, KindCalls, KubeApi
from harness.core.transport import JsonDict, Rejected, Transport, WatchEvent, WatchHandle
from harness.core.transport_raw import api_retry, is_transient, raw_call, raw_watch_events

if TYPE_CHECKING:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

# The Kubernetes client (and urllib3 with it) is imported by the live transport's code only, where it is used: a
# replay, a collection or a refusal does not wait the few tenths of a second its import takes.

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
