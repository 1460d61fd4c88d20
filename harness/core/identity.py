"""Which object is "the new one": the harness decides it for every probe, with one rule.

A successor (a replacement, a recreation) of an act (a delete, an eviction, a node shutdown) is an object
- created after the act: first seen after it in the server's order (by resourceVersion where both the act's and
  the object's are known, else by arrival); an object first seen in a re-list whose gap spans the act may have
  been created before or after it: it counts, and what rests on its sighting (dated to that whole gap) is open;
- owned by the controller in question: its controller ownerReference names that controller's uid;
- not known deleted: neither a DELETED event nor a re-list that lacked it showed it gone.
Successors come in the order the watch first showed them (one watch delivers in the server's order).

Probes never pick "the pod whose uid is not the old one" themselves: a pod of the same controller rejected at
admission before the act, a pod of another controller, or a pod whose deletion only a re-list showed (it keeps
its last state, Running and Ready) would be taken for the new one. The objects a probe acts on are chosen here
too (`running_ready`): never one known deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.core.basis import Moment
from harness.core.observe import Observer, key_of
from harness.core.timeline import Sighting, V
from harness.core.views import PodView


def controller_uid(view: Any) -> str | None:
    """The uid of the object's controller (its ownerReference with controller: true), or None."""
    meta = (getattr(view, "raw", None) or {}).get("metadata") or {}
    return next((ref.get("uid") for ref in meta.get("ownerReferences") or () if ref.get("controller")), None)


def version_of(view: Any) -> int | None:
    """The object's resourceVersion as an integer, when it is one."""
    version = str(getattr(view, "resource_version", "") or "")
    return int(version) if version.isdigit() else None


def created_after(sighting: Sighting[Any], act: Moment) -> bool:
    """Whether the object first sighted so was created after the act, as far as the watch shows.

    Seen first through an event (its ADDED: the creation's own resourceVersion), by resourceVersion where the act's
    is known, else by arrival. Seen first in a re-list, it was created in that gap: before the act if the re-list
    came before it, and counted as after otherwise (its sighting's stretch then holds the act: left open there).
    """
    if sighting.gap is not None:
        gap = sighting.gap
        if gap.since_version is not None and act.version is not None and gap.since_version >= act.version:
            return True
        return gap.until > act.t
    version = version_of(sighting.view)
    if version is not None and act.version is not None:
        return version > act.version
    return sighting.t > act.t


def first_sightings(observer: Observer[V]) -> list[Sighting[V]]:
    """Each object's (by uid) first sighting in the watch, in the order seen; objects listed when the watch began
    (they existed before it) are left out."""
    return observer.first_sightings()


def successors(
    observer: Observer[V], owner: str | None, act: Moment, holds: Callable[[V], bool] | None = None
) -> list[Sighting[V]]:
    """Every successor of the act (the rule above), each at its first sighting, in the order first seen; with
    `holds`, only those whose state as last seen it holds for (e.g. Running and Ready)."""
    found = []
    for sighting in first_sightings(observer):
        uid = key_of(sighting.view)
        latest = observer.states[uid]
        if uid in observer.deleted or controller_uid(latest) != owner or not created_after(sighting, act):
            continue
        if holds is None or holds(latest):
            found.append(sighting)
    return found


def successor(
    observer: Observer[V], owner: str | None, act: Moment, holds: Callable[[V], bool] | None = None
) -> Sighting[V] | None:
    """The first successor of the act (`successors`), or None when none was seen."""
    return next(iter(successors(observer, owner, act, holds)), None)


def running_ready(observer: Observer[PodView], holds: Callable[[PodView], bool] | None = None) -> PodView | None:
    """The first pod seen Running and Ready as last seen, not known deleted (and for which `holds`, if given), or
    None: the pod a probe acts on, or waits for."""
    for uid, pod in observer.states.items():
        if uid in observer.deleted or pod.phase != "Running" or not pod.ready:
            continue
        if holds is None or holds(pod):
            return pod
    return None
