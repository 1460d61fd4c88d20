"""The live transport through the official client, against a stand-in API server on 127.0.0.1.

What is real here: the kubernetes client's ApiClient (configuration, TLS-less HTTP, connection pool), the
requests harness/base/kubeapi.py builds with it, the watch-stream parsing, and LiveTransport.
What is stood in: the API server (tests/fake_apiserver.py), which only answers the requests made here.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from harness.base.kubeapi import KubeApi, query_name
from harness.core.transport import Rejected
from harness.core.transport_live import LiveTransport
from tests.doubles import pod
from tests.fake_apiserver import Script, fake_apiserver

pytestmark = pytest.mark.mostly_waits  # on the stand-in API server's delays and retries

MANIFEST = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "running-pod", "finalizers": ["pod-lifecycle-probes.test/hold"]},
    "spec": {"terminationGracePeriodSeconds": 5, "containers": [{"name": "main", "image": "alpine"}]},
}


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def transport(script: Script) -> Iterator[LiveTransport]:
    with fake_apiserver(script) as url:
        configuration = client.Configuration(host=url)
        yield LiveTransport(client.ApiClient(configuration), node_lister=None)


def test_create_sends_the_manifest_as_written_with_strict_field_validation(
    transport: LiveTransport, script: Script
) -> None:
    created = transport.create("ns", copy.deepcopy(MANIFEST))
    method, path, query, body = script.requests[-1]
    assert (method, path) == ("POST", "/api/v1/namespaces/ns/pods")
    assert query["fieldValidation"] == ["Strict"]
    assert body["metadata"]["finalizers"] == ["pod-lifecycle-probes.test/hold"]
    assert created["metadata"]["resourceVersion"] == "11"
    assert created["status"]["phase"] == "Pending"


def test_server_version_delete_with_override_log_and_events(transport: LiveTransport, script: Script) -> None:
    assert transport.server_version()["gitVersion"] == "v1.27.3"
    transport.create("ns", copy.deepcopy(MANIFEST))
    deleting = transport.delete("Pod", "ns", "running-pod", grace_period_seconds=3)
    method, path, _, body = script.requests[-1]
    assert (method, path) == ("DELETE", "/api/v1/namespaces/ns/pods/running-pod")
    assert body["gracePeriodSeconds"] == 3
    assert deleting["metadata"]["deletionGracePeriodSeconds"] == 3
    assert transport.read_log("ns", "running-pod", "main") == "Hello world\n"
    assert script.requests[-1][2]["container"] == ["main"]
    assert transport.list_events("ns") == []


def watch_line(type_: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"type": type_, "object": obj}


def test_a_watch_resumes_after_410_with_a_relist_and_says_so(transport: LiveTransport, script: Script) -> None:
    script.pods["running-pod"] = pod(rv="30")
    gone = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": 410,
        "reason": "Expired",
        "message": "too old",
    }
    script.watch_streams = [
        [watch_line("MODIFIED", pod(rv="21")), watch_line("ERROR", gone)],
        [watch_line("MODIFIED", pod(rv="32", phase="Failed"))],
    ]
    handle = transport.watch("Pod", "ns", "running-pod", "20")
    try:
        events = [handle.next_event(10.0) for _ in range(3)]
    finally:
        handle.close()
    assert [e.type if e else None for e in events] == ["MODIFIED", "RELISTED", "MODIFIED"]
    assert events[1] is not None and events[1].gap == "watch expired (410 Gone)"
    assert events[1].object is not None and events[1].object["items"][0]["metadata"]["resourceVersion"] == "30"
    watches = [q for m, p, q, _ in script.requests if q.get("watch") == ["true"]]
    assert watches[0]["resourceVersion"] == ["20"]
    assert watches[0]["fieldSelector"] == ["metadata.name=running-pod"]
    assert watches[0]["allowWatchBookmarks"] == ["true"]
    assert watches[1]["resourceVersion"] == ["11"]  # resumed from the re-list's version


def test_cluster_setup_and_cleanup_through_the_real_client(script: Script) -> None:
    """Readiness, namespace creation and cleanup (harness/clusters/lifecycle.py, harness/core/namespaces.py) as HTTP
    requests the client really sends."""
    from harness.base.run import PROBE_FINALIZER, SUITE_LABEL
    from harness.clusters.lifecycle import wait_nodes_ready
    from harness.core.namespaces import cleanup_probe_namespace, create_probe_namespace

    with fake_apiserver(script) as url:
        core = KubeApi(client.ApiClient(client.Configuration(host=url)))
        assert wait_nodes_ready(core, timeout_s=60) == ["kind-control-plane"]
        create_probe_namespace(core, "plp-x-1234", "run-1")
        (created,) = [b for m, p, _, b in script.requests if (m, p) == ("POST", "/api/v1/namespaces")]
        assert created["metadata"]["labels"][SUITE_LABEL] == "true"
        script.pods["held"] = {
            "metadata": {"name": "held", "finalizers": [PROBE_FINALIZER, "example.com/keep"]},
            "spec": {},
        }
        report = cleanup_probe_namespace(core, "plp-x-1234", timeout_s=60)
    assert report.finalizers_removed == ["held"] and report.namespace_deleted and not report.errors
    (content_type, patch) = next(b for m, _, _, b in script.requests if m == "PATCH")
    assert content_type == "application/json-patch+json"
    assert patch[0] == {"op": "test", "path": "/metadata/finalizers", "value": [PROBE_FINALIZER, "example.com/keep"]}
    assert script.pods["held"]["metadata"]["finalizers"] == ["example.com/keep"]
    (forced,) = [q for m, p, q, _ in script.requests if (m, p) == ("DELETE", "/api/v1/namespaces/plp-x-1234/pods")]
    assert forced["gracePeriodSeconds"] == ["0"]  # the pods, once the namespace is going, without their grace


def test_transient_api_errors_are_retried_and_other_errors_are_not(transport: LiveTransport, script: Script) -> None:
    """Injected by the stand-in API server: 503 then 429 on create, retried; 403 on create, raised at once."""
    from kubernetes.client.exceptions import ApiException

    script.faults[("POST", "pods")] = [503, 429]
    created = transport.create("ns", copy.deepcopy(MANIFEST))
    assert created["metadata"]["name"] == "running-pod"
    assert [m for m, p, _, _ in script.requests if (m, p) == ("POST", "/api/v1/namespaces/ns/pods")] == ["POST"] * 3
    script.faults[("POST", "pods")] = [403]
    with pytest.raises(ApiException) as err:
        transport.create("ns", copy.deepcopy(MANIFEST))
    assert err.value.status == 403


def test_a_watch_refused_with_500_is_retried_with_a_relist_and_a_marked_gap(
    transport: LiveTransport, script: Script
) -> None:
    script.pods["running-pod"] = pod(rv="30")
    script.faults[("GET", "pods")] = [500]  # the first watch request fails
    script.watch_streams = [[watch_line("MODIFIED", pod(rv="32", phase="Failed"))]]
    handle = transport.watch("Pod", "ns", "running-pod", "20")
    try:
        events = [handle.next_event(10.0) for _ in range(2)]
    finally:
        handle.close()
    assert [e.type if e else None for e in events] == ["RELISTED", "MODIFIED"]
    assert events[0] is not None and events[0].gap == "watch failed (500)"


def test_evict_posts_an_eviction_of_the_version_asked_for(transport: LiveTransport, script: Script) -> None:
    status = transport.evict("ns", "running-pod", "policy/v1beta1")
    method, path, _, body = script.requests[-1]
    assert (method, path) == ("POST", "/api/v1/namespaces/ns/pods/running-pod/eviction")
    assert body == {
        "apiVersion": "policy/v1beta1",
        "kind": "Eviction",
        "metadata": {"name": "running-pod", "namespace": "ns"},
    }
    assert status["status"] == "Success"


def test_patch_sends_a_merge_patch_not_a_json_patch(transport: LiveTransport, script: Script) -> None:
    patched = transport.patch(
        "StatefulSet", "ns", "web", {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 2}}}}
    )
    method, path, _, (content_type, body) = script.requests[-1]
    assert (method, path) == ("PATCH", "/apis/apps/v1/namespaces/ns/statefulsets/web")
    assert content_type == "application/merge-patch+json"
    assert body == {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 2}}}}
    assert patched["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 2


def test_a_create_refused_as_invalid_is_a_rejection_with_the_servers_message(
    transport: LiveTransport, script: Script
) -> None:
    script.faults[("POST", "pods")] = [400]
    with pytest.raises(Rejected, match="injected 400") as refused:
        transport.create("ns", copy.deepcopy(MANIFEST))
    assert refused.value.status == 400
    assert len([r for r in script.requests if r[0] == "POST"]) == 1  # an answer, not retried


def test_a_sequence_of_429_and_5xx_on_the_watch_relists_each_time_and_marks_every_gap(
    transport: LiveTransport, script: Script
) -> None:
    """Injected by the stand-in API server: 429, 502, 503 on three watch requests in a row, then a stream."""
    script.pods["running-pod"] = pod(rv="30")
    script.faults[("GET", "pods")] = [429, 502, 503]
    script.watch_streams = [[watch_line("MODIFIED", pod(rv="32", phase="Failed"))]]
    handle = transport.watch("Pod", "ns", "running-pod", "20")
    try:
        events = []
        while (event := handle.next_event(15.0)) is not None:
            events.append(event)
            if event.type == "MODIFIED":
                break
    finally:
        handle.close()
    assert [e.type for e in events] == ["RELISTED", "MODIFIED"]
    # the re-list after the 429 met the 502: one gap, naming every failure in it
    assert events[0].gap == "watch failed (429); re-list failed (502); watch failed (503)"


def no_pause_between_retries(monkeypatch: pytest.MonkeyPatch, *methods: Any) -> None:
    """The retry policy as configured, minus its exponential pauses (they only make the test slow)."""
    from tenacity import wait_none

    for method in methods:
        monkeypatch.setattr(method.retry, "wait", wait_none())


def test_a_server_that_keeps_failing_is_given_up_on_visibly(
    transport: LiveTransport, script: Script, monkeypatch: pytest.MonkeyPatch
) -> None:
    """503 on every attempt: the retry budget (6 attempts) runs out and the error is raised, not swallowed."""
    from kubernetes.client.exceptions import ApiException

    no_pause_between_retries(monkeypatch, LiveTransport.create)
    script.faults[("POST", "pods")] = [503] * 10
    with pytest.raises(ApiException) as err:
        transport.create("ns", copy.deepcopy(MANIFEST))
    assert err.value.status == 503
    assert len([r for r in script.requests if r[0] == "POST"]) == 6


def test_connection_refused_is_retried_then_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing listens on the port (the API server went away): retried as transient, then raised."""
    import socket

    import urllib3

    no_pause_between_retries(monkeypatch, LiveTransport.server_version)
    with socket.socket() as probe_port:
        probe_port.bind(("127.0.0.1", 0))
        port = probe_port.getsockname()[1]
    configuration = client.Configuration(host=f"http://127.0.0.1:{port}")
    configuration.retries = False
    transport = LiveTransport(client.ApiClient(configuration), node_lister=None)
    with pytest.raises((urllib3.exceptions.HTTPError, ConnectionError)):
        transport.server_version()
    assert LiveTransport.server_version.retry.statistics["attempt_number"] == 6


