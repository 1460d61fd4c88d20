"""The kinds of cluster the suite knows, each registered once, and the one place a front door chooses one: from
CLUSTER (make probe, matrix, bisect, radar, clean) or from the pytest options. A new kind is a package of its own
and one line in KINDS."""

from __future__ import annotations

from harness.clusters.existing.clusters import ExistingClusters
from harness.clusters.kind.clusters import KindClusters
from harness.clusters.kinds import ClusterKind, Option, Reattaches, RunsReleases
from harness.clusters.local.clusters import LocalClusters

KINDS: list[ClusterKind] = [KindClusters(), LocalClusters(), ExistingClusters()]
DEFAULT_CLUSTER = "kind"  # CLUSTER when none is given (the Makefile's default too)


def register(kind: ClusterKind) -> None:
    """Make one more kind of cluster known to every front door."""
    KINDS.append(kind)


def kind_named(name: str) -> ClusterKind:
    """The kind of cluster of this name; raises KeyError for one the suite does not know."""
    return next(kind for kind in KINDS if kind.name == name)


def cluster_choices(version_axis: bool = False) -> list[str]:
    """What CLUSTER may name: every kind that makes its clusters (an existing one is given by KUBECONFIG_FILE); for
    the version axis (make matrix, bisect, radar), those of them that run a given release."""
    return [kind.name for kind in KINDS if kind.makes_clusters and (isinstance(kind, RunsReleases) or not version_axis)]


def kind_for(cluster: str, kubeconfig: str) -> ClusterKind:
    """The kind a command runs on: the existing cluster of KUBECONFIG_FILE when one is given, else CLUSTER's."""
    if kubeconfig:
        return next(kind for kind in KINDS if not kind.makes_clusters)
    return kind_named(cluster or DEFAULT_CLUSTER)


def attached_kind(option: Option) -> ClusterKind | None:
    """The kind whose pytest options re-attach to a cluster another process made (make probe PARALLEL's workers)."""
    return next((kind for kind in KINDS if isinstance(kind, Reattaches) and kind.attached(option)), None)


def asked_kinds(option: Option) -> list[ClusterKind]:
    """The kinds the pytest options ask for (more than one is refused by the plugin)."""
    return [kind for kind in KINDS if kind.asked(option)]


def options_said(described: bool = True, parenthesised: bool = True) -> list[str]:
    """Every kind's pytest option, as the plugin's messages list them: 'a new kind cluster (--kind-version)',
    '--kind-version (a new kind cluster)' (not parenthesised), or the option alone (not described)."""
    if not described:
        return [kind.pytest_option for kind in KINDS]
    if parenthesised:
        return [f"{kind.described} ({kind.pytest_option})" for kind in KINDS]
    return [f"{kind.pytest_option} ({kind.described})" for kind in KINDS]


def one_of(described: bool = True) -> str:
    """Every kind's pytest option in one phrase: '..., ... or ...'."""
    said = options_said(described)
    return ", ".join(said[:-1]) + f" or {said[-1]}" if len(said) > 1 else said[0]
