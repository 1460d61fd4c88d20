"""Per-probe namespace cleanup (harness/core/namespaces.py) against a stand-in for CoreV1Api.

The stand-in keeps pods and namespaces in dicts and answers like the API server does for the calls
cleanup makes (list, JSON patch with a test op, delete, read -> 404 once deleted).
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from harness.base.run import PROBE_FINALIZER
from harness.core.namespaces import cleanup_probe_namespace

OTHER = "example.com/not-ours"


def raw(body: Any) -> Any:
    """What the client returns with _preload_content=False: a response whose .data is the JSON body."""
    return SimpleNamespace(data=json.dumps(body).encode())


class FakeCore:
    """Stands in for kubernetes.client.CoreV1Api: only the calls namespace cleanup makes, answering raw JSON."""

    def __init__(self, pods: dict[str, list[str]], fail_patch_once_with: int | None = None) -> None:
        self.pods = pods
        self.namespaces = {"probe-ns"}
        self.patches: list[tuple[str, list[dict[str, Any]]]] = []
        self.fail_patch_once_with = fail_patch_once_with
        self.fail_pod_deletion_with: int | None = None
        self.pods_deleted_with_grace: tuple[int, bool] | None = None

    def list_namespaced_pod(self, namespace: str, **_: Any) -> Any:
        if namespace not in self.namespaces:
            raise ApiException(status=404)
        return raw({"items": [{"metadata": {"name": n, "finalizers": f}} for n, f in self.pods.items()]})

    def patch_namespaced_pod(self, name: str, namespace: str, body: list[dict[str, Any]], **_: Any) -> Any:
        if self.fail_patch_once_with:
            status, self.fail_patch_once_with = self.fail_patch_once_with, None
            if status == 422:
                self.pods[name] = [*self.pods[name], "late.example/added"]
            raise ApiException(status=status)
        test, replace = body
        assert test["op"] == "test" and test["value"] == self.pods[name], "stale JSON patch"
        self.patches.append((name, body))
        self.pods[name] = replace["value"]
        return raw({"metadata": {"name": name, "finalizers": self.pods[name]}})

    def read_namespaced_pod(self, name: str, namespace: str, **_: Any) -> Any:
        return raw({"metadata": {"name": name, "finalizers": self.pods[name]}})

    def delete_namespace(self, name: str, **_: Any) -> Any:
        self.namespaces.discard(name)
        return raw({"kind": "Namespace", "metadata": {"name": name}})

    def delete_collection_namespaced_pod(self, namespace: str, grace_period_seconds: int, **_: Any) -> Any:
        self.pods_deleted_with_grace = (grace_period_seconds, namespace not in self.namespaces)
        if self.fail_pod_deletion_with:
            raise ApiException(status=self.fail_pod_deletion_with)
        return raw({"kind": "PodList", "items": []})

    def read_namespace(self, name: str, **_: Any) -> Any:
        if name not in self.namespaces:
            raise ApiException(status=404)
        return raw({"metadata": {"name": name}})


def test_only_the_suites_own_finalizer_is_removed_then_the_namespace_is_deleted() -> None:
    core = FakeCore({"held": [PROBE_FINALIZER], "shared": [OTHER, PROBE_FINALIZER], "foreign": [OTHER], "plain": []})
    report = cleanup_probe_namespace(core, "probe-ns")  # type: ignore[arg-type]
    assert core.pods == {"held": [], "shared": [OTHER], "foreign": [OTHER], "plain": []}
    assert sorted(report.finalizers_removed) == ["held", "shared"]
    assert report.namespace_deleted and not report.errors
    assert "probe-ns" not in core.namespaces


def test_the_pods_are_deleted_with_grace_0_once_the_namespace_is_going() -> None:
    """The probe has its record; a SIGTERM-ignoring pod would otherwise hold the namespace for its whole grace."""
    core = FakeCore({"held": [PROBE_FINALIZER]})
    report = cleanup_probe_namespace(core, "probe-ns")  # type: ignore[arg-type]
    assert core.pods_deleted_with_grace == (0, True)  # grace 0, after the namespace's deletion began
    assert report.namespace_deleted and not report.errors
    core = FakeCore({"held": []})
    core.fail_pod_deletion_with = 403
    report = cleanup_probe_namespace(core, "probe-ns")  # type: ignore[arg-type]
    assert report.errors == ["delete pods: 403 None"] and report.namespace_deleted


def test_on_a_cluster_that_goes_with_the_run_the_namespace_is_not_waited_for() -> None:
    """Live on v1.37.0 under load a namespace took ~34 s to go, and every probe's worker waited it out."""
    core = FakeCore({"held": [PROBE_FINALIZER]})
    core.read_namespace = lambda name, **_: pytest.fail("waited for the namespace")  # type: ignore[method-assign]
    report = cleanup_probe_namespace(core, "probe-ns", wait=False)  # type: ignore[arg-type]
    assert report.finalizers_removed == ["held"] and core.pods_deleted_with_grace == (0, True)
    assert report.namespace_deleted and not report.waited_until_gone and not report.errors
    waited = cleanup_probe_namespace(FakeCore({}), "probe-ns")  # type: ignore[arg-type]
    assert waited.namespace_deleted and waited.waited_until_gone


