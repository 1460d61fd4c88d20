"""The suite's pytest plugin (loaded by conftest.py): options, the cluster (session), one namespace per probe,
replay of recordings, the run's summary. A cluster's life itself belongs to harness/lifecycle.py.

A probe function takes the `probe` fixture and is marked `@pytest.mark.probe`; its claim family is the folder
its module is in, probes/<family>/ (harness/families.py). Where it runs:
- `--kind-version 1.27` / `--kind-image ...`: on a kind cluster this run creates (deleted afterwards
  unless --keep-cluster / KEEP=1);
- `--local-version 1.27.3`: on a local cluster this run builds (once) and starts (harness/local/);
- `--kubeconfig F [--context C]`: on an existing cluster (node-level claims are "not observable");
- `--replay DIR`: on the recordings in DIR, once per recording of that probe, with no cluster at all.
Without any of these, and without Docker and kind, live probes are skipped with one reason.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import threading
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from harness import inputs, paths
from harness.errors import ClusterFailed, PrerequisiteMissing
from harness.families import Family, FamilyError, family, family_of
from harness.inputs import BadInput
from harness.kind import check_prerequisites
from harness.lifecycle import (
    ClusterProvider,
    ExistingProvider,
    KindProvider,
    LiveTarget,
    LocalProvider,
    cluster_life,
)
from harness.local.build import Build, BuildError, build_kubernetes, existing_build
from harness.namespaces import cleanup_probe_namespace, create_probe_namespace
from harness.node_shutdown import announce_shutdown, cluster_config
from harness.nodeimage.shutdown import ensure_derived_image
from harness.probe import ClaimsUndecided, Probe
from harness.run import Run, new_run_id, safe_name
from harness.schedule import PlannedScheduling, longest_first, read_durations
from harness.spread import render as render_spread
from harness.spread import spread_of_run
from harness.transport import Recording, RecordingMismatch, RecordingTransport, ReplayTransport
from harness.versions import KubeVersion, NodeImage, VersionError

REPO = Path(__file__).resolve().parent.parent
REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()
OUTCOMES = pytest.StashKey[dict[str, int]]()  # failed / undecided probe calls of this session
UNDECIDED_OUTCOME = "undecided"
RUN = pytest.StashKey[Run]()
# pytest -n N (pytest-xdist) without --run-id: the run id the controller gives its workers, so they share one run
SHARED_RUN_ID = pytest.StashKey[str]()
IMAGE = pytest.StashKey[NodeImage]()
RECORDINGS = pytest.StashKey[dict[str, list[Path]]]()  # --replay: recording files by the probe they are of
DURATIONS = pytest.StashKey[dict[str, float]]()  # --schedule: seconds per probe id (harness/schedule.py)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pod-lifecycle-probes", "pod-lifecycle probes")
    group.addoption(
        "--kind-version", metavar="VERSION", help="Kubernetes version for a new kind cluster: 1.27 or 1.27.3"
    )
    group.addoption("--kind-image", metavar="IMAGE", help="node image to use instead of the pinned one for VERSION")
    group.addoption("--kind-bin", default="kind", help="the kind executable (default: kind on PATH)")
    group.addoption(
        "--keep-cluster",
        action="store_true",
        default=os.environ.get("KEEP") == "1",
        help="keep the cluster this run creates, and the namespace of every probe that failed (also KEEP=1)",
    )
    group.addoption(
        "--kubeconfig", metavar="FILE", help="probe an existing cluster from this kubeconfig (never written)"
    )
    group.addoption("--context", metavar="NAME", help="context in --kubeconfig")
    group.addoption(
        "--kind-nodes",
        action="store_true",
        help="the --kubeconfig cluster is a kind cluster on this machine: read its nodes with docker exec",
    )
    group.addoption(
        "--local-version",
        metavar="VERSION",
        help="Kubernetes release for a new local cluster (built from its Go modules, run as processes here; root)",
    )
    group.addoption(
        "--local-state",
        metavar="DIR",
        help="the --kubeconfig cluster is a local cluster of the suite: read its node through the containerd in DIR",
    )
    group.addoption("--run-id", help="share this run's directory (the parallel workers of one make probe)")
    group.addoption(
        "--replay", metavar="PATH", help="run the probes on recordings (a directory or one file) instead of a cluster"
    )
    group.addoption("--run-dir", default=str(REPO / "runs"), help="where run records and evidence go (default: runs/)")
    group.addoption(
        "--repeat",
        type=_repeat_count,
        default=None,
        help="run each live probe N times and report the spread of every measured interval (also REPEAT=N)",
    )
    group.addoption(
        "--schedule",
        metavar="FILE",
        help="run the probes longest first by the durations in FILE, and with -n hand each worker its share of the "
        "longest-first packing (harness/schedule.py; make probe PARALLEL writes it)",
    )


# --repeat / REPEAT: a whole number of 1 or more (0, negatives and words are refused, not taken as 1)
_repeat_count = inputs.count("--repeat (REPEAT)")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--replay") and any(
        config.getoption(o) for o in ("--kind-version", "--local-version", "--kubeconfig")
    ):
        raise pytest.UsageError(
            "--replay runs on recordings; it cannot be combined with --kind-version, --local-version or --kubeconfig"
        )
    chosen = [o for o in ("--kind-version", "--local-version", "--kubeconfig") if config.getoption(o)]
    if len(chosen) > 1:
        raise pytest.UsageError(
            f"choose one cluster: a new kind cluster (--kind-version), a new local one (--local-version) or an "
            f"existing one (--kubeconfig), not {' and '.join(chosen)}"
        )
    try:
        _check_inputs(config)
    except BadInput as err:
        raise pytest.UsageError(str(err)) from err
    if threading.current_thread() is threading.main_thread():
        # CI cancels with SIGTERM: turn it into the same path as Ctrl-C, so fixture teardown (finalizer
        # removal, namespace and cluster deletion) still runs. pytest-timeout uses the signal method for
        # the same reason (its thread method exits without teardown).
        signal.signal(signal.SIGTERM, _interrupt)


def _check_inputs(config: pytest.Config) -> None:
    """The options' checks shared with `make probe` (harness/inputs.py), and the plugin's own; raises BadInput."""
    inputs.check_existing_cluster(config.getoption("--kubeconfig"), config.getoption("--context"))
    if config.getoption("--repeat") is None:
        try:
            config.option.repeat = _repeat_count(os.environ.get("REPEAT") or "1")
        except argparse.ArgumentTypeError as err:
            raise BadInput(str(err)) from err
    if local_version := config.getoption("--local-version"):
        config.option.local_version = inputs.local_release(local_version)
    if config.getoption("--replay"):
        config.stash[RECORDINGS] = _recordings(Path(config.getoption("--replay")))
    if config.getoption("--schedule"):
        try:
            config.stash[DURATIONS] = read_durations(Path(config.getoption("--schedule")))
        except ValueError as err:
            raise BadInput(str(err)) from err
    inputs.check_run_dir(config.getoption("--run-dir"))
    version, image = config.getoption("--kind-version"), config.getoption("--kind-image")
    if version or image:
        config.stash[IMAGE] = inputs.kind_image(version, image)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"received signal {signum}")


# ------------------------------------------------------------------------------------ collection


def probe_id(function: Any) -> str:
    return f"{Path(function.__code__.co_filename).name}::{function.__name__}"


def _recordings(root: Path) -> dict[str, list[Path]]:
    """The recordings under --replay by probe id; a path that is missing or holds a non-recording is refused."""
    if not root.exists():
        raise pytest.UsageError(f"--replay {root}: no such file or directory")
    files = [root] if root.is_file() else sorted(root.rglob("*.json"))
    if not files:
        raise pytest.UsageError(f"--replay {root}: no recordings (*.json) there")
    index: dict[str, list[Path]] = {}
    for path in files:
        try:
            recording = Recording.load(path)
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise pytest.UsageError(f"--replay: {path} is not a recording: not JSON") from err
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise pytest.UsageError(f"--replay: {path} is not a recording: {err}") from err
        index.setdefault(recording.probe, []).append(path)
    return index


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "probe" not in metafunc.fixturenames:
        return
    if not metafunc.config.getoption("--replay"):
        repeat = metafunc.config.getoption("--repeat")
        if repeat > 1:  # live: the same probe N times, each in its own namespace
            metafunc.parametrize("probe", range(repeat), indirect=True, ids=[f"repeat{i + 1}" for i in range(repeat)])
        return
    paths = metafunc.config.stash[RECORDINGS].get(probe_id(metafunc.function), [])
    if paths:
        metafunc.parametrize("probe", paths, indirect=True, ids=[p.stem for p in paths])
    else:  # a probe without a recording is a failure of the offline run, not a silent omission
        metafunc.parametrize("probe", [None], indirect=True, ids=["no-recording"])


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--schedule: the probes longest first (each pytest-xdist worker collects, so each sees this order)."""
    durations = config.stash.get(DURATIONS, None)
    if durations is not None:
        by_id = {item.nodeid: item for item in items}
        items[:] = [by_id[nodeid] for nodeid in longest_first(list(by_id), durations)]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """--schedule with -n: each worker gets its planned share at once (harness/schedule.py says why)."""
    return PlannedScheduling(config, log, Path(config.getoption("--schedule"))) if DURATIONS in config.stash else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """A probe's verdicts are always concluded: what it checked but did not conclude, the harness concludes.

    A probe that checked no claim at all fails: a probe passes only on claims that held.
    """
    __tracebackhide__ = True
    yield  # raises when the probe itself failed or skipped: nothing more to judge then
    probe = getattr(item, "funcargs", {}).get("probe")
    if isinstance(probe, Probe) and (probe.unconcluded or not probe.verdicts):
        probe.conclude(note="(concluded by the harness: the probe did not call probe.conclude() at its end)")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and call.excinfo is not None and call.excinfo.errisinstance(ClaimsUndecided):
        vars(report)[UNDECIDED_OUTCOME] = True  # kept through pytest-xdist's report serialisation
    if report.failed:  # for the run record's status: failed, or only undecided
        counts = item.config.stash.setdefault(OUTCOMES, {})
        key = UNDECIDED_OUTCOME if is_undecided(report) else "failed"
        counts[key] = counts.get(key, 0) + 1
    item.stash.setdefault(REPORTS, {})[report.when] = report
    return report


