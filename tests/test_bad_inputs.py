"""Every bad input is refused through the real entry points: non-zero exit, one `error:` line that names the
problem (and, for the harness, the class of failure its --help documents), no traceback, nothing slow started.

Most rows call `harness.cli.main([...])` in this process, with everything slow or outward replaced by a
stand-in that fails the test if it is reached (Docker and kind checks, kind's download, cluster creation,
Kubernetes and node-image builds, the matrix and bisect runners, the janitor, pytest's exec): a refusal must
come before all of them. A few rows run `python -m harness`, `make` or `pytest` in a child process, to show
that the real command prints no traceback; `make` and `python -m harness` run with stand-ins for kind and
docker on PATH (tests/fake_tools.py) that log every call, and the log must stay empty.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness import bisect as bisect_module
from harness import cli, janitor, lifecycle, matrix
from harness import report as report_module
from harness.commands import housekeeping, refusal, version_axis
from harness.commands import probe as probe_command
from harness.families import recording_path
from harness.local import host as local_host
from harness.local import teardown as local_teardown
from harness.nodeimage import release as node_image_release
from tests import fake_tools

REPO = Path(__file__).resolve().parent.parent
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: kind-mine, context: {cluster: c, user: u}}]
current-context: kind-mine
"""
RECORD = (
    '{"probe": "p.py::test_p", "family": "phase_after_deletion", "server_version": "v1.27.3", "verdicts": '
    '[{"claim": "default-grace-period", "status": "pass", "observed": 30}]}'
)
RECORDING = recording_path("phase_after_deletion/always_pod_trapping_sigterm--v1.27.3-live-local.json")  # only read


@dataclass(frozen=True)
class Bad:
    """One bad input: the arguments ({tmp} is the test's directory), the exit code, what the error says."""

    argv: tuple[str, ...]
    code: int
    says: str
    env: dict[str, str] = field(default_factory=dict)


