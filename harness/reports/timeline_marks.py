"""What a probe's timeline says worth drawing, from a record's timeline entries: the instants (`Mark`) and the
intervals (`Span`) that timeline_svg.py draws.

Times are relative to the probe's anchor action (the delete, the create for deadline probes, the eviction or
the node shutdown). Marked: the probe's actions, phase changes, containers stopping (with exit code and the
signal behind 137 / 143; where the kubelet lost a container's end, its placeholder exit is not drawn as one),
objects gone, Job conditions, StatefulSet status writes, endpoint removal, node
checks, watch gaps, waits that ended without what they awaited, and the instants the container logged itself
(preStop start and end, SIGTERM). Spans: the grace period from the delete, and the preStop hook while it ran.

A deleted pod's container exit is put at its finishedAt, counted from the delete on the server's clock
(deletionTimestamp minus the grace period), as the claims measure it (killed-after-delete); where the API
showed that exit more than a second later (the kubelet reports late), that instant is marked too. Both are on
one-second timestamps, so the exit mark is exact to about a second.

The container logs its instants on the node's clock, which cannot be put exactly on this machine's: they are
placed with the preStop's start at the first watch event that shows the deletion (when the kubelet can have
learnt of it), so their spacing is exact and their place on the axis is approximate (the drawing says so).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from harness.core.probe_helpers import LOST_END_REASON

JsonDict = dict[str, Any]


class Mark(NamedTuple):
    """An instant worth drawing: when, its label, and its kind (which row and colour)."""

    t: float
    label: str
    kind: str


class Span(NamedTuple):
    """An interval worth drawing (the grace period, the preStop hook)."""

    start: float
    end: float
    label: str
    kind: str


def _short(kind: str, name: str) -> str:
    """A pod by the random suffix its owner gave it (web-5d8f7c9b6-q2x7k -> q2x7k), anything else by name."""
    return name.rsplit("-", 1)[-1] if kind == "pod" and name.count("-") >= 2 else name


def _object(detail: JsonDict) -> str:
    """What an action was done to, from its detail ({"deployment": "web"} -> "deployment web")."""
    kind, name = next(iter(detail.items()), ("", ""))
    return f"{kind} {name}".strip()


def _signal(code: Any) -> str:
    """The signal an exit code says the container died of (128 + 9, 128 + 15)."""
    return " (SIGKILL)" if code == 137 else " (SIGTERM)" if code == 143 else ""


def _endpoint_marks(t: float, kind: str, before: JsonDict, detail: JsonDict) -> list[Mark]:
    """A pod leaving v1 Endpoints, or its EndpointSlice entry changing (not ready, terminating) or going."""
    out: list[Mark] = []
    was, now = before.get("pods") or {}, detail.get("pods") or {}
    where = "Endpoints" if kind == "endpoints" else "EndpointSlice"
    for pod, entry in was.items():
        name = _short("pod", pod)
        if pod not in now:
            out.append(Mark(t, f"{name} out of {where}", "endpoints"))
        elif now[pod] != entry:
            flags = now[pod]
            words = [
                "not ready" if flags.get("ready") is False else "ready",
                *(["serving"] if flags.get("serving") else []),
                *(["terminating"] if flags.get("terminating") else []),
            ]
            out.append(Mark(t, f"{name} {where}: {', '.join(words)}", "endpoints"))
    return out


def _deletion_seen(entries: list[JsonDict], pod: str | None, after: float) -> tuple[float, Any] | None:
    """(t, deletionGracePeriodSeconds) of the first event at or after `after` that shows the pod deleting."""
    for entry in entries:
        detail = entry.get("detail") or {}
        if entry["t"] < after or not entry["source"].startswith("pod/"):
            continue
        if pod is not None and entry["source"] != f"pod/{pod}":
            continue
        if detail.get("deletionTimestamp"):
            return entry["t"], detail.get("deletionGracePeriodSeconds")
    return None


def _timestamp(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")) if text else None
    except ValueError:
        return None


def _finished_after_delete(
    container: JsonDict, entries: list[JsonDict], source: str, delete_t: float | None
) -> float | None:
    """A deleted pod's container's finishedAt on the axis: the delete plus finishedAt minus the delete's time on the
    server's clock (the first deletionTimestamp seen, minus its grace period), as the claims count it."""
    finished = _timestamp(container.get("finishedAt"))
    if finished is None or delete_t is None:
        return None
    seen = next(
        (e["detail"] for e in entries if e["source"] == source and (e.get("detail") or {}).get("deletionTimestamp")),
        None,
    )
    deleting = _timestamp(seen["deletionTimestamp"]) if seen else None
    grace = seen.get("deletionGracePeriodSeconds") if seen else None
    if deleting is None or not isinstance(grace, int | float):
        return None
    return round(delete_t + (finished - (deleting - timedelta(seconds=grace))).total_seconds(), 3)


