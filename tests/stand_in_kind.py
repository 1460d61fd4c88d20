"""A fourth kind of cluster as a kind's package is written: the 3 members a kind writes, a provider of the 6 one
writes, and 3 abilities (node shutdown, leftovers, releases); tests/test_cluster_kinds.py drives it."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from harness.axis.release_axis import ReleaseAxis
from harness.base.run import Run
from harness.base.versions import Release
from harness.clusters.kinds import ClusterKind, Leftovers, Request, Runnable, Say
from harness.clusters.lifecycle import NodeShutdown, Note, ProviderDefaults, Removal

asked: list[str] = []  # what the stand-in kind and its clusters were asked, in order


@dataclass
class StandInCluster(ProviderDefaults):
    name: str
    kubeconfig: Path
    kind: str = "stand-in"
    created: bool = False
    node_shutdown: NodeShutdown | None = None  # its graceful node shutdown, on the node-shutdown cluster

    def create(self, logs_dir: Path) -> None:
        asked.append(f"create {self.name}")
        self.created = True

    def delete(self) -> Removal:
        asked.append(f"delete {self.name}")
        self.created = False
        return Removal()


class StandInClusters(ClusterKind):
    name = "stand-in"

    def resolve(self, request: Request, warn: Say) -> Runnable:
        asked.append(f"resolve {request.version}")
        return Runnable(self.name, request.version, {"made_by": "the stand-in"})

    def provider(self, runnable: Runnable, run: Run, note: Note) -> StandInCluster:
        return StandInCluster(f"plp-stand-in-{run.run_id[-4:]}", run.path("kubeconfig"))

    def shutdown_provider(self, runnable: Runnable, run: Run, note: Note) -> StandInCluster:
        made = self.provider(runnable, run, note)
        return StandInCluster(f"{made.name}-gns", run.path("kubeconfig-gns"), node_shutdown=lambda n, g: {"node": n})

    def leftovers(self, request: Request) -> Leftovers:
        return Leftovers(["stand-in clusters removed: plp-stand-in-abcd"])

    def release_axis(self, args: argparse.Namespace, tools: Path) -> ReleaseAxis:
        return StandInReleases()


class StandInReleases(ReleaseAxis):
    def probe_args(self, release: Release) -> list[str]:
        return ["--version", release.bare, "--cluster", "stand-in"]
