"""The fixtures of the run and of the clusters live probes run on, of the kind the options chose (choice.py), had
through the one owner of a run's clusters (harness/clusters/owner.py): made for this pytest, or re-attached to the
one make probe PARALLEL made (once its gate opens), and the node-shutdown one beside it on a kind that has one."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from harness.base import inputs
from harness.base.errors import ClusterFailed, NotRunnable, PrerequisiteMissing
from harness.base.inputs import BadInput
from harness.base.run import Run
from harness.base.versions import KubeVersion
from harness.clusters.kinds import ShutsNodesDown
from harness.clusters.lifecycle import ClusterProvider, LiveTarget
from harness.clusters.owner import RunClusters
from harness.clusters.registry import options_said
from harness.doors.cluster_gate import READY, wait_at_gate
from harness.doors.plugin.keys import CLUSTER, RUN, RUN_CLUSTERS

# How long a worker waits for make probe PARALLEL's cluster: a kind cluster and its image preload took 40-60 s here.
GATE_TIMEOUT_S = 600.0


@pytest.fixture(scope="session")
def run(pytestconfig: pytest.Config) -> Run:
    # A pytest-xdist worker knows itself from what its controller sent (pytest_configure_node), not from the
    # PYTEST_XDIST_WORKER it also has in its environment, which the processes it starts would inherit. The
    # variable still names a lone worker (make probe PARALLEL's node-shutdown run sets it to "shutdown").
    workerinput: dict[str, Any] = getattr(pytestconfig, "workerinput", {})
    try:
        started = Run.start(
            Path(pytestconfig.getoption("--run-dir")),
            run_id=pytestconfig.getoption("--run-id") or workerinput.get("plp_run_id"),
            worker=workerinput.get("workerid") or os.environ.get("PYTEST_XDIST_WORKER"),
        )
    except OSError as err:
        raise pytest.UsageError(str(err)) from err
    pytestconfig.stash[RUN] = started
    return started


@pytest.fixture(scope="session")
def live_cluster(request: pytest.FixtureRequest, pytestconfig: pytest.Config, run: Run) -> Iterator[LiveTarget]:
    """The cluster live probes run on: a new kind or local cluster, or an existing one from --kubeconfig."""
    with _cluster(pytestconfig, run, shutdown=False, failed=lambda: request.session.testsfailed > 0) as target:
        yield target


@pytest.fixture(scope="session")
def shutdown_cluster(request: pytest.FixtureRequest, pytestconfig: pytest.Config, run: Run) -> Iterator[LiveTarget]:
    """A second cluster for graceful node shutdown, of the kind the options chose (kind: a derived node image, a
    worker, kubelet shutdown grace); skipped, with the kind's reason, on a kind that cannot have one."""
    chosen = pytestconfig.stash.get(CLUSTER, None)
    if chosen is not None and not isinstance(chosen.kind, ShutsNodesDown):
        pytest.skip(chosen.kind.no_node_shutdown)
    with _cluster(pytestconfig, run, shutdown=True, failed=lambda: request.session.testsfailed > 0) as target:
        yield target


def _refuse_invalid_manifests(server_version: dict[str, Any], checked_minor: str | None) -> None:
    """Stop the run before any probe applies a manifest the server's version's schema says is invalid. Not checked
    again on a server of the minor make probe checked them for (--manifests-checked): a schema is a minor's
    (harness/base/manifest_check.py schema_version), so the answer is the one make probe had."""
    version = KubeVersion.parse(str(server_version["gitVersion"]))
    if version.minor == checked_minor:
        return
    try:
        inputs.check_manifests_for(version)
    except BadInput as err:
        pytest.exit(str(err), returncode=2)


@contextmanager
def _cluster(pytestconfig: pytest.Config, run: Run, shutdown: bool, failed: Callable[[], bool]) -> Iterator[LiveTarget]:
    """The cluster the options chose (of any kind), had through the run's one owner of its clusters
    (harness/clusters/owner.py). `shutdown`: the graceful-node-shutdown cluster."""
    clusters = pytestconfig.stash.setdefault(RUN_CLUSTERS, RunClusters(run, keep_clusters(pytestconfig)))
    try:
        provider = _provider(pytestconfig, clusters, shutdown)
        with clusters.life(provider, shutdown, failed) as target:
            _refuse_invalid_manifests(target.transport.server_version(), pytestconfig.getoption("--manifests-checked"))
            yield target
    except ClusterFailed as err:
        pytest.fail(str(err), pytrace=False)


def keep_clusters(pytestconfig: pytest.Config) -> bool:
    """--keep-cluster (KEEP=1): the clusters made here are kept."""
    return bool(pytestconfig.getoption("--keep-cluster"))


def _provider(pytestconfig: pytest.Config, clusters: RunClusters, shutdown: bool) -> ClusterProvider:
    """The provider of the cluster the options chose: re-attached to (make probe PARALLEL's workers, once its gate
    opened), or made by its kind for this run; skips (with the reason) when none was chosen or none can run."""
    chosen = pytestconfig.stash.get(CLUSTER, None)
    if chosen is None:
        pytest.skip(f"live probe: give {', '.join(options_said(parenthesised=False))} or --replay DIR")
    option = pytestconfig.getoption
    if gate := option("--cluster-gate"):
        _wait_for_the_cluster(Path(gate))
        try:
            inputs.check_existing_cluster(option("--kubeconfig"), option("--context"))
        except BadInput as err:
            pytest.fail(str(err), pytrace=False)
    if chosen.runnable is None:  # another process made it: reached, never made or removed here
        return clusters.reached(chosen.kind, Path(option("--kubeconfig")), option("--context"), option)
    try:
        return clusters.made(chosen.kind, chosen.runnable, shutdown)
    except PrerequisiteMissing as err:
        pytest.skip(f"live probe: {err}")
    except NotRunnable as err:
        pytest.fail(f"live probe: {err}", pytrace=False)


def _wait_for_the_cluster(gate: Path) -> None:
    """make probe PARALLEL started this worker while it made the cluster: wait until it says it is ready."""
    try:
        outcome = wait_at_gate(gate, GATE_TIMEOUT_S)
    except TimeoutError as err:
        pytest.fail(str(err), pytrace=False)
    if outcome != READY:
        pytest.fail(f"no cluster to run on: {outcome or 'make probe stopped before it was ready'}", pytrace=False)
