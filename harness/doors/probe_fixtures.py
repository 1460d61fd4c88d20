"""The suite's fixtures (registered by harness/doors/pytest_plugin.py): the run, the cluster a live probe runs on
(through harness/clusters/lifecycle.py), and the `probe` handle: live, in its own namespace, or replayed from a
recording.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from harness.base import inputs
from harness.base.errors import ClusterFailed, NotRunnable, PrerequisiteMissing
from harness.base.families import Family, FamilyError, family, family_of
from harness.base.inputs import BadInput
from harness.base.run import Run, safe_name
from harness.base.versions import KubeVersion
from harness.clusters.kinds import NODE_SHUTDOWN_ROLE, ShutsNodesDown, reattached
from harness.clusters.lifecycle import ClusterProvider, LiveTarget, Note, ScheduledRestart, cluster_life
from harness.clusters.registry import options_said
from harness.core.namespaces import cleanup_probe_namespace, create_probe_namespace
from harness.core.probe import Probe
from harness.core.transport import Recording, RecordingMismatch, RecordingTransport, ReplayTransport
from harness.doors.cluster_gate import READY, wait_at_gate
from harness.doors.pytest_plugin import (
    CLUSTER,
    REPORTS,
    RUN,
    UNDECIDED_OUTCOME,
    is_undecided,
    probe_id,
)

# How long a worker waits for make probe PARALLEL's cluster: a kind cluster and its image preload took 40-60 s here.
GATE_TIMEOUT_S = 600.0


def _junit_properties(request: pytest.FixtureRequest, probe: Probe) -> None:
    """Each claim's id, verdict and sources as JUnit XML properties of the probe's test case."""
    for verdict in probe.verdicts:
        request.node.user_properties.append((f"claim:{verdict.claim.id}", verdict.status))
        if verdict.expected is not None:
            request.node.user_properties.append((f"source:{verdict.claim.id}", " | ".join(verdict.expected.sources)))
    for status, count in probe.counts().items():  # failed and undecided apart, as in the summary
        request.node.user_properties.append((f"claims_{status.replace(' ', '_')}", str(count)))
    request.node.user_properties.append(("server_version", str(probe.server_version)))


def _outcome(request: pytest.FixtureRequest) -> str:
    """passed / failed / undecided (failed only on undecided claims) / skipped / not run."""
    call = request.node.stash.get(REPORTS, {}).get("call")
    if call is None:
        return "not run"
    return UNDECIDED_OUTCOME if is_undecided(call) else call.outcome


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


def _refuse_invalid_manifests(server_version: dict[str, Any]) -> None:
    """Stop the run before any probe applies a manifest the server's version's schema says is invalid."""
    try:
        inputs.check_manifests_for(KubeVersion.parse(str(server_version["gitVersion"])))
    except BadInput as err:
        pytest.exit(str(err), returncode=2)


@contextmanager
def _cluster(pytestconfig: pytest.Config, run: Run, shutdown: bool, failed: Callable[[], bool]) -> Iterator[LiveTarget]:
    """The cluster the options chose (of any kind), through the one life of harness/clusters/lifecycle.py.

    `shutdown`: the graceful-node-shutdown cluster (its kind's NODE_SHUTDOWN_ROLE); its provenance is kept
    under `shutdown_cluster` in run.json, the other cluster's at the top level.
    """
    suffix = f"-{NODE_SHUTDOWN_ROLE}" if shutdown else ""
    facts: dict[str, Any] = {}

    def note(**values: Any) -> None:
        facts.update(values)
        if shutdown:
            run.write_provenance(shutdown_cluster=dict(facts))
        else:
            run.write_provenance(**values)

    try:
        provider = _provider(pytestconfig, run, shutdown, note)
        with cluster_life(
            provider, note, pytestconfig.getoption("--keep-cluster"), run.directory / f"kind-logs{suffix}", failed
        ) as target:
            _refuse_invalid_manifests(target.transport.server_version())
            yield target
    except ClusterFailed as err:
        pytest.fail(str(err), pytrace=False)


def _provider(pytestconfig: pytest.Config, run: Run, shutdown: bool, note: Note) -> ClusterProvider:
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
        kubeconfig, context = Path(option("--kubeconfig")), option("--context")
        return reattached(chosen.kind, kubeconfig, context, option, run.directory / "run.json")
    try:
        if shutdown:  # (the fixture skipped a kind without the ability)
            assert isinstance(chosen.kind, ShutsNodesDown)
            return chosen.kind.shutdown_provider(chosen.runnable, run, note)
        return chosen.kind.provider(chosen.runnable, run, note)
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


@pytest.fixture
def probe(request: pytest.FixtureRequest, run: Run) -> Iterator[Probe]:
    """A probe's handle on the cluster (or recording), its namespace, timeline and claims."""
    marker = request.node.get_closest_marker("probe")
    if marker is None:
        raise pytest.UsageError(f"{request.node.nodeid} uses the probe fixture but has no @pytest.mark.probe")
    try:  # the folder the module is in; a module outside any (a test's scratch probe) names a family of the suite
        family = family_of(request.path) if not marker.args else _family(request.path, marker.args[0])
    except FamilyError as err:
        raise pytest.UsageError(str(err)) from err
    if marker.args and marker.args[0] != family.name:
        raise pytest.UsageError(
            f"{request.node.nodeid} is marked probe({marker.args[0]!r}) but lives in the family folder {family.name}"
        )
    name = probe_id(request.function)
    if request.config.getoption("--replay"):
        yield from _replayed_probe(request, run, family)
    else:
        yield from _live_probe(request, run, family, name)


def _family(module: Path, named: str) -> Family:
    try:
        return family_of(module)
    except FamilyError:
        return family(named)


def _replayed_probe(request: pytest.FixtureRequest, run: Run, family: Family) -> Iterator[Probe]:
    path = request.param  # a probe without a recording is skipped before it gets here (pytest_generate_tests)
    recording = Recording.load(path)
    probe = Probe.replaying(
        recording, family.name, run, record_name=request.node.name, families_root=family.directory.parent
    )
    transport = probe.transport
    assert isinstance(transport, ReplayTransport)
    yield probe
    probe.close()
    _junit_properties(request, probe)
    outcome = _outcome(request)
    unmade = transport.unused_calls() if outcome == "passed" else []
    if unmade:  # the probe no longer does what was recorded: its record must not say it passed
        outcome = "failed"
    if outcome in ("failed", UNDECIDED_OUTCOME):
        probe.save_evidence(live=None)
    probe.write_record(outcome, "replay", {"file": str(path), **recording.origin})
    if unmade:
        raise RecordingMismatch(f"the probe finished without making these recorded calls: {unmade}")


def _scheduled_restart(config: pytest.Config, target: LiveTarget) -> ScheduledRestart | None:
    """RESTART_APISERVER_AFTER: the API server restart on its timer, started with the probe (the plugin refused
    the option without a local cluster)."""
    after_s = config.getoption("--restart-apiserver-after")
    if after_s is None or target.apiserver_restart is None:
        return None
    return ScheduledRestart(after_s, target.apiserver_restart).start()


def _live_probe(request: pytest.FixtureRequest, run: Run, family: Family, name: str) -> Iterator[Probe]:
    needs_shutdown = request.node.get_closest_marker("node_shutdown") is not None
    target: LiveTarget = request.getfixturevalue("shutdown_cluster" if needs_shutdown else "live_cluster")
    # Unique per test item (REPEAT runs one function several times) and per run; at most 63 characters.
    item = hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:4]
    namespace = f"plp-{safe_name(request.function.__name__.removeprefix('test_'), 40)}-{item}-{run.run_id[-4:]}"
    try:
        create_probe_namespace(target.core, namespace, run.run_id)
    except BaseException:
        cleanup_probe_namespace(target.core, namespace)  # created but never usable: still ours to remove
        raise
    origin = {
        "kind": "live",
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "namespace": namespace,
        "run_id": run.run_id,
        "node_access": target.transport.node_access,
        **target.origin,
        **run.suite(),
    }
    recording = Recording(name, origin)
    transport = RecordingTransport(target.transport, recording)
    probe = Probe(
        name,
        family.name,
        transport,
        namespace,
        run,
        run.run_id,
        record_name=request.node.name,
        families_root=family.directory.parent,
    )
    probe.server_version  # noqa: B018 - every recording starts by asking the server's version
    restart = _scheduled_restart(request.config, target)  # its timer starts here; the finally below ends it
    try:
        yield probe
    finally:
        if restart is not None:  # done (or cancelled) before anything is written: the origin says which
            origin["disruptions"] = [restart.finish()]
        outcome = _outcome(request)
        probe.close()
        _junit_properties(request, probe)
        try:
            if outcome in ("failed", UNDECIDED_OUTCOME):
                probe.save_evidence(live=target.transport)
            probe.write_record(outcome, "live", origin)
            recording.write(run.path("recordings", f"{probe.record_name}.json"))
        finally:
            if request.config.getoption("--keep-cluster") and outcome in ("failed", UNDECIDED_OUTCOME):
                kept = {"namespace": namespace, "probe": request.node.nodeid, "outcome": outcome}
                run.provenance.setdefault("namespaces_kept", []).append(kept)
                run.write_provenance()
            else:
                report = cleanup_probe_namespace(target.core, namespace, wait=not target.goes_with_the_run)
                run.provenance.setdefault("cleanup", []).append(report.__dict__)
                run.write_provenance()
                if report.errors:
                    raise RuntimeError(f"cleanup of namespace {namespace} incomplete: {report.errors}")