def test_query_parameters_are_named_as_the_api_names_them() -> None:
    assert [query_name(a) for a in ("field_selector", "timeout_seconds", "_continue", "watch")] == [
        "fieldSelector",
        "timeoutSeconds",
        "continue",
        "watch",
    ]


# A live run's calls, every kind and group: what a pytest-xdist worker does at its first probe.
EVERY_GROUP = """
import sys
from kubernetes import client
from harness.clusters.lifecycle import wait_nodes_ready
from harness.core.namespaces import create_probe_namespace
from harness.core.transport_live import LiveTransport
from tests.fake_apiserver import Script, fake_apiserver

with fake_apiserver(Script()) as url:
    api = client.ApiClient(client.Configuration(host=url))
    transport = LiveTransport(api, node_lister=None)
    transport.server_version()
    wait_nodes_ready(transport.core, timeout_s=60)
    create_probe_namespace(transport.core, "plp-x-1234", "run-1")
    for kind in ("Pod", "Service", "Endpoints", "Job", "Deployment", "StatefulSet", "DaemonSet", "EndpointSlice"):
        transport.list_objects(kind, "plp-x-1234")
print(sorted(m for m in sys.modules if m.startswith("kubernetes.client.api.")))
"""


def test_live_calls_load_none_of_the_clients_generated_api_modules() -> None:
    """Importing CoreV1Api costs about 1.2 s of CPU per process (client 37.x), paid by every pytest-xdist worker at
    once (harness/base/kubeapi.py); the suite's calls go through ApiClient alone."""
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run(
        [sys.executable, "-c", EVERY_GROUP],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_closing_a_watch_waiting_for_its_next_event_returns_at_once(transport: LiveTransport, script: Script) -> None:
    """The API server sends a watch's headers at once and its events when they happen; closing the watch between
    two events must not wait for the next one (live on v1.37.0: a Job probe's teardown waited 22 s in close)."""
    import time

    handle = transport.watch("Pod", "ns", "running-pod", "20")  # nothing scripted: the stand-in holds it 30 s
    deadline = time.monotonic() + 60  # a hang guard: a loaded machine runs the reading thread seconds late
    while not any(m == "GET" and q.get("watch") == ["true"] for m, _, q, _ in script.requests):
        assert time.monotonic() < deadline, "the watch request never reached the stand-in"
        time.sleep(0.02)
    time.sleep(0.3)  # the reading thread is now (most likely) blocked on the held body
    started = time.monotonic()
    handle.close()
    # Waiting for the next event would take the stand-in's 30 s hold; returning at once takes milliseconds, and
    # under load seconds: half the hold tells the two apart whatever the machine's speed.
    assert time.monotonic() - started < 15
