"""A stand-in for the Kubernetes API server on 127.0.0.1, for testing the live transport offline.

It is not Kubernetes: it answers the handful of requests the live transport makes, the way the API
server does (paths, JSON bodies, watch streams of JSON lines, an ERROR event with code 410), and records
every request so tests can check what the official client actually sent.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from harness.base.manifests import merge_patch

JsonDict = dict[str, Any]
# A watch stream that starts with this marker is sent only once the pod has been deleted.
AFTER_DELETE: JsonDict = {"after": "DELETE"}


@dataclass
class Script:
    """What the stand-in answers: the version, and per watch request (in order) the lines to stream."""

    git_version: str = "v1.27.3"
    watch_streams: list[list[JsonDict]] = field(default_factory=list)
    pods: dict[str, JsonDict] = field(default_factory=dict)
    log: str = "Hello world\n"
    namespaces: set[str] = field(default_factory=set)
    deleted: threading.Event = field(default_factory=threading.Event)
    stopping: threading.Event = field(default_factory=threading.Event)  # set when the stand-in shuts down
    # Faults to inject: (method, last path segment) -> statuses to answer, one per request, before behaving.
    faults: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    nodes_ready: str = "True"
    requests: list[tuple[str, str, dict[str, list[str]], Any]] = field(default_factory=list)
    workloads: dict[str, JsonDict] = field(default_factory=dict)  # by path: StatefulSets etc. as patched
    rv: int = 10

    def next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)


def _handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output quiet
            pass

        def _fault(self, path: str) -> bool:
            """Answer with an injected error status if one is scripted for this request."""
            pending = script.faults.get((self.command, path.rstrip("/").rsplit("/", 1)[-1]))
            if not pending:
                return False
            status = pending.pop(0)
            body = {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "code": status,
                "reason": "Injected",
                "message": f"injected {status}",
            }
            self._send(status, body)
            return True

        def _record(self, body: Any = None) -> tuple[str, dict[str, list[str]]]:
            url = urlparse(self.path)
            query = parse_qs(url.query)
            path = url.path.rstrip("/") or "/"
            script.requests.append((self.command, path, query, body))
            return path, query

        def _send(self, status: int, body: Any, content_type: str = "application/json") -> None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            path, query = self._record()
            if self._fault(path):
                return
            parts = path.strip("/").split("/")
            if path == "/version":
                self._send(200, {"major": "1", "minor": "27", "gitVersion": script.git_version})
            elif path == "/api/v1/nodes":
                node = {
                    "metadata": {"name": "kind-control-plane"},
                    "status": {"conditions": [{"type": "Ready", "status": script.nodes_ready}]},
                }
                self._send(
                    200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": [node]}
                )
            elif parts[-1] == "serviceaccounts":
                items = (
                    [{"metadata": {"name": "default", "namespace": parts[3]}}] if parts[3] in script.namespaces else []
                )
                self._send(200, {"kind": "ServiceAccountList", "apiVersion": "v1", "metadata": {}, "items": items})
            elif len(parts) == 4 and parts[2] == "namespaces":
                if parts[3] in script.namespaces:
                    self._send(200, {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": parts[3]}})
                else:
                    self._send(
                        404,
                        {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404, "reason": "NotFound"},
                    )
            elif parts[-1] == "log":
                self._send(200, script.log, "text/plain")
            elif parts[-1] == "events":
                self._send(200, {"kind": "EventList", "apiVersion": "v1", "metadata": {}, "items": []})
            elif parts[-1] == "pods" and query.get("watch") == ["true"]:
                lines = script.watch_streams.pop(0) if script.watch_streams else []
                if lines and lines[0] == AFTER_DELETE:  # hold this stream until the pod is deleted
                    # until the probe deletes it, however late a loaded machine makes that (300 s: a hang guard),
                    # or the stand-in stops
                    held_until = time.monotonic() + 300
                    while not script.deleted.wait(0.2) and not script.stopping.is_set():
                        if time.monotonic() > held_until:
                            break
                    lines = lines[1:]
                # Nothing scripted: an idle watch. As the API server does, its headers go at once and its chunked
                # body is held until the watch's timeout, the client leaving, or the stand-in going away.
                elif not lines:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    self.wfile.flush()
                    script.stopping.wait(float(query.get("timeoutSeconds", ["30"])[0]))
                    with contextlib.suppress(OSError):
                        self.wfile.write(b"0\r\n\r\n")
                    return
                data = "".join(json.dumps(line) + "\n" for line in lines).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            elif parts[-1] == "pods":
                items = list(script.pods.values())
                self._send(
                    200,
                    {
                        "kind": "PodList",
                        "apiVersion": "v1",
                        "metadata": {"resourceVersion": script.next_rv()},
                        "items": items,
                    },
                )
            else:
                self._send(
                    404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404, "reason": "NotFound"}
                )

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            path, _ = self._record(body)
            if self._fault(path):
                return
            if path == "/api/v1/namespaces":
                script.namespaces.add(body["metadata"]["name"])
                self._send(201, body)
                return
            parts = path.strip("/").split("/")
            if parts[-1] == "eviction":  # pods/NAME/eviction: the API server answers with a Status
                self._send(201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201})
                return
            namespace = parts[3]
            body.setdefault("metadata", {}).update(namespace=namespace, uid="uid-1", resourceVersion=script.next_rv())
            body["status"] = {"phase": "Pending"}
            script.pods[body["metadata"]["name"]] = body
            self._send(201, body)

        def do_PATCH(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            path, _ = self._record((self.headers["Content-Type"], body))
            if "/apis/apps/v1/" in path:  # a merge patch of a workload: answer with the patch applied
                merged = merge_patch(script.workloads.get(path, {}), body)  # as the API server applies it
                script.workloads[path] = merged
                self._send(200, merged)
                return
            pod = script.pods[path.strip("/").split("/")[-1]]
            test, replace = body
            if pod["metadata"].get("finalizers") != test["value"]:
                self._send(
                    422, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 422, "reason": "Invalid"}
                )
                return
            pod["metadata"]["finalizers"] = replace["value"]
            self._send(200, pod)

        def do_DELETE(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            path, query = self._record(body)
            parts = path.strip("/").split("/")
            if len(parts) == 5 and parts[2] == "namespaces" and parts[4] == "pods":  # the collection: all at once
                for pod in script.pods.values():
                    pod["metadata"].update(deletionGracePeriodSeconds=int(query["gracePeriodSeconds"][0]))
                self._send(200, {"kind": "PodList", "apiVersion": "v1", "items": list(script.pods.values())})
                return
            if len(parts) == 4 and parts[2] == "namespaces":
                script.namespaces.discard(parts[3])
                self._send(200, {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": parts[3]}})
                return
            pod = script.pods[path.strip("/").split("/")[-1]]
            grace = (body or {}).get("gracePeriodSeconds") or pod["spec"].get("terminationGracePeriodSeconds", 30)
            script.deleted.set()
            pod["metadata"].update(
                deletionTimestamp="2023-12-11T00:00:09Z",
                deletionGracePeriodSeconds=grace,
                resourceVersion=script.next_rv(),
            )
            self._send(200, pod)

    return Handler


@contextmanager
def fake_apiserver(script: Script) -> Iterator[str]:
    """Serve `script` on a free loopback port; yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    # A short poll interval: shutdown() waits for the serving loop to notice (0.5 s by default, per test).
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        script.stopping.set()
        server.shutdown()
        server.server_close()