def is_undecided(report: pytest.TestReport | pytest.CollectReport) -> bool:
    """A probe that failed only because claims stayed undecided (no claim failed)."""
    return report.failed and bool(vars(report).get(UNDECIDED_OUTCOME))


def pytest_report_teststatus(
    report: pytest.TestReport | pytest.CollectReport, config: pytest.Config
) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
    """Undecided probes are counted apart from failed ones in pytest's summary (they still fail the run)."""
    if is_undecided(report):
        return UNDECIDED_OUTCOME, "U", ("UNDECIDED", {"yellow": True})
    return None


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


# -------------------------------------------------------------------------------------- fixtures


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller, as it starts each worker: every worker of one `pytest -n N` writes into one run
    directory (each its own run-<worker>.json), the one --run-id names or one made here."""
    if SHARED_RUN_ID not in node.config.stash:
        node.config.stash[SHARED_RUN_ID] = node.config.getoption("--run-id") or new_run_id()
    node.workerinput["plp_run_id"] = node.config.stash[SHARED_RUN_ID]


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
def live_cluster(pytestconfig: pytest.Config, run: Run) -> Iterator[LiveTarget]:
    """The cluster live probes run on: a new kind or local cluster, or an existing one from --kubeconfig."""
    with _cluster(pytestconfig, run, shutdown=False) as target:
        yield target


@pytest.fixture(scope="session")
def shutdown_cluster(pytestconfig: pytest.Config, run: Run) -> Iterator[LiveTarget]:
    """A second kind cluster for graceful node shutdown: derived node image, a worker, kubelet shutdown grace."""
    if pytestconfig.getoption("--kubeconfig"):
        pytest.skip(
            "live probe: graceful node shutdown needs a second kind cluster the suite creates from its "
            "shutdown-capable node image, which it does not make next to an existing cluster "
            "(run these probes with make probe VERSION=...)"
        )
    if pytestconfig.getoption("--local-version"):
        pytest.skip(
            "live probe: graceful node shutdown needs systemd-logind on the node, which the local cluster (processes "
            "on this host) does not have; it runs on the suite's own kind cluster (make probe VERSION=...)"
        )
    with _cluster(pytestconfig, run, shutdown=True) as target:
        yield target


def _refuse_invalid_manifests(server_version: dict[str, Any]) -> None:
    """Stop the run before any probe applies a manifest the server's version's schema says is invalid."""
    try:
        inputs.check_manifests_for(KubeVersion.parse(str(server_version["gitVersion"])))
    except BadInput as err:
        pytest.exit(str(err), returncode=2)


@contextmanager
def _cluster(pytestconfig: pytest.Config, run: Run, shutdown: bool) -> Iterator[LiveTarget]:
    """The cluster the options name (kind, local or existing), through the one lifecycle of harness/lifecycle.py.

    `shutdown`: the graceful-node-shutdown kind cluster (harness/node_shutdown.py); its provenance is kept
    under `shutdown_cluster` in run.json, the other cluster's at the top level.
    """
    suffix = "-gns" if shutdown else ""
    facts: dict[str, Any] = {}

    def note(**values: Any) -> None:
        facts.update(values)
        if shutdown:
            run.write_provenance(shutdown_cluster=dict(facts))
        else:
            run.write_provenance(**values)

    provider = _provider(pytestconfig, run, shutdown, note)
    try:
        with cluster_life(
            provider, note, pytestconfig.getoption("--keep-cluster"), run.directory / f"kind-logs{suffix}"
        ) as target:
            _refuse_invalid_manifests(target.transport.server_version())
            yield target
    except ClusterFailed as err:
        pytest.fail(str(err), pytrace=False)


def _provider(pytestconfig: pytest.Config, run: Run, shutdown: bool, note: Any) -> ClusterProvider:
    """The provider the options ask for; skips (with the reason) when none was asked for or none can run."""
    if kubeconfig := pytestconfig.getoption("--kubeconfig"):
        local_state = pytestconfig.getoption("--local-state")
        return ExistingProvider.from_kubeconfig(
            Path(kubeconfig),
            pytestconfig.getoption("--context"),
            kind_nodes=pytestconfig.getoption("--kind-nodes"),
            local_state=Path(local_state) if local_state else None,
            run_record=run.directory / "run.json",
        )
    local_version = pytestconfig.getoption("--local-version")
    if local_version:
        build = existing_build(local_version) or _build_or_skip(local_version)
        name = paths.cluster_name(KubeVersion.parse(local_version).minor, run.run_id)
        return LocalProvider.for_build(name, build, run.directory / "local-logs")
    image = pytestconfig.stash.get(IMAGE, None)
    if image is None:
        pytest.skip(
            "live probe: give --kind-version (a new kind cluster), --local-version (a local one), "
            "--kubeconfig (an existing one) or --replay DIR"
        )
    kind_bin = pytestconfig.getoption("--kind-bin")
    try:
        kind_line = check_prerequisites(kind_bin=kind_bin)
    except PrerequisiteMissing as err:
        pytest.skip(f"live probe: {err}")
    suffix = "-gns" if shutdown else ""
    name = paths.cluster_name(image.kubernetes.minor, run.run_id, "gns" if shutdown else "")
    provider = KindProvider.for_image(image, name, run.path(f"kubeconfig{suffix}"), kind_bin, kind_line)
    cluster = provider.cluster
    if shutdown:
        try:
            cluster.image, built = ensure_derived_image(image.reference, paths.NODE_IMAGES)
        except ClusterFailed as err:
            note(**provider.facts(), cluster_error=str(err))
            pytest.fail(str(err), pytrace=False)
        cluster.config = run.path("kind-config-gns.yaml")
        cluster.config.write_text(cluster_config(image.kubernetes))
        provider.node_shutdown = announce_shutdown
        note(derived_node_image=cluster.image, derived_image_note=built)
    return provider


def _build_or_skip(version: str) -> Build:
    try:
        return build_kubernetes(version)
    except (BuildError, VersionError) as err:
        pytest.fail(f"live probe: cannot build Kubernetes {version} for a local cluster: {err}", pytrace=False)


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
        yield from _replayed_probe(request, run, family, name)
    else:
        yield from _live_probe(request, run, family, name)


def _family(module: Path, named: str) -> Family:
    try:
        return family_of(module)
    except FamilyError:
        return family(named)


def _replayed_probe(request: pytest.FixtureRequest, run: Run, family: Family, name: str) -> Iterator[Probe]:
    path = getattr(request, "param", None)
    if path is None:
        pytest.fail(f"no recording of {name} under {request.config.getoption('--replay')}", pytrace=False)
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
    try:
        yield probe
    finally:
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
                report = cleanup_probe_namespace(target.core, namespace)
                run.provenance.setdefault("cleanup", []).append(report.__dict__)
                run.write_provenance()
                if report.errors:
                    raise RuntimeError(f"cleanup of namespace {namespace} incomplete: {report.errors}")


# ---------------------------------------------------------------------------------------- summary


@pytest.hookimpl(trylast=True)  # after pytest's own sessionfinish has torn the fixtures down (the cleanup)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    run = session.config.stash.get(RUN, None)
    if run is not None:
        status = {0: "passed", 1: "failed", 2: "interrupted"}.get(int(exitstatus), f"exit {int(exitstatus)}")
        counts = session.config.stash.get(OUTCOMES, {})
        if status == "failed" and counts.get(UNDECIDED_OUTCOME) and not counts.get("failed"):
            status = UNDECIDED_OUTCOME  # every failure was a claim left undecided: not evidence of a regression
        cleanup = run.provenance.get("cleanup", [])
        run.write_provenance(
            cleaned={
                "namespaces_deleted": [c["namespace"] for c in cleanup if c.get("namespace_deleted")],
                "namespaces_left": [c["namespace"] for c in cleanup if not c.get("namespace_deleted")],
                "namespaces_kept": [k["namespace"] for k in run.provenance.get("namespaces_kept", [])],
                "finalizers_removed": sum(len(c.get("finalizers_removed", [])) for c in cleanup),
                "cluster_deleted": bool(run.provenance.get("cluster_deleted")),
                **(
                    {"shutdown_cluster_deleted": bool(run.provenance["shutdown_cluster"].get("cluster_deleted"))}
                    if "shutdown_cluster" in run.provenance
                    else {}
                ),
            }
        )
        run.finish(status)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    undecided = terminalreporter.stats.get(UNDECIDED_OUTCOME, [])
    if undecided:  # pytest lists only its own "failed" under FAILURES: these get their own section
        terminalreporter.write_sep("=", f"UNDECIDED ({len(undecided)}: no claim failed, but some could not be decided)")
        for report in undecided:
            terminalreporter.write_sep("_", report.head_line or report.nodeid)
            terminalreporter.write_line(report.longreprtext)
        for report in undecided:
            crash = getattr(report.longrepr, "reprcrash", None)
            terminalreporter.write_line(f"UNDECIDED {report.nodeid} - {getattr(crash, 'message', '')}")
    if RUN not in config.stash and SHARED_RUN_ID in config.stash:  # pytest-xdist's controller: where its workers wrote
        terminalreporter.write_sep("-", "pod-lifecycle probes")
        shared = Path(config.getoption("--run-dir")) / config.stash[SHARED_RUN_ID]
        terminalreporter.write_line(f"run records, recordings and evidence: {shared}")
        _say_kept_namespaces(terminalreporter, shared)
    run = config.stash.get(RUN, None)
    if run is not None:
        terminalreporter.write_sep("-", "pod-lifecycle probes")
        terminalreporter.write_line(f"run records, recordings and evidence: {run.directory}")
        for facts in (run.provenance, run.provenance.get("shutdown_cluster") or {}):
            if error := facts.get("cluster_delete_error"):
                name, kind = facts["cluster_name"], facts.get("cluster", "kind")
                terminalreporter.write_line(f"could not delete {kind} cluster {name}: {error}\n(make clean removes it)")
            if facts.get("cluster_kept"):
                terminalreporter.write_line(facts["cluster_kept_message"])
        _say_kept_namespaces(terminalreporter, run.directory)
        rows = spread_of_run(run.directory)
        if config.getoption("--repeat") > 1 and rows:
            (run.directory / "spread.json").write_text(json.dumps(rows, indent=1) + "\n")
            terminalreporter.write_line("spread of measured intervals (seconds):")
            terminalreporter.write_line(render_spread(rows))


def _say_kept_namespaces(terminalreporter: Any, run_directory: Path) -> None:
    """KEEP=1: the namespaces of failed probes left for a look, from every run record of the run (its workers')."""
    kept = [
        k for record in sorted(run_directory.glob("run*.json")) for k in _read_json(record).get("namespaces_kept", [])
    ]
    for entry in kept:
        terminalreporter.write_line(
            f"kept for a look (KEEP=1): namespace {entry['namespace']} of the failed probe {entry['probe']}"
        )
    if kept:
        terminalreporter.write_line(
            "(make clean with the cluster's KUBECONFIG_FILE and CONTEXT removes them, or they go with a kept cluster)"
        )


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}
