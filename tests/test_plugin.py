"""The suite's pytest plugin, run as a user would run pytest: on the selection, replay or option the test gives,
in the test's own process (tests/pytest_here.py) where pytest and the plugin are the subject; in a child process
where the process is (a signal, a live cluster's client and threads)."""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.base.run import SUITE_DIR, checkout_version
from harness.core.transport_recording import Recording
from tests.live import live
from tests.pytest_here import pytest_here

REPO = Path(__file__).resolve().parent.parent

PytestRun = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def pytest_run(monkeypatch: pytest.MonkeyPatch) -> PytestRun:
    """pytest with the given arguments from the repository's root, run in this process."""
    return functools.partial(pytest_here, monkeypatch=monkeypatch)


def pytest_child(
    *args: str, timeout: float = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """pytest with the given arguments from the repository's root, in a child process."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_a_contradicting_recording_fails_the_probe_and_leaves_evidence(pytest_run: PytestRun, tmp_path: Path) -> None:
    recording = live("phase_after_deletion/always_pod_trapping_sigterm--v1.27.3-live-local.json")
    for step in recording.interactions:
        for event in step.get("events", []):
            event["object"]["status"]["phase"] = "Running"  # as if the 1.27 change were missing
    recording.write(tmp_path / "recordings" / "contradiction.json")
    proc = pytest_run(
        "probes",
        "--replay",
        str(tmp_path / "recordings"),
        "--run-dir",
        str(tmp_path / "runs"),
        "-k",
        "test_always_pod_trapping_sigterm",
    )
    assert proc.returncode == 1, proc.stdout
    assert "the v1.27.3 cluster behaved like <1.27.0-rc.0" in proc.stdout
    assert "1 failed" in proc.stdout
    (run_dir,) = (tmp_path / "runs").iterdir()
    (record_file,) = (run_dir / "probes").iterdir()
    record = json.loads(record_file.read_text())
    assert record["outcome"] == "failed"
    assert record["server_version"] == "v1.27.3"
    assert [v["status"] for v in record["verdicts"]].count("fail") == 1
    evidence = run_dir / "evidence" / record_file.stem
    assert "delete" in (evidence / "timeline.txt").read_text()
    assert "running-pod" in (evidence / "objects-last-seen.yaml").read_text()
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"


def test_collection_reads_a_recordings_head_and_its_replay_the_whole_file(
    pytest_run: PytestRun, tmp_path: Path
) -> None:
    """--replay's collection knows a recording's probe from the head Recording.write gives it (a file that begins
    otherwise is read whole, as before); the probe's replay reads the rest, and a file whose head is a recording's
    but whose body is not, or whose body names another probe, fails that probe in one line, never passes."""
    recording = live("phase_after_deletion/always_pod_trapping_sigterm--v1.27.3-live-local.json")
    folder = tmp_path / "recordings"
    recording.write(folder / "as-written.json")
    (folder / "compact.json").write_text(json.dumps(recording.to_json()))  # no head to read: read whole
    assert Recording.probe_of(folder / "as-written.json") == Recording.probe_of(folder / "compact.json")
    assert Recording.probe_of(folder / "as-written.json") == recording.probe
    text = (folder / "as-written.json").read_text()
    (folder / "cut-short.json").write_text(text[: len(text) // 2])
    (folder / "two-probes.json").write_text(
        text.replace('\n "origin": ', '\n "probe": "test_phase_after_deletion.py::test_other",\n "origin": ', 1)
    )
    proc = pytest_run("probes", "--replay", str(folder), "--run-dir", str(tmp_path / "runs"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"\b2 passed, \d+ skipped, 2 errors\b", proc.stdout), proc.stdout
    assert "During handling" not in proc.stdout, proc.stdout
    assert f"{folder / 'cut-short.json'} is not a recording: not JSON" in proc.stdout, proc.stdout
    said = f"{folder / 'two-probes.json'} is a recording of test_phase_after_deletion.py::test_other, not of "
    assert said in proc.stdout, proc.stdout


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_without_a_cluster_probes_are_refused_in_one_line_never_green(
    pytest_run: PytestRun, tmp_path: Path, workers: list[str]
) -> None:
    """No cluster option, no existing cluster, no replay: not 29 skipped and exit 0 (a CI job calling pytest would go
    green having probed nothing), but a usage error naming the options, before any probe, with no run record."""
    proc = pytest_run("probes", "--run-dir", str(tmp_path / "runs"), *workers)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    refused = [line for line in proc.stderr.splitlines() if line.startswith("ERROR")]
    assert len(refused) == 1, proc.stderr
    assert re.fullmatch(
        r"ERROR: bad input: (\d+) probes selected and no cluster to run them on: give --kind-version \(a new kind "
        r"cluster\), --local-version \(a local one\), --kubeconfig \(an existing one\), or --replay probes \(the "
        r"shipped recordings\)",
        refused[0],
    ), refused
    assert "passed" not in proc.stdout and not list((tmp_path / "runs").glob("*/run*.json"))


def test_a_selection_with_no_probe_is_not_refused(pytest_run: PytestRun, tmp_path: Path) -> None:
    proc = pytest_run("probes", "--run-dir", str(tmp_path), "-k", "nosuchprobe")
    assert proc.returncode == 5, proc.stdout  # pytest's own "no tests collected", not a pass either


def test_a_run_record_says_passed_only_when_a_probe_ran(pytest_run: PytestRun, tmp_path: Path) -> None:
    """A run whose pytest ended green with no probe run (every probe skipped) records "no probe ran"."""
    (tmp_path / "test_no_probe.py").write_text("def test_only_the_run(run):\n    pass\n")
    proc = pytest_run(
        *("-p", "harness.doors.pytest_plugin", str(tmp_path / "test_no_probe.py"), "--rootdir", str(REPO)),
        *("--run-dir", str(tmp_path / "runs")),
    )
    assert proc.returncode == 0, proc.stdout
    (run_json,) = (tmp_path / "runs").glob("*/run.json")
    assert json.loads(run_json.read_text())["status"] == "no probe ran"


def test_an_unknown_version_is_a_usage_error_listing_the_known_ones(pytest_run: PytestRun, tmp_path: Path) -> None:
    proc = pytest_run("probes", "--kind-version", "9.99", "--run-dir", str(tmp_path))
    assert proc.returncode == 4
    assert "no pinned node image for Kubernetes 9.99; known versions: 1.19 (1.19.16)" in proc.stderr


def test_a_probe_without_recording_is_skipped_by_name_as_a_version_no_cluster_ran(
    pytest_run: PytestRun, tmp_path: Path
) -> None:
    """Nothing to replay is never a pass: each probe without a recording is skipped, named with the reason."""
    only_one = tmp_path / "recordings"
    only_one.mkdir()
    live("phase_after_deletion/always_pod_trapping_sigterm--v1.27.3-live-local.json").write(only_one / "one.json")
    proc = pytest_run(
        "probes/phase_after_deletion/test_phase_after_deletion.py",
        "--replay",
        str(only_one),
        "--run-dir",
        str(tmp_path / "runs"),
    )
    assert proc.returncode == 0, proc.stdout
    assert "1 passed, 6 skipped" in proc.stdout
    skipped = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 6
    assert any(
        "test_phase_after_deletion.py::test_onfailure_pod_ignoring_sigterm: no live recording under" in line
        and "its claims rest on their expectations alone" in line
        for line in skipped
    )
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert len(list((run_dir / "probes").iterdir())) == 1  # the replayed probe's record; a skipped probe writes none


SLOW_PROBE = """
import time
import pytest

@pytest.fixture
def held(tmp_path_factory):
    yield
    (MARKER).write_text("teardown ran")

def test_waits(held, run):
    print("waiting", flush=True)
    time.sleep(60)
"""


def test_sigterm_while_a_probe_waits_still_runs_teardown(tmp_path: Path) -> None:
    """CI cancels with SIGTERM: the suite turns it into an interrupt, so fixture teardown (cleanup) runs; the run
    exits 130 like Ctrl-C anywhere else in the suite, its last line saying what was stopped and removed."""
    marker = tmp_path / "marker"
    test_file = tmp_path / "test_slow.py"
    test_file.write_text(SLOW_PROBE.replace("MARKER", f"__import__('pathlib').Path({str(marker)!r})"))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "harness.doors.pytest_plugin",
            "-p",
            "no:cacheprovider",
            "-s",
            str(test_file),
            "--rootdir",
            str(REPO),
            "--run-dir",
            str(tmp_path / "runs"),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdout is not None
    for line in iter(proc.stdout.readline, ""):  # the probe is waiting (or the child ended: EOF), however long
        if "waiting" in line:
            break
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=600)
    assert proc.returncode == 130, output  # as every interrupt of the suite, not pytest's 2
    assert marker.read_text() == "teardown ran"
    assert "Traceback" not in output
    last = output.strip().splitlines()[-1]
    assert last.startswith("interrupted: stopped the probes; 0 namespaces deleted, 0 finalizers removed (run record: ")
    (run_json,) = (tmp_path / "runs").glob("*/run.json")
    record = json.loads(run_json.read_text())
    assert record["status"] == "interrupted"
    assert record["cleaned"] == {
        "namespaces_deleted": [],
        "namespaces_left": [],
        "namespaces_kept": [],
        "finalizers_removed": 0,
        "cluster_deleted": False,
    }


def test_repeat_runs_each_live_probe_n_times(pytest_run: PytestRun, tmp_path: Path) -> None:
    proc = pytest_run(
        "probes/termination_order/test_termination_order.py",
        "--repeat",
        "3",
        "--collect-only",
        "-q",
        "--run-dir",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stdout
    assert "test_prestop_within_the_grace_period[repeat3]" in proc.stdout
    assert "21 tests collected" in proc.stdout


def test_a_run_directory_that_is_not_writable_is_a_usage_error(pytest_run: PytestRun, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    proc = pytest_run("probes/phase_after_deletion/test_phase_after_deletion.py", "--run-dir", str(blocker / "runs"))
    assert proc.returncode == 4
    assert "is not writable" in proc.stderr


TRAPPING_PROBE = "probes/phase_after_deletion/test_phase_after_deletion.py::test_pod_without_finalizer_trapping_sigterm"


def _kubelet_ends_the_pod_in_succeeded(git_version: str) -> Any:
    """The stand-in API server's script: a cluster whose kubelet ends a deleted pod in Succeeded."""
    from tests.doubles import pod
    from tests.fake_apiserver import AFTER_DELETE, Script

    terminated = {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": "2023-12-11T00:00:05Z"}}
    deleting = pod(rv="40", deletion_timestamp="2023-12-11T00:00:09Z", grace=5)
    final = pod(
        rv="41",
        phase="Succeeded",
        ready=False,
        container_state=terminated,
        deletion_timestamp="2023-12-11T00:00:09Z",
        grace=5,
    )
    return Script(
        git_version=git_version,
        watch_streams=[
            [{"type": "MODIFIED", "object": pod(rv="30")}],
            [
                AFTER_DELETE,
                {"type": "MODIFIED", "object": deleting},
                {"type": "MODIFIED", "object": final},
                {"type": "DELETED", "object": final},
            ],
        ],
    )


def _probe_existing_cluster(
    tmp_path: Path, script: Any, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], Path, bytes]:
    """The trapping probe on the stand-in API server as an existing cluster: (pytest, kubeconfig, its bytes)."""
    from tests.fake_apiserver import fake_apiserver

    with fake_apiserver(script) as url:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
            f"clusters: [{{name: fake, cluster: {{server: '{url}'}}}}]\n"
            "users: [{name: u, user: {token: t}}]\ncontexts: [{name: fake, context: {cluster: fake, user: u}}]\n"
        )
        before = kubeconfig.read_bytes()
        proc = pytest_child(
            TRAPPING_PROBE,
            "--kubeconfig",
            str(kubeconfig),
            "--context",
            "fake",
            "--run-dir",
            str(tmp_path / "runs"),
            *args,
            env=env,
        )
    return proc, kubeconfig, before


