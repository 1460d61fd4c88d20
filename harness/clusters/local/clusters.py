"""local as a kind of cluster (harness/clusters/kinds.py): Kubernetes built here from its Go modules
(harness/gobuild/) and run as processes on this host (cluster.py), as root, one at a time.

VERSION is one release (a patch or a pre-release), built once and reused after; the graceful-node-shutdown probes
cannot run on it (no systemd-logind on the node). On the version axis each release is built, the next one ahead
on a background thread while the current one's probes run.

The cluster's own modules (its processes, images and node: provider.py and what it runs) are imported where a cluster
is made or reached: every pytest with the plugin and every front door know this kind, and most never run one.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from harness.axis.pinned import pinned_minors
from harness.axis.release_axis import PlannedVersion, Readied, ReleaseAxis, plan_versions
from harness.axis.releases import bisect_releases
from harness.base import paths
from harness.base.errors import NotRunnable, PrerequisiteMissing, host_refusal, stopping
from harness.base.inputs import BadInput
from harness.base.run import Run
from harness.base.versions import KubeVersion, Release, VersionError
from harness.clusters.kinds import AddOption, ClusterKind, Leftovers, Option, Request, Runnable, Say
from harness.clusters.lifecycle import ClusterProvider, Note, Reached
from harness.clusters.local import host, teardown
from harness.clusters.local.containerd import local_node_lister
from harness.gobuild.go import BuildError, check_go
from harness.gobuild.kubernetes import (
    OLDEST_BUILT_HERE,
    build_kubernetes,
    build_summary,
    existing_build,
    release_text,
    resolve_module,
    twins_served_nowhere,
)
from harness.gobuild.not_built import build_failure


class LocalClusters(ClusterKind):
    """A local cluster for each run, of a release built here."""

    name = "local"
    restarts_apiserver = True
    default_parallel = "auto"
    described = "a local one"
    no_node_shutdown = (
        "live probe: graceful node shutdown needs systemd-logind on the node, which the local cluster (processes "
        "on this host) does not have; it runs on the suite's own kind cluster (make probe VERSION=...)"
    )

    def declare_options(self, add: AddOption) -> None:
        add(
            "--local-version",
            metavar="VERSION",
            help="Kubernetes release for a new local cluster (built from its Go modules, run as processes here; root)",
        )
        add(
            "--local-state",
            metavar="DIR",
            help="the --kubeconfig cluster is a local cluster of the suite: read its node with the containerd in DIR",
        )

    def resolve(self, request: Request, warn: Say) -> Runnable:
        if request.image:
            raise BadInput("IMAGE is a kind node image; a local cluster (CLUSTER=local) takes VERSION only")
        if request.version is None:
            raise BadInput("no VERSION given: a local cluster is built from one release (VERSION=1.27.3)")
        try:
            release_text(request.version)  # a whole release, built here: refused now, not after the host checks
            return Runnable(self.name, request.version)
        except VersionError as err:
            raise BadInput(str(err)) from err

    def prepare(self, runnable: Runnable, say: Say, warn: Say) -> Runnable:
        """Check the host for a local cluster in seconds, then build (or reuse) the release."""
        check_host(one_at_a_time=True)
        release = _release_of(runnable)
        if existing_build(release) is None:
            try:
                say(check_go())
                resolve_module(release)
            except BuildError as err:
                raise (BadInput if "does not serve" in str(err) else PrerequisiteMissing)(str(err)) from err
        try:
            stopped = "its go processes were stopped and its unfinished binaries removed (the Go caches stay)"
            with stopping(f"the Kubernetes {release.tag} build: {stopped}"):
                build = build_kubernetes(release)
        except BuildError as err:
            raise NotRunnable(str(err)) from err
        say(f"Kubernetes {build.version}: {build_summary(build.record)} ({build.directory})")
        return runnable.with_facts(build=str(build.directory))

    def provider(self, runnable: Runnable, run: Run, note: Note) -> ClusterProvider:
        """(Nothing is checked before the probes on plain pytest: the release is built here, or said why not.)"""
        from harness.clusters.local.provider import LocalProvider

        release = _release_of(runnable)
        try:
            build = existing_build(release) or build_kubernetes(release)
        except (BuildError, VersionError) as err:
            raise NotRunnable(f"cannot build Kubernetes {release.tag} for a local cluster: {err}") from err
        name = paths.cluster_name(release.minor, run.run_id)
        return LocalProvider.for_build(name, build, run.directory / "local-logs")

    def attach_options(self, provider: ClusterProvider) -> list[str]:
        from harness.clusters.local.provider import LocalProvider

        assert isinstance(provider, LocalProvider)
        return ["--local-state", str(provider.cluster.state)]

    def attached(self, option: Option) -> bool:
        return bool(option("--local-state"))

    def attach(self, kubeconfig: Path, context: str, option: Option, run_record: Path) -> ClusterProvider:
        """The local cluster make probe made, whose node this host reads through its containerd (its state folder)."""
        from harness.clusters.local.disruption import restart_apiserver
        from harness.clusters.local.provider import local_origin

        state = Path(option("--local-state"))
        record = json.loads((state / "cluster.json").read_text())
        return Reached(
            kubeconfig,
            context,
            "local (created by make probe)",
            {**local_origin(record), "context": context},
            local_node_lister(state),
            apiserver_restart=partial(restart_apiserver, state),
            goes_with_the_run=True,
            kind=self.name,
        )

    def leftovers(self, request: Request) -> Leftovers:
        """Local clusters whose state folder is under the local root: their processes stopped by the ids they
        recorded, their mounts, cgroups, bridge and folders removed (teardown.py)."""
        found = Leftovers()
        states = teardown.leftover_clusters()
        if not states:
            return found
        if os.geteuid() != 0:
            found.lines.append(f"local clusters under {host.DEFAULT_ROOT} need root to stop: run make clean as root")
            return found
        for state in states:
            stopped = teardown.stop_cluster(state)
            found.errors += [f"local cluster {state.name}: {e}" for e in stopped.errors]
        found.lines.append(f"local clusters stopped and removed: {', '.join(state.name for state in states)}")
        return found

    def release_axis(self, args: argparse.Namespace, tools: Path) -> ReleaseAxis:
        return LocalAxis(args, tools)


def check_host(one_at_a_time: bool) -> None:
    """Raise PrerequisiteMissing when a local cluster cannot run here (what is missing, with the one apt-get line
    that installs it), or, with one_at_a_time, when one of the suite's is already running."""
    if problems := host.check_host():
        raise PrerequisiteMissing(host_refusal("a local cluster cannot run here", problems))
    if one_at_a_time and (running := teardown.running_clusters()):
        raise PrerequisiteMissing(
            f"a local cluster of the suite is already running ({', '.join(running)}); one at a time "
            "(make clean stops it)"
        )


