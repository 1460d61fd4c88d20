"""harness/base/run.py: a run's record names the suite commit that made it, when the suite runs from its checkout."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.base.run import SUITE_DIR, Run, suite_version


def git(directory: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(directory), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    repo = tmp_path / "suite"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "file").write_text("one\n")
    git(repo, "add", "file")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "one")
    return repo


def test_the_suite_commit_and_whether_tracked_files_differ_from_it(checkout: Path) -> None:
    head = git(checkout, "rev-parse", "HEAD")
    assert suite_version(checkout) == {"suite_commit": head, "suite_modified": False}
    (checkout / "untracked").write_text("not the suite's")
    assert suite_version(checkout)["suite_modified"] is False  # only tracked files count
    (checkout / "file").write_text("two\n")
    assert suite_version(checkout) == {"suite_commit": head, "suite_modified": True}


def test_no_commit_is_named_outside_the_suites_own_checkout(checkout: Path, tmp_path: Path) -> None:
    inner = checkout / "installed" / "harness"  # a copy inside another repository is not that repository
    inner.mkdir(parents=True)
    assert suite_version(inner) == {}
    assert suite_version(tmp_path / "nowhere") == {}  # not a checkout, or git missing: nothing, not an error


def test_a_run_records_the_suite_commit_it_ran_with(tmp_path: Path) -> None:
    run = Run.start(tmp_path)
    recorded = json.loads((run.directory / "run.json").read_text())
    expected = suite_version(SUITE_DIR)
    assert {k: recorded.get(k) for k in ("suite_commit", "suite_modified") if k in expected} == expected
    assert run.suite() == expected