def test_a_live_run_on_an_existing_cluster_cleans_up_and_its_recording_replays(
    pytest_run: PytestRun, tmp_path: Path
) -> None:
    """The whole live path, against the loopback stand-in API server (tests/fake_apiserver.py) playing a
    1.27 cluster whose kubelet ends a deleted pod in Succeeded: conftest's existing-cluster mode, namespace
    setup, the probe through LiveTransport + RecordingTransport, cleanup, records; then the recording it wrote
    replays offline and passes. What is stood in: the API server and, through its script, the kubelet."""
    script = _kubelet_ends_the_pod_in_succeeded("v1.27.3")
    proc, kubeconfig, before = _probe_existing_cluster(tmp_path, script)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
    assert kubeconfig.read_bytes() == before
    methods = [(m, p) for m, p, _, _ in script.requests]
    namespace = next(p for m, p in methods if m == "DELETE" and p.count("/") == 4).rsplit("/", 1)[-1]
    assert namespace.startswith("plp-pod-without-finalizer-trapping-sigterm-")
    assert len(namespace) <= 63
    assert namespace not in script.namespaces  # deleted, and gone when the run ended
    (run_dir,) = (tmp_path / "runs").iterdir()
    provenance = json.loads((run_dir / "run.json").read_text())
    assert provenance["cluster"] == "existing" and provenance["status"] == "passed"
    assert provenance["cleanup"][0]["namespace_deleted"] is True
    (recording,) = (run_dir / "recordings").iterdir()
    # the suite's commit, in the run record and the recording (empty without git), asked now as the child asked it:
    # this process's suite_version is what it first found, before any edit made while the tests run
    suite = checkout_version(SUITE_DIR)
    assert {k: provenance.get(k) for k in suite} == suite
    assert {k: json.loads(recording.read_text())["origin"].get(k) for k in suite} == suite
    replay = pytest_run(
        "probes/phase_after_deletion/test_phase_after_deletion.py",
        "--replay",
        str(recording),
        "--run-dir",
        str(tmp_path / "replay"),
        "-k",
        "test_pod_without_finalizer_trapping_sigterm",
    )
    assert replay.returncode == 0, replay.stdout
    assert "1 passed" in replay.stdout


