"""Test doubles, each saying what it stands in for. None of them talks to Docker, kind or a cluster."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.base.process import Completed
from harness.core.transport import WatchEvent


class ScriptedWatch:
    """Stands in for a watch on the API server: delivers scripted events on a virtual clock."""

    def __init__(self, events: list[WatchEvent]) -> None:
        self.events = list(events)
        self.now = 0.0
        self.closed = False

    def clock(self) -> float:
        return self.now

    def next_event(self, timeout: float) -> WatchEvent | None:
        if self.events and self.events[0].t <= self.now + timeout:
            event = self.events.pop(0)
            self.now = max(self.now, event.t)
            return event
        self.now += timeout
        return None

    def close(self) -> None:
        self.closed = True


@dataclass
class FakeRunner:
    """Stands in for the kind and docker processes: answers each command from a script, records argv."""

    answers: dict[str, Completed] = field(default_factory=dict)
    calls: list[list[str]] = field(default_factory=list)

    def __call__(self, argv: Sequence[str], timeout: float) -> Completed:
        self.calls.append(list(argv))
        key = " ".join(argv[:3])
        for prefix, answer in self.answers.items():
            if key.startswith(prefix):
                return answer
        return Completed(tuple(argv), 0, "", "")

    def ran(self, *prefix: str) -> bool:
        return any(call[: len(prefix)] == list(prefix) for call in self.calls)


def ok(stdout: str = "") -> Completed:
    return Completed((), 0, stdout, "")


def failed(stderr: str, code: int = 1) -> Completed:
    return Completed((), code, "", stderr)


def pod(
    name: str = "running-pod",
    phase: str = "Running",
    ready: bool = True,
    rv: str = "1",
    container_state: Mapping[str, object] | None = None,
    deletion_timestamp: str | None = None,
    grace: int | None = None,
    uid: str | None = None,
) -> dict[str, object]:
    """A Pod as the API server serialises it, with just the fields the probes read (uid: `u-<name>` unless given:
    a pod recreated under the same name has another)."""
    metadata: dict[str, object] = {"name": name, "namespace": "ns", "uid": uid or f"u-{name}", "resourceVersion": rv}
    if deletion_timestamp:
        metadata["deletionTimestamp"] = deletion_timestamp
        metadata["deletionGracePeriodSeconds"] = grace
    return {
        "metadata": metadata,
        "spec": {
            "nodeName": "kind-control-plane",
            "terminationGracePeriodSeconds": grace or 5,
            "containers": [{"name": "main", "image": "alpine"}],
        },
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [
                {
                    "name": "main",
                    "ready": ready,
                    "restartCount": 0,
                    "containerID": "containerd://abc123",
                    "state": dict(container_state or {"running": {"startedAt": "2023-12-11T00:00:02Z"}}),
                }
            ],
        },
    }
