"""Each probe's namespace on the live cluster: created labelled and usable, and removed with the suite's finalizer.

Every call reads the API server's JSON as sent (harness.core.transport_raw.raw_call / raw_watch_events), not the
client's models, so objects from older servers cannot fail the client's validation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.base.run import PROBE_FINALIZER, RUN_LABEL, SUITE_LABEL
from harness.core.transport_raw import api_retry, raw_call, watch_until

if TYPE_CHECKING:
    from harness.base.kubeapi import KubeApi


class NotReady(RuntimeError):
    """A namespace did not become usable in time; says what was last seen."""


@api_retry
def create_probe_namespace(core: KubeApi, name: str, run_id: str, timeout_s: float = 60) -> None:
    """Create a labelled namespace and wait for its default ServiceAccount (pods are refused before it)."""
    from kubernetes.client.exceptions import ApiException

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
    if not watch_until(core.list_namespaced_service_account, lambda _t, _o: True, timeout_s, **selector):
        raise NotReady(f"namespace {name}: no default ServiceAccount after {timeout_s:.0f}s")


@dataclass
class CleanupReport:
    namespace: str
    finalizers_removed: list[str] = field(default_factory=list)
    namespace_deleted: bool = False  # gone, or (not waited for) its deletion accepted
    waited_until_gone: bool = False
    errors: list[str] = field(default_factory=list)


def cleanup_probe_namespace(core: KubeApi, name: str, timeout_s: float = 120, wait: bool = True) -> CleanupReport:
    """Remove the suite's finalizer from the namespace's pods, delete the namespace and (grace 0) its pods, and
    with `wait` wait until it is gone.

    Without `wait` (a cluster the suite made for this run, removed with it): the namespace controller's work is
    not waited for. Live on v1.37.0 (local, 17 workers, a Go build beside), it took about 34 s a namespace even
    with its pods gone at once, and every probe's pytest-xdist worker waited it out (a run of 26 probes: 165 s
    for a 90 s longest probe).

    Only the suite's own finalizer is removed, each with a JSON patch that first tests the list is
    unchanged; other finalizers are left alone. Every step runs even if an earlier one failed.
    """
    from kubernetes.client.exceptions import ApiException

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
    # The probe has its record: its pods need not take their grace periods, which the namespace's deletion
    # would give them (a SIGTERM-ignoring container with the default grace held its namespace, and its
    # pytest-xdist worker, 30 s more: live on v1.37.0, most probes' items ended 30-53 s after the probe).
    # Deleted now with grace 0, after the namespace, whose deletion already stops controllers making more.
    try:
        raw_call(core.delete_collection_namespaced_pod, name, grace_period_seconds=0)
    except ApiException as err:
        if err.status != 404:
            report.errors.append(f"delete pods: {err.status} {err.reason}")
    if not wait:
        report.namespace_deleted = True  # its deletion was accepted; the cluster goes with the run
        return report
    report.namespace_deleted = report.waited_until_gone = _namespace_gone(core, name, timeout_s)
    if not report.namespace_deleted:
        report.errors.append(f"namespace {name} still exists {timeout_s:.0f}s after deletion")
    return report


@api_retry
def remove_probe_finalizer(core: KubeApi, namespace: str, pod: str, finalizers: list[str]) -> None:
    from kubernetes.client.exceptions import ApiException

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


def _namespace_gone(core: KubeApi, name: str, timeout_s: float) -> bool:
    from kubernetes.client.exceptions import ApiException

    def gone() -> bool:
        try:
            raw_call(core.read_namespace, name)
        except ApiException as err:
            if err.status == 404:
                return True
            raise
        return False

    # Watched in slices, each after a fresh look: a watch that had to start again (harness/core/transport_raw.py
    # watch_until) would not see a DELETED that fell between its two watches.
    deadline = time.monotonic() + timeout_s
    while not gone():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        watch_until(
            core.list_namespace,
            lambda event_type, _o: event_type == "DELETED",
            min(left, 10.0),
            field_selector=f"metadata.name={name}",
        )
    return True