def test_keep_leaves_a_failed_probes_namespace_for_a_look_and_the_summary_says_so(tmp_path: Path) -> None:
    """KEEP=1 (k/k's --delete-namespace-on-failure=false): a 1.26 server whose kubelet behaves like 1.27 fails the
    probe; its namespace and the pod in it stay, run.json lists it and the summary names it."""
    script = _kubelet_ends_the_pod_in_succeeded("v1.26.6")
    proc, _, _ = _probe_existing_cluster(tmp_path, script, env={**os.environ, "KEEP": "1"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert not [p for m, p, _, _ in script.requests if m == "DELETE" and p.count("/") == 4]  # no namespace deleted
    (namespace,) = script.namespaces
    (run_dir,) = (tmp_path / "runs").iterdir()
    provenance = json.loads((run_dir / "run.json").read_text())
    assert provenance["cleaned"]["namespaces_kept"] == [namespace] and provenance["cleaned"]["namespaces_left"] == []
    assert f"kept for a look (KEEP=1): namespace {namespace} of the failed probe" in proc.stdout
    assert "make clean" in proc.stdout


def test_pytest_xdist_workers_share_one_run_directory_and_the_summary_names_it(
    pytest_run: PytestRun, tmp_path: Path
) -> None:
    """`pytest -n 2` without --run-id (make test): one run directory, a run-<worker>.json per worker in it; with
    --repeat the controller says the spread from all the workers' records (make probe REPEAT=3 PARALLEL=auto).
    The 1.27 recordings of one probe (9): its 72 took the workers 0.2 s of CPU more to replay."""
    proc = pytest_run(
        "probes/phase_after_deletion/test_phase_after_deletion.py",
        "--replay",
        "probes/phase_after_deletion/recordings",
        "--run-dir",
        str(tmp_path / "runs"),
        "-k",
        "test_always_pod_trapping_sigterm and v1.27",
        "-n",
        "2",
        "--repeat",
        "2",  # replays are not repeated, but the spread over the workers' records is still said
    )
    assert proc.returncode == 0, proc.stdout
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert "spread of measured intervals (seconds):" in proc.stdout and (run_dir / "spread.json").is_file()
    assert sorted(p.name for p in run_dir.glob("run*.json")) == ["run-gw0.json", "run-gw1.json"]
    assert f"run records, recordings and evidence: {run_dir}" in proc.stdout
    records = list((run_dir / "probes").iterdir())
    assert len(records) > 1 and f"{len(records)} passed" in proc.stdout


def test_junit_xml_carries_each_claim_and_its_sources(pytest_run: PytestRun, tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    proc = pytest_run(
        "probes/phase_after_deletion/test_phase_after_deletion.py",
        "--replay",
        "probes/phase_after_deletion/recordings",
        "--run-dir",
        str(tmp_path / "runs"),
        "-k",
        "test_always_pod_ignoring_sigterm and v1.27.3 and not default",
        f"--junitxml={junit}",
    )
    assert proc.returncode == 0, proc.stdout
    xml = junit.read_text()
    assert '<property name="claim:always.sigterm-ignored.phases" value="pass"' in xml
    assert '<property name="source:always.sigterm-ignored.phases" value="document pod-phase-on-stop-1.27' in xml
    assert '<property name="server_version" value="v1.27.3"' in xml


WRITTEN_PROBES = """
import pytest

from harness.core.basis import Basis, Gap

pytestmark = pytest.mark.probe("phase_after_deletion")
READ = Basis.direct("a number written here")


class Watch:
    kind = "Pod"
    gaps = [Gap(1.0, None, 5.0, "watch expired (410 Gone)", frozenset({"u"}))]


DOWN = Watch()


def test_forgets_to_conclude(probe):
    probe.check("default-grace-period", 31, READ)  # fails, and the probe never calls probe.conclude()


def test_checks_nothing(probe):
    pass


def test_forgets_to_conclude_but_holds(probe):
    probe.check("default-grace-period", 30, READ)


def test_checks_after_concluding(probe):
    probe.check("default-grace-period", 30, READ)
    probe.conclude()
    probe.check("default-grace-period", 29, READ)


def test_left_undecided(probe):
    probe.check("always.sigterm-ignored.phases", ["Running"], Basis.during(DOWN, 0.0, 9.0, {"u"}))
    probe.conclude()


def test_observes_nothing(probe):
    probe.check_not_observable("container-stopped-on-node", "no access to the nodes")
    probe.conclude()


def test_leaves_a_call_unmade(probe):
    probe.check("default-grace-period", 30, READ)
    probe.conclude()
"""


WRITTEN = ("forgets_to_conclude", "checks_nothing", "forgets_to_conclude_but_holds", "checks_after_concluding")


def run_written_probes(
    pytest_run: PytestRun, tmp_path: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The probes above, each replaying a recording of only the server's version (v1.27.3), through conftest."""
    probes = tmp_path / "test_written.py"
    probes.write_text(WRITTEN_PROBES)
    recordings = tmp_path / "recordings"
    origin = {"kind": "written for a test", "namespace": "plp-test", "run_id": "test", "node_access": False}
    version = {"call": "server_version", "request": {}, "t_start": 0.0, "t_end": 0.01}
    unmade = {"call": "list_events", "request": {"namespace": "plp-test"}, "t_start": 1.0, "t_end": 1.1, "response": []}
    for name in (*WRITTEN, "left_undecided", "observes_nothing", "leaves_a_call_unmade"):
        steps = [
            {**version, "response": {"gitVersion": "v1.27.3"}},
            *([unmade] if name == "leaves_a_call_unmade" else []),
        ]
        Recording(f"test_written.py::test_{name}", origin, steps).write(recordings / f"{name}.json")
    options = ["--rootdir", str(REPO), "-c", str(REPO / "pyproject.toml"), "--replay", str(recordings)]
    options += ["--run-dir", str(tmp_path / "runs"), "-rA", *args]
    plugin = ["-p", "harness.doors.pytest_plugin"]
    proc = pytest_run(*plugin, str(probes), *options, env={"COLUMNS": "400"})  # summary lines unabridged
    return proc, tmp_path / "runs"


def test_a_probe_passes_only_on_concluded_claims(pytest_run: PytestRun, tmp_path: Path) -> None:
    """Verdicts a probe did not conclude are concluded by the harness; a probe that checked nothing fails."""
    proc, runs = run_written_probes(pytest_run, tmp_path, "-k", "not left_undecided and not observes and not unmade")
    assert proc.returncode == 1, proc.stdout
    assert "3 failed, 1 passed" in proc.stdout.splitlines()[-1]
    assert "PASSED ::test_forgets_to_conclude_but_holds[forgets_to_conclude_but_holds]" in proc.stdout
    failed = "FAILED ::test_forgets_to_conclude[forgets_to_conclude] - harness.core.probe.ClaimsFailed"
    assert f"{failed}: 1 of 1 claims failed" in proc.stdout
    assert "(concluded by the harness: the probe did not call probe.conclude() at its end)" in proc.stdout
    nothing = "FAILED ::test_checks_nothing[checks_nothing] - harness.core.probe.NoClaimChecked"
    assert f"{nothing}: the probe checked no claim" in proc.stdout
    late = "FAILED ::test_checks_after_concluding[checks_after_concluding] - harness.core.probe.ClaimsFailed"
    assert f"{late}: 1 of 2 claims failed" in proc.stdout
    (run_dir,) = runs.iterdir()
    record = json.loads((run_dir / "probes" / "test-forgets-to-conclude-forgets-to-conclude.json").read_text())
    assert record["outcome"] == "failed"  # the record says so too, not only pytest
    assert [v["status"] for v in record["verdicts"]] == ["fail"]


def test_an_undecided_probe_fails_apart_from_failed_ones(pytest_run: PytestRun, tmp_path: Path) -> None:
    """Undecided is never a pass, and it is never called failed: headline, summary, JUnit, record, run."""
    junit = tmp_path / "junit.xml"
    proc, runs = run_written_probes(pytest_run, tmp_path, "-k", "left_undecided", f"--junitxml={junit}")
    assert proc.returncode == 1, proc.stdout
    summary = proc.stdout.splitlines()[-1]
    assert "1 undecided" in summary and "failed" not in summary and "passed" not in summary
    undecided = "UNDECIDED ::test_left_undecided[left_undecided] - harness.core.probe.ClaimsUndecided"
    assert f"{undecided}: 1 of 1 claims undecided" in proc.stdout
    assert "always.sigterm-ignored.phases: undecided: a watch gap covered the transition" in proc.stdout
    xml = junit.read_text()
    assert '<property name="claim:always.sigterm-ignored.phases" value="undecided"' in xml
    assert '<property name="claims_undecided" value="1"' in xml and '<property name="claims_fail" value="0"' in xml
    (run_dir,) = runs.iterdir()
    record = json.loads((run_dir / "probes" / "test-left-undecided-left-undecided.json").read_text())
    assert record["outcome"] == "undecided" and record["claims"]["undecided"] == 1
    assert json.loads((run_dir / "run.json").read_text())["status"] == "undecided"


def test_a_probe_whose_every_claim_was_not_observable_fails_and_one_that_skipped_a_recorded_call_too(
    pytest_run: PytestRun, tmp_path: Path
) -> None:
    """Not observable is never a pass: with nothing else checked the probe fails (docs/verdicts.md). A replay
    that passed without making every recorded call fails: the probe no longer does what was recorded."""
    proc, runs = run_written_probes(pytest_run, tmp_path, "-k", "observes_nothing or leaves_a_call_unmade")
    assert proc.returncode == 1, proc.stdout
    summary = proc.stdout.splitlines()[-1]
    assert "1 failed" in summary and "1 error" in summary  # pytest also counts the unmade calls' call phase
    nothing = "FAILED ::test_observes_nothing[observes_nothing] - harness.core.probe.NothingObserved"
    assert f"{nothing}: the probe observed no claim: all 1 were not observable" in proc.stdout
    unmade = "ERROR ::test_leaves_a_call_unmade[leaves_a_call_unmade] - harness.core.transport_replay.RecordingMismatch"
    assert (
        f"{unmade}: the probe finished without making these recorded calls: [\"list_events(namespace='plp-test')\"]"
        in (proc.stdout)
    )
    (run_dir,) = runs.iterdir()
    record = json.loads((run_dir / "probes" / "test-observes-nothing-observes-nothing.json").read_text())
    assert record["outcome"] == "failed" and record["claims"]["not observable"] == 1
    record = json.loads((run_dir / "probes" / "test-leaves-a-call-unmade-leaves-a-call-unmade.json").read_text())
    assert record["outcome"] == "failed"  # its claim held, but the replay was not whole
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"
