"""The live cluster a run probes: readiness, per-probe namespaces, and their cleanup."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from harness.run import PROBE_FINALIZER, RUN_LABEL, SUITE_LABEL
from harness.transport import api_retry


class NotReady(RuntimeError):
    """The cluster or a namespace did not become usable in time; says what was last seen."""


def _watch_until(
    list_fn: Callable[..., Any],
    done: Callable[[str, Any], bool],
    timeout_s: float,
    **kwargs: Any,
) -> bool:
    """Watch a list call until done(event_type, object) holds; False when the server-side timeout ends first."""
    stream = cast(
        Iterator[dict[str, Any]],
        watch.Watch().stream(list_fn, timeout_seconds=max(int(timeout_s), 1), **kwargs),
    )
    return any(done(event["type"], event["object"]) for event in stream)


def wait_nodes_ready(core: client.CoreV1Api, timeout_s: float = 180) -> list[str]:
    """Wait until every node reports Ready=True (kind's --wait exits 0 even when it times out)."""

    def all_ready() -> tuple[bool, str]:
        nodes = core.list_node().items
        states = {_name(n): _ready(n) for n in nodes}
        return bool(nodes) and all(s == "True" for s in states.values()), ", ".join(
            f"{k}: Ready={v}" for k, v in states.items()
        )

    ready, seen = all_ready()
    if not ready:
        ready = _watch_until(core.list_node, lambda _t, _o: all_ready()[0], timeout_s)
        seen = all_ready()[1]
    if not ready:
        raise NotReady(f"nodes not Ready after {timeout_s:.0f}s; last seen: {seen or 'no nodes'}")
    return [_name(n) for n in core.list_node().items]


def _name(obj: client.V1Node | client.V1Pod) -> str:
    return str(obj.metadata.name) if obj.metadata else "?"


def _ready(node: client.V1Node) -> str:
    for condition in (node.status.conditions if node.status else None) or []:
        if condition.type == "Ready":
            return str(condition.status)
    return "Unknown"


@api_retry
def create_probe_namespace(core: client.CoreV1Api, name: str, run_id: str, timeout_s: float = 60) -> None:
    """Create a labelled namespace and wait for its default ServiceAccount (pods are refused before it)."""
    body = client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels={SUITE_LABEL: "true", RUN_LABEL: run_id}))
    try:
        core.create_namespace(body)
    except ApiException as err:
        if err.status != 409:
            raise
    if core.list_namespaced_service_account(name, field_selector="metadata.name=default").items:
        return
    if not _watch_until(
        core.list_namespaced_service_account,
        lambda _t, _o: True,
        timeout_s,
        namespace=name,
        field_selector="metadata.name=default",
    ):
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
        pods = core.list_namespaced_pod(name).items
    except ApiException as err:
        if err.status == 404:
            report.namespace_deleted = True
            return report
        report.errors.append(f"list pods: {err.status} {err.reason}")
        pods = []
    for pod in pods:
        finalizers = list((pod.metadata.finalizers if pod.metadata else None) or [])
        if PROBE_FINALIZER not in finalizers:
            continue
        try:
            remove_probe_finalizer(core, name, _name(pod), finalizers)
            report.finalizers_removed.append(_name(pod))
        except ApiException as err:
            report.errors.append(f"remove finalizer from pod {_name(pod)}: {err.status} {err.reason}")
    try:
        core.delete_namespace(name)
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
        core.patch_namespaced_pod(pod, namespace, patch)
    except ApiException as err:
        if err.status == 404:
            return
        if err.status == 422:  # the list changed under us: re-read and try again
            metadata = core.read_namespaced_pod(pod, namespace).metadata
            current = (metadata.finalizers if metadata else None) or []
            if PROBE_FINALIZER in current:
                remove_probe_finalizer(core, namespace, pod, list(current))
            return
        raise


def _namespace_gone(core: client.CoreV1Api, name: str, timeout_s: float) -> bool:
    def gone() -> bool:
        try:
            core.read_namespace(name)
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
