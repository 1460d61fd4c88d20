"""make bisect (harness/axis/bisect.py): the binary search, skips, the candidates and how a run's outcome is read.

Stood in: the probe runs (a function answering good/bad/skip per version). Real: the search and the lists.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.axis.bisect import BAD, GOOD, SKIP, BisectError, bisect, outcome_of_run
from harness.axis.releases import bisect_patches
from harness.base.versions import Release, VersionError

VERSIONS = [f"1.27.{p}" for p in range(3, 17)]


def patches(good: str, bad: str, build: bool) -> list[str]:
    """bisect_patches on GOOD and BAD as make bisect's door reads them, by the names records give them."""
    return [str(r) for r in bisect_patches(Release.parse(good), Release.parse(bad), build)]


def changed_at(first_bad: str, skipped: frozenset[str] = frozenset()) -> tuple[list[str], Callable[[str], str]]:
    asked: list[str] = []

    def run(version: str) -> str:
        asked.append(version)
        if version in skipped:
            return SKIP
        return BAD if VERSIONS.index(version) >= VERSIONS.index(first_bad) else GOOD

    return asked, run


def test_bisect_finds_the_first_bad_patch_in_log2_runs() -> None:
    asked, run = changed_at("1.27.8")
    found = bisect(VERSIONS, run, say=lambda _: None)
    assert (found.last_good, found.first_bad) == ("1.27.7", "1.27.8")
    assert found.conclusion == "first bad: 1.27.8 (last good: 1.27.7)"
    assert len(asked) <= 2 + 4  # the two ends, then at most ceil(log2(14)) = 4


def test_skipped_versions_are_stepped_around_and_a_stretch_of_them_is_named() -> None:
    _, run = changed_at("1.27.8", frozenset({"1.27.7", "1.27.8", "1.27.9"}))
    found = bisect(VERSIONS, run, say=lambda _: None)
    assert found.results["1.27.8"] == SKIP
    assert found.first_bad == "1.27.10" and found.last_good == "1.27.6"
    assert found.conclusion.startswith("the change is in 1.27.7, 1.27.8, 1.27.9 or 1.27.10")


def test_ends_that_do_not_behave_as_good_and_bad_stop_the_bisection() -> None:
    _, run = changed_at("1.27.3")  # already bad at the start
    with pytest.raises(BisectError, match=r"1\.27\.3 was bad, not good"):
        bisect(VERSIONS, run, say=lambda _: None)


def test_candidates_are_the_pinned_patches_or_every_patch_to_build() -> None:
    pinned = patches("1.27.3", "1.27.16", build=False)
    assert pinned[0] == "1.27.3" and pinned[-1] == "1.27.16" and "1.27.10" in pinned and "1.27.5" not in pinned
    assert patches("1.27.3", "1.27.6", build=True) == ["1.27.3", "1.27.4", "1.27.5", "1.27.6"]
    with pytest.raises(VersionError, match="one minor"):
        patches("1.26.6", "1.27.3", build=False)
    with pytest.raises(VersionError, match="earlier release"):
        patches("1.27.10", "1.27.3", build=False)
    with pytest.raises(VersionError, match=r"no pinned node image for 1\.27\.5"):
        patches("1.27.3", "1.27.5", build=False)


def test_a_run_that_could_not_decide_is_a_skip(tmp_path: Path) -> None:
    record = tmp_path / "run.json"
    assert outcome_of_run(0, record) == GOOD
    assert outcome_of_run(1, record) == BAD  # probes failed, the cluster was fine
    record.write_text(json.dumps({"cluster_error": "kind could not create cluster"}))
    assert outcome_of_run(1, record) == SKIP
    record.write_text(json.dumps({"status": "undecided"}))  # only undecided claims: neither good nor bad
    assert outcome_of_run(1, record) == SKIP
    assert outcome_of_run(3, tmp_path / "none.json") == SKIP  # Docker or kind missing


def test_the_bisect_command_refuses_bad_input_and_stops_when_the_ends_cannot_decide(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m harness bisect` without Docker on PATH: every run is a skip, so GOOD cannot be shown good. The ends
    of two minors are refused through the same CLI in this process (a child took 0.15-0.2 s of CPU to say so)."""
    import subprocess
    import sys

    from harness.doors import cli

    repo = Path(__file__).resolve().parent.parent
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}

    def bisect_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "harness", "bisect", "--probe", "trapping", *args, "--run-dir", str(tmp_path)],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    mixed = ["bisect", "--probe", "trapping", "--good", "1.26.6", "--bad", "1.27.3", "--run-dir", str(tmp_path)]
    assert cli.main(mixed) == 2 and "one minor" in capsys.readouterr().err
    undecided = bisect_cli("--good", "1.27.3", "--bad", "1.27.16")
    assert undecided.returncode == 1
    assert "1.27.3 was skip, not good" in undecided.stderr