def events(entries: list[JsonDict]) -> tuple[list[Mark], list[Span]]:
    """The instants and intervals worth drawing, from a record's timeline entries."""
    out: list[Mark] = []
    spans: list[Span] = []
    previous: dict[str, JsonDict] = {}
    actions = [e["what"] for e in entries if e["source"] == "probe"]
    repeated = {what for what in actions if actions.count(what) > 1}  # such actions name their object
    delete_t: float | None = None
    deleted_pod: str | None = None
    for entry in entries:
        t, source, what, detail = entry["t"], entry["source"], entry["what"], entry.get("detail") or {}
        if entry.get("gap"):
            out.append(Mark(t, "watch gap", "gap"))
        if source == "probe":
            out.append(Mark(t, f"{what} {_object(detail)}" if what in repeated else what, "action"))
            if what == "delete" and delete_t is None:
                delete_t, deleted_pod = t, detail.get("pod")
                seen = _deletion_seen(entries, deleted_pod, t)
                grace = detail.get("gracePeriodSeconds")
                grace = grace if grace is not None else (seen[1] if seen else None)
                if isinstance(grace, int | float) and grace > 0:
                    spans.append(Span(t, t + grace, f"grace {grace:g} s", "grace"))
            continue
        before = previous.get(source, {})
        previous[source] = detail
        kind, _, name = source.partition("/")
        short = _short(kind, name)
        if kind == "container" and what == "log":
            out.extend(_container_instants(entries, name, detail, delete_t, spans))
            continue
        if what in ("DELETED", "GONE"):
            out.append(Mark(t, f"{short} gone", "gone"))
        if detail.get("phase") and detail.get("phase") != before.get("phase") and before:
            out.append(Mark(t, f"{short} {detail['phase']}", "phase"))
        for container in detail.get("containers") or []:
            was: JsonDict = next(
                (c for c in before.get("containers") or [] if c.get("name") == container.get("name")), {}
            )
            if container.get("state") == "terminated" and was.get("state") != "terminated":
                if container.get("reason") == LOST_END_REASON:  # a placeholder exit 137: the claims on it are
                    out.append(Mark(t, f"{container['name']} end lost", "lost"))  # not observable, nor drawn
                    continue
                code = container.get("exitCode")
                label = f"{container['name']} exit {code}{_signal(code)}"
                finished = (
                    _finished_after_delete(container, entries, source, delete_t)
                    if source == f"pod/{deleted_pod}"
                    else None
                )
                if finished is None:
                    out.append(Mark(t, label, "exit"))
                    continue
                out.append(Mark(finished, label, "exit"))
                if t - finished > 1.0:
                    out.append(Mark(t, f"{container['name']} exit seen", "seen"))
        for condition, value in (detail.get("conditions") or {}).items():
            if (
                kind == "job"
                and value != (before.get("conditions") or {}).get(condition)
                and str(value).startswith("True")
            ):
                out.append(Mark(t, f"Job {condition}", "job"))
        if kind == "statefulset" and before:
            for field in ("replicas", "currentRevision", "updatedReplicas"):
                if detail.get(field) != before.get(field):
                    value = str(detail.get(field)).rsplit("-", 1)[-1]  # a revision by its hash
                    out.append(Mark(t, f"{field} {value}", "statefulset"))
        if kind in ("endpoints", "endpointslice") and before:
            out.extend(_endpoint_marks(t, kind, before, detail))
        if what == "crictl":
            out.append(Mark(t, f"node: {detail.get('state')}", "node"))
        if what == "TIMEOUT":  # an awaited outcome that did not come: the claims judge what was seen instead
            out.append(Mark(t, "wait ended", "timeout"))
    return out, spans


def _container_instants(
    entries: list[JsonDict], pod: str, detail: JsonDict, delete_t: float | None, spans: list[Span]
) -> list[Mark]:
    """The container's own instants (relative to its preStop start), placed where the deletion was first seen."""
    relative: JsonDict = detail.get("since prestop-start (s)") or {}
    if not relative:
        return []
    seen = _deletion_seen(entries, pod, delete_t if delete_t is not None else -math.inf)
    origin = seen[0] if seen else (delete_t or 0.0)
    names = {"prestop-start": "preStop start", "prestop-end": "preStop end", "sigterm": "SIGTERM"}
    out = [
        Mark(round(origin + value, 3), f"≈ {names[key]}", "signal") for key, value in relative.items() if key in names
    ]
    start, end, sigterm = (relative.get(key) for key in ("prestop-start", "prestop-end", "sigterm"))
    if isinstance(start, int | float):
        if isinstance(end, int | float):
            spans.append(Span(origin + start, origin + end, f"preStop {end - start:.2f} s", "prestop"))
        elif isinstance(sigterm, int | float):
            spans.append(Span(origin + start, origin + sigterm, "preStop, cut off", "prestop"))
    return out


def marks(entries: list[JsonDict]) -> list[tuple[float, str]]:
    """The instants worth drawing: (t, label), from a record's timeline entries."""
    return [(mark.t, mark.label) for mark in events(entries)[0]]