def test_a_finalizer_list_that_changed_meanwhile_is_re_read_not_overwritten() -> None:
    core = FakeCore({"held": [PROBE_FINALIZER]}, fail_patch_once_with=422)
    report = cleanup_probe_namespace(core, "probe-ns")  # type: ignore[arg-type]
    assert core.pods["held"] == ["late.example/added"]
    assert report.finalizers_removed == ["held"]


def test_a_failing_step_is_reported_and_the_namespace_is_still_deleted() -> None:
    core = FakeCore({"held": [PROBE_FINALIZER]}, fail_patch_once_with=403)
    report = cleanup_probe_namespace(core, "probe-ns")  # type: ignore[arg-type]
    assert report.errors == ["remove finalizer from pod held: 403 None"]
    assert "probe-ns" not in core.namespaces


def test_an_already_deleted_namespace_is_fine() -> None:
    core = FakeCore({})
    core.namespaces.clear()
    report = cleanup_probe_namespace(core, "probe-ns")  # type: ignore[arg-type]
    assert report.namespace_deleted and not report.errors


@pytest.mark.parametrize("status", [429, 503])
def test_transient_errors_while_removing_a_finalizer_are_retried(status: int) -> None:
    core = FakeCore({"held": [PROBE_FINALIZER]}, fail_patch_once_with=status)
    report = cleanup_probe_namespace(core, "probe-ns")  # type: ignore[arg-type]
    assert core.pods["held"] == []
    assert not report.errors


class StreamedWatch:
    """A watch response as the client streams it (_preload_content=False): one JSON event a line."""

    def __init__(self, *events: dict[str, Any]) -> None:
        self.body = b"".join(json.dumps(e).encode() + b"\n" for e in events)
        self.closed = False

    def stream(self, amt: Any = None, decode_content: bool = False) -> Any:
        yield self.body

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        pass


def test_a_watch_the_server_ends_with_504_is_started_again() -> None:
    """Seen live on v1.37.0 under load: a namespace's deletion watch got 504 'Too large resource version'."""
    from harness.core.transport_raw import watch_until

    too_large = {"kind": "Status", "code": 504, "reason": "Timeout", "message": "Too large resource version: 799"}
    answers = [
        StreamedWatch({"type": "ERROR", "object": too_large}),
        StreamedWatch({"type": "DELETED", "object": {"metadata": {"name": "probe-ns"}}}),
    ]
    asked: list[dict[str, Any]] = []

    def list_namespace(**kwargs: Any) -> StreamedWatch:
        asked.append(kwargs)
        return answers[len(asked) - 1]

    assert watch_until(list_namespace, lambda event_type, _o: event_type == "DELETED", 30, field_selector="x")
    assert len(asked) == 2 and all(a["watch"] and a["field_selector"] == "x" for a in asked)
    assert all(answer.closed for answer in answers)
    forbidden = StreamedWatch({"type": "ERROR", "object": {"code": 403, "reason": "Forbidden"}})
    with pytest.raises(ApiException):
        watch_until(lambda **_: forbidden, lambda *_: True, 30)
