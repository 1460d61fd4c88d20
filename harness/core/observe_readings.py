"""What probes read off observers: of a pod (PodObserver, delete_requested_at, cannot_start), of a Job
(conditions_before_failed), and across several watches (in_server_order)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, NamedTuple

from harness.core.basis import Basis
from harness.core.observe import Observer, key_of, later_version
from harness.core.timeline import Sighting
from harness.core.views import JobView, PodView, parse_time

JsonDict = dict[str, Any]


class PodObserver(Observer[PodView]):
    """An observer of Pods: one pod (focus) or every pod of the namespace."""

    def deletion_sighting(self, pod: PodView) -> Sighting[PodView] | None:
        """The first state of the pod (by uid) with a deletionTimestamp, with when it was seen."""
        return self.first_sighting(lambda _, view: view.uid == pod.uid and view.deletion_timestamp is not None)

    def as_deleted(self, pod: PodView) -> PodView | None:
        """The pod (by uid) as its deletion first showed it: the first state with a deletionTimestamp.

        The API server sets deletionTimestamp = time of the delete + grace. Later deletes rewrite it: once the
        containers stopped, the kubelet deletes the pod again with grace 0, and the server moves
        deletionTimestamp and deletionGracePeriodSeconds (staging/src/k8s.io/apiserver/pkg/registry/rest/
        delete.go BeforeDelete). Read from a later state, the end of the grace moved 5 s early (live, 1.27.3).
        A first state seen only in a re-list may already be a rewritten one: `deletion_sighting` says so.
        """
        sighting = self.deletion_sighting(pod)
        return None if sighting is None else sighting.view

    def first_condition(self, pod: PodView, type_: str) -> JsonDict | None:
        """A condition the pod (by uid) was given, as first seen (status, reason, message); None if never.

        By uid, because a StatefulSet's replacement takes the same name; first seen, because a later state
        (or the pod's deletion) may drop what the writer of the condition said.
        """
        for _, view in self.history:
            condition = view.condition(type_) if view.uid == pod.uid else None
            if condition is not None:
                return {k: condition.get(k) for k in ("status", "reason", "message")}
        return None

    def condition_sighting(self, pod: PodView, type_: str) -> Sighting[PodView] | None:
        """When the pod (by uid) was first seen with the condition."""
        return self.first_sighting(lambda _, view: view.uid == pod.uid and view.condition(type_) is not None)

    def phases(self, pod: PodView, since: float) -> tuple[list[str | None], Basis]:
        """The phases the pod (by uid) was in from `since` on: the phase then, then each change (repeats
        collapsed), with what they rest on (`Observer.sequence`)."""
        return self.sequence(pod, since, lambda view: view.phase)


def delete_requested_at(deleted: PodView) -> datetime | None:
    """The delete's instant on the server's clock (deletionTimestamp - deletionGracePeriodSeconds), from the
    state `PodObserver.as_deleted` gives: in a later state both fields may have been rewritten.
    """
    grace_ends = parse_time(deleted.deletion_timestamp)
    if grace_ends is None:
        return None
    return grace_ends - timedelta(seconds=deleted.deletion_grace_period_seconds or 0)


def conditions_before_failed(jobs: Observer[JobView]) -> tuple[list[str], Basis]:
    """The condition types that were True in some state of the Job (the focus) seen before its Failed condition
    appeared, with what that rests on: every state of the Job from the start until Failed was seen (now, if never).
    """
    job = jobs.latest
    seen: list[str] = []
    failed_at: float | None = None
    for t, view in jobs.history:
        if key_of(view) != key_of(job):
            continue
        if view.condition("Failed") is not None:
            failed_at = t
            break
        seen.extend(c.type for c in view.conditions if c.status == "True" and c.type not in seen)
    return seen, jobs.during(0.0, failed_at, job)


# Waiting reasons after which a container will not start by itself (kubelet/images and CRI reasons).
UNSTARTABLE_REASONS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CreateContainerConfigError",
        "CreateContainerError",
        "CrashLoopBackOff",
        "RunContainerError",
    }
)


def cannot_start(observer: Observer[PodView]) -> str | None:
    """Veto for waits on a starting pod: gone, terminal, or a container stuck in a waiting reason."""
    pod = observer.latest
    if observer.gone:
        return "the pod was deleted"
    if pod.phase in ("Failed", "Succeeded"):
        return f"the pod reached phase {pod.phase} before it was running"
    stuck = [c for c in pod.containers if c.state == "waiting" and c.reason in UNSTARTABLE_REASONS]
    if stuck:
        return "; ".join(f"container {c.name} is waiting: {c.reason}" for c in stuck)
    return None


class Change(NamedTuple):
    """One change in the stream of several watches (in_server_order)."""

    t: float  # when it arrived (transport clock)
    kind: str  # the watched kind: Pod, StatefulSet, ...
    type: str  # ADDED / MODIFIED / DELETED, or GONE (missing from a re-list)
    view: Any  # the object as changed (PodView, StatefulSetView, ...)


def in_server_order(*observers: Observer[Any]) -> list[Change]:
    """Every change seen by several watches, as one stream in the order the API server made them.

    Each watch delivers its own kind in order, but two watches interleave by arrival. The server's order is
    the resourceVersion: in kind (one etcd) it is the etcd revision, an integer that grows with every write.
    The API asks clients to treat it as opaque; the suite uses it only to order what it already saw. A GONE (an
    object a re-list no longer showed) has no version of its own: it happened in its gap, and is placed just after
    the last change the watch delivered before that gap (the earliest it can have been: a pod counted gone too
    early can hide a violation, never make one). Arrival order only when some change has no integer version
    (another storage).
    """
    keyed: list[tuple[tuple[int, int, float], Change]] = []
    for o in observers:
        gap_start = {gap.until: gap.since_version for gap in o.gaps}
        for t, type_, view in o.changes:
            version = gap_start.get(t) if type_ == "GONE" else later_version(None, view.raw)
            keyed.append(((-1 if version is None else version, type_ == "GONE", t), Change(t, o.kind, type_, view)))
    if any(key[0] < 0 for key, _ in keyed):
        return sorted((change for _, change in keyed), key=lambda change: change.t)
    return [change for _, change in sorted(keyed, key=lambda item: item[0])]