# python -m harness ... ({tmp}: files the fixture below writes: kubeconfig, binary, notakubeconfig, file, runs/)
HARNESS: dict[str, Bad] = {
    # probe: the existing-cluster options
    "kubeconfig-hostname": Bad(("probe", "--kubeconfig", "/etc/hostname", "--context", "x"), 2, "is not a kubeconfig"),
    "kubeconfig-passwd": Bad(("probe", "--kubeconfig", "/etc/passwd", "--context", "x"), 2, "is not a kubeconfig"),
    "kubeconfig-other-yaml": Bad(
        ("probe", "--kubeconfig", "{tmp}/notakubeconfig", "--context", "x"), 2, "is not a kubeconfig"
    ),
    "kubeconfig-binary": Bad(("probe", "--kubeconfig", "{tmp}/binary", "--context", "x"), 2, "not a text file"),
    "kubeconfig-missing": Bad(("probe", "--kubeconfig", "{tmp}/missing", "--context", "x"), 2, "missing not found"),
    "kubeconfig-directory": Bad(("probe", "--kubeconfig", "{tmp}", "--context", "x"), 2, "is a directory"),
    "kubeconfig-no-context": Bad(("probe", "--kubeconfig", "{tmp}/kubeconfig"), 2, "needs an explicit --context"),
    "kubeconfig-unknown-context": Bad(
        ("probe", "--kubeconfig", "{tmp}/kubeconfig", "--context", "prod"), 2, "it has: kind-mine"
    ),
    "context-without-kubeconfig": Bad(("probe", "--context", "x"), 2, "--kubeconfig (KUBECONFIG_FILE), which is not"),
    "kubeconfig-and-version": Bad(
        ("probe", "--kubeconfig", "{tmp}/kubeconfig", "--context", "kind-mine", "--version", "1.27"),
        2,
        "give one or the other",
    ),
    "kubeconfig-and-parallel": Bad(
        ("probe", "--kubeconfig", "{tmp}/kubeconfig", "--context", "kind-mine", "--parallel", "2"),
        2,
        "PARALLEL runs the probes on a cluster make probe creates",
    ),
    # probe: versions and images
    "no-version": Bad(("probe", "--version", ""), 2, "no VERSION given; known versions: 1.19"),
    "unknown-version": Bad(("probe", "--version", "9.99"), 2, "no pinned node image for Kubernetes 9.99"),
    "malformed-version": Bad(("probe", "--version", "latest"), 2, "not a Kubernetes version: 'latest'"),
    "not-a-node-image": Bad(("probe", "--image", "alpine:3.18.4"), 2, "not a node image reference"),
    "unknown-cluster-kind": Bad(("probe", "--cluster", "k3d"), 2, "argument --cluster: invalid choice: 'k3d'"),
    # probe: counts
    "parallel-zero": Bad(("probe", "--version", "1.27", "--parallel", "0"), 2, "PARALLEL must be a whole number"),
    "parallel-negative": Bad(("probe", "--version", "1.27", "--parallel", "-2"), 2, "not '-2'"),
    "repeat-zero": Bad(("probe", "--version", "1.27", "--repeat", "0"), 2, "REPEAT must be a whole number"),
    "repeat-word": Bad(("probe", "--version", "1.27", "--repeat", "many"), 2, "not 'many'"),
    # probe: selection and run directory
    "probe-matches-nothing": Bad(
        ("probe", "--version", "1.27", "--probe", "doesnotexist"), 5, "matches none of the 28 probes"
    ),
    "probe-not-an-expression": Bad(("probe", "--version", "1.27", "--probe", "and"), 2, "Wrong expression passed"),
    "restart-apiserver-on-kind": Bad(
        ("probe", "--version", "1.27", "--restart-apiserver-after", "10"), 2, "of a local cluster the suite makes"
    ),
    "restart-apiserver-not-seconds": Bad(
        ("probe", "--version", "1.27.3", "--cluster", "local", "--restart-apiserver-after", "soon"),
        2,
        "RESTART_APISERVER_AFTER must be a number of seconds above 0, not 'soon'",
    ),
    "run-dir-not-writable": Bad(("probe", "--version", "1.27", "--run-dir", "{tmp}/file/runs"), 2, "is not writable"),
    # probe --cluster local (tests/test_local.py has these too): refused before the host check and the build
    "local-minor-only": Bad(("probe", "--cluster", "local", "--version", "1.27"), 2, "give a full Kubernetes release"),
    "local-no-version": Bad(("probe", "--cluster", "local"), 2, "no VERSION given: a local cluster is built"),
    "local-with-image": Bad(
        ("probe", "--cluster", "local", "--version", "1.27.3", "--image", "kindest/node:v1.27.3"),
        2,
        "IMAGE is a kind node image",
    ),
    "local-and-kubeconfig": Bad(
        ("probe", "--cluster", "local", "--kubeconfig", "{tmp}/kubeconfig", "--context", "kind-mine"),
        2,
        "give one or the other",
    ),
    # matrix
    "matrix-jobs-zero": Bad(("matrix", "--jobs", "0"), 2, "JOBS must be a whole number of 1 or more, not '0'"),
    "matrix-jobs-word": Bad(("matrix", "--jobs", "two"), 2, "not 'two'"),
    "matrix-unknown-version": Bad(("matrix", "--versions", "1.26 9.9"), 2, "no pinned node image for Kubernetes 9.9"),
    # report
    "report-path-missing": Bad(("report", "/nonexistent"), 2, "nothing to report from /nonexistent"),
    "report-nothing-there": Bad(("report", "{tmp}/runs"), 5, "no run records: looked for probe records"),
    "report-not-a-record": Bad(("report", "/etc/passwd"), 2, "/etc/passwd is not a probe record"),
    "report-a-recording": Bad(("report", str(RECORDING)), 2, "is a recording, not a probe record"),
    "report-no-runs": Bad(("report",), 2, "the following arguments are required: runs"),
    "report-out-not-writable": Bad(
        ("report", "{tmp}/record.json", "--out", "{tmp}/file/report"), 2, "the report directory"
    ),
    # bisect
    "bisect-no-bad": Bad(("bisect", "--probe", "trapping", "--good", "1.27.3", "--bad", ""), 2, "BAD (--bad) is"),
    "bisect-no-probe-no-good": Bad(
        ("bisect", "--probe", "", "--good", "", "--bad", "1.27.16"), 2, "PROBE (--probe) and GOOD (--good) are missing"
    ),
    "bisect-two-minors": Bad(("bisect", "--probe", "x", "--good", "1.26.6", "--bad", "1.27.3"), 2, "one minor"),
    "bisect-reversed": Bad(("bisect", "--probe", "x", "--good", "1.27.16", "--bad", "1.27.3"), 2, "must be an earlier"),
    "bisect-unpinned-end": Bad(
        ("bisect", "--probe", "x", "--good", "1.27.4", "--bad", "1.27.16"), 2, "no pinned node image for 1.27.4"
    ),
    "bisect-probe-matches-nothing": Bad(
        ("bisect", "--probe", "doesnotexist", "--good", "1.27.3", "--bad", "1.27.16"), 5, "matches none"
    ),
    # node-image
    "node-image-no-version": Bad(("node-image", "--version", ""), 2, "VERSION (--version) is missing"),
    "node-image-minor-only": Bad(("node-image", "--version", "1.27"), 2, "give a full release version"),
    "node-image-malformed": Bad(("node-image", "--version", "latest"), 2, "not a Kubernetes version"),
    # clean
    "clean-kubeconfig-hostname": Bad(
        ("clean", "--kubeconfig", "/etc/hostname", "--context", "x"), 2, "is not a kubeconfig"
    ),
    "clean-kubeconfig-missing": Bad(("clean", "--kubeconfig", "{tmp}/missing", "--context", "x"), 2, "not found"),
    "clean-context-without-kubeconfig": Bad(("clean", "--context", "x"), 2, "which is not given"),
}

