"""`make probe` on bad input and on a host without Docker/kind: fails in seconds, says why, exits non-zero.

These run the real entry point (`python -m harness probe`) in a child process with PATH emptied of
docker and kind, which is the honest version of "a laptop without Docker".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args: str, path: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "PATH": path}
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "harness", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    return proc, time.monotonic() - started


def test_without_docker_and_kind_probe_fails_in_seconds_naming_both(tmp_path: Path) -> None:
    proc, took = run_cli("probe", "--version", "1.27", path=str(tmp_path))
    assert proc.returncode == 3
    assert "docker is not on PATH" in proc.stderr
    assert "kind is not on PATH" in proc.stderr
    assert took < 10


def test_unknown_version_exits_non_zero_and_lists_the_known_ones(tmp_path: Path) -> None:
    proc, _ = run_cli("probe", "--version", "9.99", path=str(tmp_path))
    assert proc.returncode == 2
    assert "no pinned node image for Kubernetes 9.99" in proc.stderr
    assert "1.26 (" in proc.stderr and "1.27 (" in proc.stderr


def test_malformed_version_and_non_node_image_exit_non_zero(tmp_path: Path) -> None:
    assert run_cli("probe", "--version", "latest", path=str(tmp_path))[0].returncode == 2
    proc, _ = run_cli("probe", "--image", "alpine:3.18.4", path=str(tmp_path))
    assert proc.returncode == 2
    assert "not a node image reference" in proc.stderr


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
        timeout=60,
    )
    assert proc.returncode != 0
    assert "docker is not on PATH" in proc.stderr
    assert "kind is not on PATH" in proc.stderr


def test_matrix_reports_each_version_and_fails_without_docker(tmp_path: Path) -> None:
    proc, _ = run_cli(
        "matrix", "--versions", "1.26 1.27", "--jobs", "2", "--run-dir", str(tmp_path), path=str(tmp_path)
    )
    assert proc.returncode == 1
    assert "1.26       prerequisite missing" in proc.stdout
    assert "1.27       prerequisite missing" in proc.stdout
    (record,) = tmp_path.glob("matrix-*/matrix.json")
    assert [r["exit_code"] for r in json.loads(record.read_text())] == [3, 3]


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


def test_an_existing_cluster_needs_an_explicit_context(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(KUBECONFIG)
    proc, _ = run_cli("probe", "--kubeconfig", str(kubeconfig), path=str(tmp_path))
    assert proc.returncode == 2
    assert "--kubeconfig needs an explicit --context" in proc.stderr
    proc, _ = run_cli("probe", "--kubeconfig", str(kubeconfig), "--context", "prod", path=str(tmp_path))
    assert proc.returncode == 2
    assert "context 'prod' is not in" in proc.stderr and "it has: kind-mine" in proc.stderr
    assert kubeconfig.read_text() == KUBECONFIG  # only read, never written


def test_a_missing_kubeconfig_is_not_found_not_invalid(tmp_path: Path) -> None:
    proc, _ = run_cli("probe", "--kubeconfig", str(tmp_path / "missing"), "--context", "x", path=str(tmp_path))
    assert proc.returncode == 2
    assert f"error: bad input: kubeconfig {tmp_path / 'missing'} not found" in proc.stderr


def test_an_image_without_digest_is_warned_about(tmp_path: Path) -> None:
    proc, _ = run_cli("probe", "--image", "kindest/node:v1.27.3", path=str(tmp_path))
    assert "is not pinned by digest" in proc.stderr
    assert proc.returncode == 3  # and then stops: no Docker here


def test_the_second_pytest_run_of_parallel_mode_writes_its_own_junit_file() -> None:
    from harness.cli import _own_junit

    argv = ["python", "-m", "pytest", "--junitxml=runs/junit-1.27.xml", "-k", "x"]
    assert _own_junit(argv, "shutdown") == [
        "python",
        "-m",
        "pytest",
        "--junitxml=runs/junit-1.27-shutdown.xml",
        "-k",
        "x",
    ]
