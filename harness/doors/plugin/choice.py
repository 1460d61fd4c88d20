"""The kind of cluster the pytest options choose, once: from make probe's hand-off (--cluster-spec), from options
re-attaching to a cluster another process made, or from the one kind the options ask for, resolved here."""

from __future__ import annotations

from dataclasses import dataclass

from harness.clusters.kinds import ClusterKind, Option, Runnable
from harness.clusters.registry import asked_kinds, attached_kind, kind_for, kind_named


@dataclass(frozen=True)
class ChosenCluster:
    """The kind of cluster the options ask for, chosen once, and what it resolved them to (None: the cluster is
    another process's, re-attached to once it is ready)."""

    kind: ClusterKind
    runnable: Runnable | None


def chosen_cluster(option: Option) -> ChosenCluster | None:
    """From make probe's resolved cluster (--cluster-spec; with --cluster-gate, or a kind's option re-attaching,
    the one make probe made), the options re-attaching to one another process made, or the one kind the options ask
    for (resolved here); None when none is asked for."""
    attached = attached_kind(option)
    made_elsewhere = attached is not None or bool(option("--cluster-gate"))
    if spec := option("--cluster-spec"):
        runnable = Runnable.from_json(spec)
        return ChosenCluster(kind_named(runnable.kind), None if made_elsewhere else runnable)
    if made_elsewhere:
        # made by another process, which opens the gate once it is ready (its kubeconfig may not be written yet)
        return ChosenCluster(attached or kind_for("", option("--kubeconfig")), None)
    asked = asked_kinds(option)
    if not asked:
        return None
    kind = asked[0]
    return ChosenCluster(kind, kind.resolve(kind.request(option), warn=lambda said: None))