# pytest probes ... (plain pytest, docs/running-probes.md): pytest's usage errors, exit 4
PYTEST: dict[str, Bad] = {
    "pytest-repeat-zero": Bad(("--repeat", "0"), 4, "argument --repeat: REPEAT must be a whole number of 1 or more"),
    "pytest-REPEAT-word": Bad(
        (), 4, "--repeat (REPEAT) must be a whole number of 1 or more, not 'abc'", {"REPEAT": "abc"}
    ),
    "pytest-replay-missing": Bad(("--replay", "/nonexistent"), 4, "--replay /nonexistent: no such file"),
    "pytest-replay-not-a-recording": Bad(("--replay", "/etc/hostname"), 4, "/etc/hostname is not a recording"),
    "pytest-kubeconfig-passwd": Bad(("--kubeconfig", "/etc/passwd", "--context", "x"), 4, "is not a kubeconfig"),
    "pytest-context-alone": Bad(("--context", "x"), 4, "--context (CONTEXT) names a context of --kubeconfig"),
    "pytest-local-minor": Bad(("--local-version", "1.27"), 4, "give a full Kubernetes release"),
    "pytest-restart-without-local": Bad(("--restart-apiserver-after", "5"), 4, "give CLUSTER=local (--local-version)"),
    "pytest-replay-and-kind": Bad(("--replay", "probes", "--kind-version", "1.27"), 4, "cannot be combined"),
    "pytest-kubeconfig-no-context": Bad(("--kubeconfig", "/etc/passwd"), 4, "needs an explicit --context"),
}

# make ... (the documented commands; make's own exit code is 2 for all, so the line must say the class)
MAKE: dict[str, Bad] = {
    "make-probe-kubeconfig-hostname": Bad(
        ("probe", "KUBECONFIG_FILE=/etc/hostname", "CONTEXT=x"), 2, "error: bad input: /etc/hostname is not a"
    ),
    "make-clean-kubeconfig-passwd": Bad(
        ("clean", "KUBECONFIG_FILE=/etc/passwd", "CONTEXT=x"), 2, "error: bad input: /etc/passwd is not a"
    ),
    "make-bisect-without-bad": Bad(
        ("bisect", "PROBE=trapping", "GOOD=1.27.3"), 2, "error: bad input: BAD (--bad) is missing"
    ),
    "make-node-image-without-version": Bad(("node-image",), 2, "error: bad input: VERSION (--version) is missing"),
    "make-report-nonexistent": Bad(("report", "RUNS=/nonexistent"), 2, "error: bad input: nothing to report from"),
    "make-probe-unknown-probe": Bad(
        ("probe", "VERSION=1.27", "PROBE=doesnotexist"), 2, "error: nothing to run: PROBE 'doesnotexist'"
    ),
}

# python -m harness in a child process: the real entry point, a few of the rows above
SUBPROCESS = [
    "kubeconfig-binary",
    "report-nothing-there",
    "probe-matches-nothing",
    "repeat-word",
    "clean-kubeconfig-missing",
]


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    """The files the rows name: a kubeconfig, a binary, YAML that is not a kubeconfig, a plain file, a record."""
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    (tmp_path / "binary").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "notakubeconfig").write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n")
    (tmp_path / "file").write_text("a file, not a directory")
    (tmp_path / "runs").mkdir()
    (tmp_path / "record.json").write_text(RECORD)
    return tmp_path


def expand(argv: tuple[str, ...], tmp: Path) -> list[str]:
    return [a.replace("{tmp}", str(tmp)) for a in argv]