def _release_of(runnable: Runnable) -> Release:
    """The release a local runnable builds (its resolve always names one)."""
    if runnable.version is None:
        raise NotRunnable("a local cluster is built from one release, and none was given (VERSION=1.27.3)")
    return runnable.version


class LocalAxis(ReleaseAxis):
    """Releases built here into `tools`, one local cluster at a time; a bisection on them asks what a claim
    observed (CLAIM), as every release passes its own expectations."""

    one_at_a_time = True
    builds_here = True

    def __init__(self, args: argparse.Namespace, tools: Path) -> None:
        self.args = args
        self.tools = tools

    def default_versions(self) -> list[str]:
        oldest = KubeVersion.parse(OLDEST_BUILT_HERE.minor).version  # older minors run on their pinned kind images
        return [minor for minor in pinned_minors() if KubeVersion.parse(minor).version >= oldest]

    def plan(self, requested: list[Release]) -> list[PlannedVersion]:
        def served(release: Release) -> bool:
            if existing_build(release, self.tools) is not None:
                return True
            try:
                resolve_module(release, self.tools)
            except BuildError:
                return False
            return True

        return plan_versions(requested, served)

    def check_host(self, one_at_a_time: bool) -> None:
        check_host(one_at_a_time)

    def candidates(self, good: Release, bad: Release) -> list[Release]:
        return bisect_releases(good, bad, bool(getattr(self.args, "pre_releases", False)))

    def bisect_refusal(self) -> str | None:
        if not self.args.claim:
            return "CLUSTER=local bisects on what a claim observed: give CLAIM=<claim id> (probes/*/expectations.yaml)"
        return None

    def unbuildable(self, release: Release) -> str:
        try:
            nowhere = twins_served_nowhere(release, self.tools)
        except (BuildError, VersionError) as err:
            return build_failure(err)
        if nowhere:
            return (
                f"cannot be built here: the Go module proxy serves {', '.join(nowhere)} at no version the build "
                "could take (neither the tag's twin nor a release of its minor)"
            )
        return ""

    def ready(self, release: Release, stop: threading.Event | None = None, quiet: bool = False) -> Readied:
        found = existing_build(release, self.tools)
        if found is not None:
            return Readied(release, {**found.record, "reused": True})
        try:
            with stopping(f"building Kubernetes {release}: its unfinished binaries were removed"):
                built = build_kubernetes(release, self.tools, log_progress=not quiet, stop=stop)
        except (BuildError, VersionError) as err:
            return Readied(release, why_not=build_failure(err), error=str(err))
        return Readied(release, dict(built.record))

    def is_ready(self, release: Release) -> bool:
        return existing_build(release, self.tools) is not None

    def probe_args(self, release: Release) -> list[str]:
        return ["--version", release.bare, "--cluster", "local"]

    def ran_on(self, run_record: Mapping[str, Any]) -> dict[str, Any]:
        local = run_record.get("local") or {}
        return {key: local.get(key) for key in ("containerd_version", "runc_version", "etcd_version")}
