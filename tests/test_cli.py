"""`make probe` on bad input and on a host without Docker/kind: fails in seconds, says why, exits non-zero.

The checks of the host run the real entry point (`python -m harness probe`, `make probe`) in a child process
with PATH emptied of docker and kind, which is the honest version of "a laptop without Docker". Refusals of
bad input call `harness.doors.cli.main` in this process, with the same empty PATH: a child process adds nothing
there (tests/test_bad_inputs.py runs a few of them through the real entry point too).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.doors import cli
from tests.pytest_here import harness_here

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args: str, path: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "PATH": path}
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "harness", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    return proc, time.monotonic() - started


@pytest.fixture
def main(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., tuple[int, str]]:
    """`python -m harness ARGS` in this process, with no docker or kind on PATH: its exit code and stderr."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.chdir(tmp_path)

    def call(*args: str) -> tuple[int, str]:
        done = harness_here(*args, capsys=capsys)
        return done.returncode, done.stderr

    return call


def test_without_docker_and_kind_probe_fails_in_seconds_naming_both(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    """Nothing slow can have started: with neither on PATH no cluster can be made. The time is a figure (a JUnit
    property), not a pass/fail bound, which a loaded machine would move."""
    proc, took = run_cli("probe", "--version", "1.27", path=str(tmp_path))
    record_property("refusal_s", round(took, 2))
    assert proc.returncode == 3
    assert "docker is not on PATH" in proc.stderr
    assert "kind is not on PATH" in proc.stderr


def test_unknown_version_exits_non_zero_and_lists_the_known_ones(main: Callable[..., tuple[int, str]]) -> None:
    code, stderr = main("probe", "--version", "9.99")
    assert code == 2
    assert "no pinned node image for Kubernetes 9.99" in stderr
    assert "1.26 (" in stderr and "1.27 (" in stderr


def test_malformed_version_and_non_node_image_exit_non_zero(main: Callable[..., tuple[int, str]]) -> None:
    assert main("probe", "--version", "latest")[0] == 2
    code, stderr = main("probe", "--image", "alpine:3.18.4")
    assert code == 2
    assert "not a node image reference" in stderr


def test_make_probe_without_docker_and_kind_fails_through_the_makefile(tmp_path: Path) -> None:
    """The README's command itself; STAMP= skips the install step (the venv running this test is used)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    make = subprocess.run(["sh", "-c", "command -v make"], capture_output=True, text=True, check=True).stdout.strip()
    (bin_dir / "make").symlink_to(make)  # only make is on PATH: no docker, no kind
    proc = subprocess.run(
        ["make", "--no-print-directory", "probe", "VERSION=1.27", "STAMP=", f"PY={sys.executable}"],
        cwd=REPO,
        env={**os.environ, "PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode != 0
    assert "docker is not on PATH" in proc.stderr
    assert "kind is not on PATH" in proc.stderr


def test_matrix_without_docker_is_refused_once_before_any_version_starts(tmp_path: Path) -> None:
    """Without Docker, a kind matrix is refused once; it used to print one "prerequisite missing" row per
    version (19 for every minor), each after starting."""
    proc, _ = run_cli(
        "matrix", "--versions", "1.26 1.27", "--jobs", "2", "--run-dir", str(tmp_path), path=str(tmp_path)
    )
    assert proc.returncode == 3
    (line,) = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert line.startswith("error: prerequisite missing: live probes need Docker: docker is not on PATH")
    assert line.endswith("(every version of the matrix needs it)")
    assert not list(tmp_path.glob("matrix-*"))


def test_matrix_refuses_an_unknown_version_before_starting_anything(tmp_path: Path) -> None:
    proc, _ = run_cli("matrix", "--versions", "1.26 9.9", "--run-dir", str(tmp_path), path=str(tmp_path))
    assert proc.returncode == 2
    assert "no pinned node image for Kubernetes 9.9" in proc.stderr
    assert not list(tmp_path.glob("matrix-*"))


KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: kind-mine, context: {cluster: c, user: u}}]
current-context: kind-mine
"""


def test_an_existing_cluster_needs_an_explicit_context(tmp_path: Path, main: Callable[..., tuple[int, str]]) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(KUBECONFIG)
    code, stderr = main("probe", "--kubeconfig", str(kubeconfig))
    assert code == 2
    assert "--kubeconfig needs an explicit --context" in stderr
    code, stderr = main("probe", "--kubeconfig", str(kubeconfig), "--context", "prod")
    assert code == 2
    assert "context 'prod' is not in" in stderr and "it has: kind-mine" in stderr
    assert kubeconfig.read_text() == KUBECONFIG  # only read, never written


def test_a_missing_kubeconfig_is_not_found_not_invalid(tmp_path: Path, main: Callable[..., tuple[int, str]]) -> None:
    code, stderr = main("probe", "--kubeconfig", str(tmp_path / "missing"), "--context", "x")
    assert code == 2
    assert f"error: bad input: kubeconfig {tmp_path / 'missing'} not found" in stderr


def test_an_image_without_digest_is_warned_about(main: Callable[..., tuple[int, str]]) -> None:
    """In this process (the real entry point's refusal without Docker is the test above's): a child took 0.2 s of
    CPU to say the same lines."""
    code, stderr = main("probe", "--image", "kindest/node:v1.27.3")
    assert "is not pinned by digest" in stderr
    assert code == 3  # and then stops: no Docker here


def test_the_second_pytest_run_of_parallel_mode_writes_its_own_junit_file() -> None:
    from harness.doors.commands.probe import _own_junit

    argv = ["python", "-m", "pytest", "--junitxml=runs/junit-1.27.xml", "-k", "x"]
    assert _own_junit(argv, "shutdown") == [
        "python",
        "-m",
        "pytest",
        "--junitxml=runs/junit-1.27-shutdown.xml",
        "-k",
        "x",
    ]


def test_the_probe_run_says_its_repeat_so_a_repeat_in_the_environment_is_not_read_instead() -> None:
    """make exports its command line: `make bisect REPEAT=3` runs `python -m harness probe` with REPEAT=3 in its
    environment, which the plugin would read when pytest is given no --repeat (each release's run repeated 3 times)."""
    from harness.doors.commands.probe import pytest_argv

    args = cli.parse_args(["probe", "--version", "1.27.3", "--cluster", "local"])
    argv = pytest_argv(args)
    assert argv[argv.index("--repeat") + 1] == "1"
