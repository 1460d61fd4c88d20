"""The live cluster a run probes: readiness, per-probe namespaces, and their cleanup.

Every call reads the API server's JSON as sent (harness.transport.raw_call / raw_watch_events), not the
client's models, so objects from older servers cannot fail the client's validation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from harness.run import PROBE_FINALIZER, RUN_LABEL, SUITE_LABEL
from harness.transport import JsonDict, api_retry, raw_call, raw_watch_events


class NotReady(RuntimeError):
    """The cluster or a namespace did not become usable in time; says what was last seen."""


def _watch_until(
    list_fn: Callable[..., Any], done: Callable[[str, JsonDict], bool], timeout_s: float, **kwargs: Any
) -> bool:
    """Watch a list call until done(event_type, object) holds; False when the server-side timeout ends first."""
    response = list_fn(watch=True, timeout_seconds=max(int(timeout_s), 1), _preload_content=False, **kwargs)
    try:
        return any(done(event["type"], event["object"]) for event in raw_watch_events(response))
    finally:
        response.close()
        response.release_conn()


def _ready(node: JsonDict) -> str:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return str(condition.get("status"))
    return "Unknown"


def wait_nodes_ready(core: client.CoreV1Api, timeout_s: float = 180) -> list[str]:
    """Wait until every node reports Ready=True (kind's --wait exits 0 even when it times out)."""

    def states() -> dict[str, str]:
        return {n["metadata"]["name"]: _ready(n) for n in raw_call(core.list_node).get("items") or []}

    def all_ready() -> bool:
        seen = states()
        return bool(seen) and all(s == "True" for s in seen.values())

    if not all_ready() and not _watch_until(core.list_node, lambda _t, _o: all_ready(), timeout_s):
        seen = ", ".join(f"{k}: Ready={v}" for k, v in states().items())
        raise NotReady(f"nodes not Ready after {timeout_s:.0f}s; last seen: {seen or 'no nodes'}")
    return list(states())


@api_retry
def create_probe_namespace(core: client.CoreV1Api, name: str, run_id: str, timeout_s: float = 60) -> None:
    """Create a labelled namespace and wait for its default ServiceAccount (pods are refused before it)."""
    body = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {SUITE_LABEL: "true", RUN_LABEL: run_id}},
    }
    try:
        raw_call(core.create_namespace, body)
    except ApiException as err:
        if err.status != 409:
            raise
    selector = {"namespace": name, "field_selector": "metadata.name=default"}
    if raw_call(core.list_namespaced_service_account, **selector).get("items"):
        return
    if not _watch_until(core.list_namespaced_service_account, lambda _t, _o: True, timeout_s, **selector):
        raise NotReady(f"namespace {name}: no default ServiceAccount after {timeout_s:.0f}s")


@dataclass
class CleanupReport:
    namespace: str
    finalizers_removed: list[str] = field(default_factory=list)
    namespace_deleted: bool = False
    errors: list[str] = field(default_factory=list)


def cleanup_probe_namespace(core: client.CoreV1Api, name: str, timeout_s: float = 120) -> CleanupReport:
    """Remove the suite's finalizer from the namespace's pods, delete the namespace, wait until it is gone.

    Only the suite's own finalizer is removed, each with a JSON patch that first tests the list is
    unchanged; other finalizers are left alone. Every step runs even if an earlier one failed.
    """
    report = CleanupReport(name)
    try:
        pods = raw_call(core.list_namespaced_pod, name).get("items") or []
    except ApiException as err:
        if err.status == 404:
            report.namespace_deleted = True
            return report
        report.errors.append(f"list pods: {err.status} {err.reason}")
        pods = []
    for pod in pods:
        pod_name = pod["metadata"]["name"]
        finalizers = list(pod["metadata"].get("finalizers") or [])
        if PROBE_FINALIZER not in finalizers:
            continue
        try:
            remove_probe_finalizer(core, name, pod_name, finalizers)
            report.finalizers_removed.append(pod_name)
        except ApiException as err:
            report.errors.append(f"remove finalizer from pod {pod_name}: {err.status} {err.reason}")
    try:
        raw_call(core.delete_namespace, name)
    except ApiException as err:
        if err.status != 404:
            report.errors.append(f"delete namespace: {err.status} {err.reason}")
            return report
    report.namespace_deleted = _namespace_gone(core, name, timeout_s)
    if not report.namespace_deleted:
        report.errors.append(f"namespace {name} still exists {timeout_s:.0f}s after deletion")
    return report


@api_retry
def remove_probe_finalizer(core: client.CoreV1Api, namespace: str, pod: str, finalizers: list[str]) -> None:
    remaining = [f for f in finalizers if f != PROBE_FINALIZER]
    patch = [
        {"op": "test", "path": "/metadata/finalizers", "value": finalizers},
        {"op": "replace", "path": "/metadata/finalizers", "value": remaining},
    ]
    try:
        raw_call(core.patch_namespaced_pod, pod, namespace, patch)
    except ApiException as err:
        if err.status == 404:
            return
        if err.status == 422:  # the list changed under us: re-read and try again
            current = raw_call(core.read_namespaced_pod, pod, namespace)["metadata"].get("finalizers") or []
            if PROBE_FINALIZER in current:
                remove_probe_finalizer(core, namespace, pod, list(current))
            return
        raise


def _namespace_gone(core: client.CoreV1Api, name: str, timeout_s: float) -> bool:
    def gone() -> bool:
        try:
            raw_call(core.read_namespace, name)
        except ApiException as err:
            if err.status == 404:
                return True
            raise
        return False

    if gone():
        return True
    _watch_until(
        core.list_namespace,
        lambda event_type, _o: event_type == "DELETED",
        timeout_s,
        field_selector=f"metadata.name={name}",
    )
    return gone()
