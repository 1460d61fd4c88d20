"""The `probe` fixture: a probe's handle on its cluster, in a namespace of its own, or on a recording it replays;
its record, recording and evidence written as it ends, and its namespace cleaned up."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.base.families import Family, FamilyError, family, family_of
from harness.base.run import Run, safe_name
from harness.clusters.lifecycle import LiveTarget, ScheduledRestart
from harness.core.probe import Probe
from harness.core.transport_recording import Recording, RecordingTransport
from harness.core.transport_replay import RecordingMismatch, ReplayTransport
from harness.doors.plugin.collection import probe_id
from harness.doors.plugin.keys import MODULE_FAMILIES, REPORTS, UNDECIDED_OUTCOME
from harness.doors.plugin.outcomes import is_undecided


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


@pytest.fixture
def probe(request: pytest.FixtureRequest, run: Run) -> Iterator[Probe]:
    """A probe's handle on the cluster (or recording), its namespace, timeline and claims."""
    marker = request.node.get_closest_marker("probe")
    if marker is None:
        raise pytest.UsageError(f"{request.node.nodeid} uses the probe fixture but has no @pytest.mark.probe")
    try:  # the folder the module is in; a module outside any (a test's scratch probe) names a family of the suite
        family = _module_family(request.config, request.path, marker.args[0] if marker.args else None)
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


def _module_family(config: pytest.Config, module: Path, named: str | None) -> Family:
    """The family of a probe module, found once a session: a replay of every recording asked it again at each of
    them (resolving the module's folders and reading family.yaml, about 0.1 ms of CPU each)."""
    known = config.stash.setdefault(MODULE_FAMILIES, {})
    if (module, named) not in known:
        known[module, named] = family_of(module) if named is None else _family(module, named)
    return known[module, named]


def _family(module: Path, named: str) -> Family:
    try:
        return family_of(module)
    except FamilyError:
        return family(named)


def _replayed_probe(request: pytest.FixtureRequest, run: Run, family: Family, name: str) -> Iterator[Probe]:
    path = request.param  # a probe without a recording is skipped before it gets here (pytest_generate_tests)
    recording = _whole_recording(path, name)
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


def _whole_recording(path: Path, name: str) -> Recording:
    """The recording collection knew by its head (harness/doors/plugin/collection.py), read whole: one that is not
    a recording after all, or is of another probe than its head said, fails the probe in one line."""
    try:
        recording = Recording.load(path)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        problem = f"not JSON ({err})"
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        problem = str(err)
    else:
        if recording.probe == name:
            return recording
        pytest.fail(f"{path} is a recording of {recording.probe}, not of {name} as its head says", pytrace=False)
    pytest.fail(f"{path} is not a recording: {problem}", pytrace=False)


def _scheduled_restart(config: pytest.Config, target: LiveTarget) -> ScheduledRestart | None:
    """RESTART_APISERVER_AFTER: the API server restart on its timer, started with the probe (the plugin refused
    the option without a local cluster)."""
    after_s = config.getoption("--restart-apiserver-after")
    if after_s is None or target.apiserver_restart is None:
        return None
    return ScheduledRestart(after_s, target.apiserver_restart).start()


def _live_probe(request: pytest.FixtureRequest, run: Run, family: Family, name: str) -> Iterator[Probe]:
    # (the namespaces' calls, with the API's retries, only for a probe on a cluster: not for a replay or a collection)
    from harness.core.namespaces import cleanup_probe_namespace, create_probe_namespace

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
