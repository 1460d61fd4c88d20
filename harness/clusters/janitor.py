"""`make clean`: find and remove what the suite left behind (after a second Ctrl-C, an OOM kill, kill -9), kind
of cluster by kind: each knows its own leftovers (harness/clusters/kinds.py ClusterKind.leftovers), recognised by
the names and labels the suite gives, and touches nothing else (kind: its `plp-…` clusters; local: its clusters'
state folders; an existing cluster: its labelled namespaces, which lose only the suite's own finalizer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.clusters.kinds import ClusterKind, LeavesLeftovers, Leftovers, Request


@dataclass
class JanitorReport:
    """What every kind found and removed, in the order the kinds are known, and what could not be removed."""

    found: list[Leftovers] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        return [error for leftovers in self.found for error in leftovers.errors]

    def render(self) -> str:
        lines = [line for leftovers in self.found for line in leftovers.lines]
        return "\n".join([*lines, *(f"error: {e}" for e in self.errors)])


def clean(kinds: Sequence[ClusterKind], request: Request) -> JanitorReport:
    """Each kind's leftovers found and removed (of the kinds whose runs can leave any); a kind that cannot look says
    why on the notes."""
    return JanitorReport([kind.leftovers(request) for kind in kinds if isinstance(kind, LeavesLeftovers)])