def forbid(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace every slow or outward step with a stand-in that fails the test; returns the steps reached."""
    reached: list[str] = []

    def stand_in(name: str) -> Callable[..., Any]:
        def reach(*args: Any, **kwargs: Any) -> Any:
            reached.append(name)
            pytest.fail(f"a refused input reached {name}")

        return reach

    for owner, names in (
        (probe_command, ["check_docker", "ensure_kind", "check_prerequisites", "build_kubernetes", "check_go"]),
        (probe_command, ["resolve_module", "run_parallel", "prepare_local", "prepare_kind"]),
        (lifecycle, ["cluster_life"]),  # the probe command imports it when it makes a cluster
        (housekeeping, ["check_docker", "ensure_kind", "check_go", "resolve_module", "build_node_images"]),
        (version_axis, ["check_go", "resolve_module", "build_kubernetes"]),
        (os, ["execv"]),
        (local_host, ["check_host"]),
        (local_teardown, ["running_clusters"]),
        (node_image_release, ["build_node_image", "build_kind_release"]),
        (matrix, ["run_matrix", "run_version_process"]),
        (bisect_module, ["bisect"]),
        (janitor, ["clean_kind_clusters", "clean_local_clusters", "clean_namespaces"]),
        (report_module, ["write_matrix"]),
    ):
        for name in names:
            monkeypatch.setattr(owner, name, stand_in(f"{getattr(owner, '__name__', owner)}.{name}"))
    return reached


def assert_refused(code: int, expected: Bad, out: str, err: str) -> None:
    """The exit code, an `error: <class>:` line whose class has that code in --help, the problem, no traceback."""
    assert code == expected.code, err
    assert "Traceback" not in out + err
    (line,) = [line for line in err.splitlines() if line.startswith("error: ")]
    kind = next((k for k in refusal.EXIT_CODE if line.startswith(f"error: {k}: ")), None)
    assert kind is not None, f"the error line does not say its class: {line}"
    assert refusal.EXIT_CODE[kind] == code
    assert expected.says in err, err


@pytest.mark.parametrize("name", sorted(HARNESS))
def test_python_m_harness_refuses(
    name: str, tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = HARNESS[name]
    reached = forbid(monkeypatch)
    monkeypatch.chdir(tmp)  # a default run or report directory would be made here, not in the checkout
    try:
        code = cli.main(expand(expected.argv, tmp))
    except SystemExit as exit_:  # argparse's refusal
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    assert_refused(code, expected, out, err)
    assert reached == []


def test_every_refusal_class_and_its_exit_code_is_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ([], ["probe"], ["report"], ["bisect"], ["matrix"], ["node-image"], ["clean"]):
        with pytest.raises(SystemExit):
            cli.main([*command, "--help"])
        text = capsys.readouterr().out
        for kind, code in refusal.EXIT_CODE.items():
            assert re.search(rf"^  {code}  .*{kind}", text, re.M), (command, kind)
    assert {b.code for b in HARNESS.values()} <= set(refusal.EXIT_CODE.values())


def _child(argv: list[str], tmp: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], list[Any]]:
    """A command with stand-ins for kind and docker first on PATH; returns it and what they were asked."""
    log = tmp / "calls.log"
    fake_tools.install(tmp / "bin", log, "https://127.0.0.1:9", [])
    proc = subprocess.run(
        argv,
        cwd=REPO,
        env={**os.environ, "PATH": f"{tmp / 'bin'}:{os.environ['PATH']}", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc, fake_tools.calls(log)


@pytest.mark.parametrize("name", SUBPROCESS)
def test_the_real_entry_point_refuses_without_a_traceback(name: str, tmp: Path) -> None:
    proc, calls = _child([sys.executable, "-m", "harness", *expand(HARNESS[name].argv, tmp)], tmp, {})
    assert_refused(proc.returncode, HARNESS[name], proc.stdout, proc.stderr)
    assert calls == []  # kind and docker never asked: nothing started


@pytest.mark.parametrize("name", sorted(PYTEST))
def test_plain_pytest_refuses_bad_options(name: str, tmp_path: Path) -> None:
    expected = PYTEST[name]
    argv = [sys.executable, "-m", "pytest", "probes", "-p", "no:cacheprovider", "--collect-only", "-q"]
    proc, _ = _child([*argv, *expected.argv, "--run-dir", str(tmp_path / "runs")], tmp_path, expected.env)
    assert proc.returncode == expected.code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert re.search(r"(?i)\berror: ", proc.stderr)
    assert expected.says in proc.stderr, proc.stderr


@pytest.mark.parametrize("name", sorted(MAKE))
def test_make_refuses_and_says_which_class_of_failure(name: str, tmp_path: Path) -> None:
    expected = MAKE[name]
    make = ["make", "--no-print-directory", "STAMP=", f"PY={sys.executable}", f"RUNS={tmp_path / 'nothing'}"]
    proc, calls = _child([*make, *expected.argv], tmp_path, expected.env)
    assert proc.returncode == expected.code, proc.stdout + proc.stderr  # make's own 2 for every failure
    assert "Traceback" not in proc.stdout + proc.stderr
    assert expected.says in proc.stderr, proc.stderr
    assert calls == []


def test_at_least_25_distinct_bad_inputs_are_covered() -> None:
    inputs = {b.argv for b in HARNESS.values()} | {(*b.argv, *b.env.items()) for b in PYTEST.values()}
    assert len(inputs) + len(MAKE) >= 25
