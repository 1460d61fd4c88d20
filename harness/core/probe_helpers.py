"""What the probes of every family share: the budgets and slack they wait with, named once, and the readings of
a pod they all make (a container's exit, the instants a container wrote down).

Pure functions of what was observed, so a replayed probe reads exactly what a live one did.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.core.basis import Basis
from harness.core.observe import Observer, key_of
from harness.core.probe import POD_START_BUDGET_S, Probe
from harness.core.transport import JsonDict
from harness.core.views import ContainerView, EndpointsView, PodView

__all__ = [
    "DEADLINE_SLACK_S",
    "POD_START_BUDGET_S",
    "STOP_SLACK_S",
    "container_exit",
    "container_status",
    "exit_status_kept",
    "finished_at",
    "first_absent",
    "pod_failure_policy_kept",
    "written_instants",
]

# Beyond a grace period, for a stop to be seen: the kubelet's next sync, the status write, the watch delivering it.
STOP_SLACK_S = 30.0
# Beyond an activeDeadlineSeconds: the next sync of the kubelet or the Job controller, the kill's grace period (5 s
# in the manifests), the status update and the watch delivering it.
DEADLINE_SLACK_S = 45.0

NOT_ENDED: JsonDict = {"exitCode": None, "reason": None}


def container_status(pod: PodView, container: str = "main") -> ContainerView | None:
    """The container's status in the pod, or None before it has one."""
    return next((c for c in pod.containers if c.name == container), None)


def container_exit(pod: PodView, container: str = "main") -> JsonDict:
    """How the container ended: {exitCode, reason}, both None while it runs or before it has a status."""
    view = container_status(pod, container)
    return view.exit if view is not None else dict(NOT_ENDED)


# The reason the kubelet writes into a container's terminated state when it lost the container's own end: its exit
# code (137) and finishedAt are then the kubelet's placeholders, not what the container did.
LOST_END_REASON = "ContainerStatusUnknown"


def placeholder_end(view: ContainerView) -> bool:
    """The container's terminated state is the kubelet's ContainerStatusUnknown placeholder, not its own end."""
    return view.state == "terminated" and view.reason == LOST_END_REASON


def lost_exit_status(pod: PodView, container: str = "main") -> str | None:
    """Why the status of a container the probe saw running carries no end of its own, or None when it does.

    Before 1.27 the kubelet wrote a deleted pod's status only before killing its containers; when the container
    is removed before the next write (seen under load, 1.21-1.26), its end is gone: the status then says
    ContainerStatusUnknown with exit 137 and no container ID (1.22-1.26) or still `waiting` (1.21).
    """
    view = container_status(pod, container)
    if view is None:
        return None
    if placeholder_end(view):
        return f"the kubelet reported {container} ContainerStatusUnknown, exit {view.exit_code}: its own end was lost"
    if view.state == "waiting" and pod.deletion_timestamp is not None:
        return f"the kubelet reported {container} waiting ({view.reason}) after it had run: its own end was lost"
    return None


def exit_status_kept(
    probe: Probe, claim: str, pod: PodView, rests_on: Basis, depending: Iterable[str], container: str = "main"
) -> bool:
    """Check that the kubelet kept the container's own end (`claim`, read from `pod`, which `rests_on` says how it
    was seen); when it did not, the claims that read that end (`depending`) are not observable, with the reason.
    True when they can be checked."""
    lost = lost_exit_status(pod, container)
    probe.check(claim, lost is None, rests_on, evidence=lost)
    if lost is None:
        return True
    for depending_claim in depending:
        probe.check_not_observable(depending_claim, lost)
    return False


def finished_at(pod: PodView, container: str = "main") -> str | None:
    """When the container finished (None while it runs, or before it has a status)."""
    view = container_status(pod, container)
    return view.finished_at if view is not None else None


def pod_failure_policy_kept(created: JsonDict) -> str:
    """What the API server kept of a created Job's podFailurePolicy: its rules' actions in order ('FailJob,Ignore'),
    or 'None' where it dropped the field (unknown without Strict validation, or its gate off)."""
    policy = created["spec"].get("podFailurePolicy")
    if policy is None:
        return "None"
    return ",".join(str(rule.get("action")) for rule in policy.get("rules") or [])


def written_instants(text: str | None) -> list[tuple[str, float]]:
    """The instants a container wrote down, in order: each line 'name <seconds>' (its termination message or log,
    e.g. 'sigterm 1234.56', 'alive 1234.66'); lines that are not are skipped."""
    instants = []
    for line in (text or "").splitlines():
        name, _, value = line.partition(" ")
        try:
            instants.append((name, float(value)))
        except ValueError:
            continue
    return instants


def first_absent(observer: Observer[EndpointsView], pod: str, since: float) -> float | None:
    """When the pod was first absent from every Endpoints object seen, at or after `since` (None: never)."""
    present: dict[str, bool] = {}  # Endpoints object -> holds the pod, rebuilt from the changes in order
    for t, type_, view in observer.changes:
        present[key_of(view)] = type_ not in ("DELETED", "GONE") and pod in view.pods
        if t >= since and not any(present.values()):
            return t
    return None
