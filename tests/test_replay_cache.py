"""A replay of unchanged inputs answered from PLP_REPLAY_CACHE (harness/axis/replay.py): the same records and answer
as the replay that made it, without a child; any byte of a recording changed replays again."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.axis import replay as replay_module
from harness.base import paths

RECORDING = paths.REPO / "probes/active_deadline/recordings/job_deadline--v1.21.14-live-local.json"


def verdicts(records: list[dict[str, Any]]) -> list[tuple[str, str, Any]]:
    return sorted((v["claim"], v["status"], v["observed"]) for r in records for v in r["verdicts"])


def test_unchanged_inputs_are_answered_from_the_cache_and_a_changed_recording_replays_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    shutil.copy(RECORDING, recordings)
    monkeypatch.setenv(replay_module.CACHE_VARIABLE, str(tmp_path / "cache"))
    children: list[list[str]] = []
    run = subprocess.run

    def counted(command: list[str], **kwargs: Any) -> Any:
        if "harness.axis.replay" in command:
            children.append(command)
        return run(command, **kwargs)

    monkeypatch.setattr(subprocess, "run", counted)
    first = replay_module.replay(tmp_path / "first", recordings)
    second = replay_module.replay(tmp_path / "second", recordings)
    assert len(children) == 1 and first.exit_code == second.exit_code == 0
    assert verdicts(first.records) and verdicts(second.records) == verdicts(first.records)
    assert (first.kind_only, first.collected) == (second.kind_only, second.collected)
    assert sorted(p.name for p in (tmp_path / "second").glob("*/probes/*.json")) == sorted(
        p.name for p in (tmp_path / "first").glob("*/probes/*.json")
    )
    copy = recordings / RECORDING.name
    copy.write_text(copy.read_text() + "\n")  # one byte more: another key
    replay_module.replay(tmp_path / "third", recordings)
    assert len(children) == 2
    assert len([d for d in (tmp_path / "cache").iterdir() if d.is_dir()]) == 1  # the last replay only is kept


def test_without_the_variable_or_when_shown_every_replay_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(replay_module.CACHE_VARIABLE, raising=False)
    ran: list[Path] = []
    monkeypatch.setattr(replay_module, "_replayed", lambda run_dir, argv, shown, timeout: ran.append(run_dir))
    replay_module.replay(tmp_path / "a")
    monkeypatch.setenv(replay_module.CACHE_VARIABLE, str(tmp_path / "cache"))
    replay_module.replay(tmp_path / "b", shown=True)
    assert ran == [tmp_path / "a", tmp_path / "b"] and not (tmp_path / "cache").exists()
