"""make runtimes: a release's kind recordings grouped by the runtime their origin names, set side by side."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.axis import runtimes
from harness.axis.compare import Verdicts

REPO = Path(__file__).resolve().parent.parent


def test_a_recording_names_its_runtime_or_ran_on_the_debian_image() -> None:
    kind_parts = {"containerd": "v1.7.18 (built here from github.com/containerd/containerd with go1.22.9)"}
    kind_parts["runc"] = "v1.1.13 (built here from github.com/opencontainers/runc with go1.22.9)"
    assert runtimes.runtime_of(kind_parts) == "containerd v1.7.18, runc v1.1.13"
    assert runtimes.runtime_of({"node_image": "plp-node:v1.36.4"}) == runtimes.DEBIAN
    assert runtimes.column_head(runtimes.DEBIAN) == "1.6.20 (Debian)"


def test_recordings_are_grouped_by_runtime_for_one_release_only(tmp_path: Path) -> None:
    recordings = tmp_path / "family" / "recordings"
    recordings.mkdir(parents=True)
    for name, origin in (
        ("a--v1.27.16-live-kind.json", {"containerd": "v1.7.18 (x)"}),
        ("a--v1.27.16-live-kind-2.json", {}),
        ("a--v1.27.16-live-local.json", {"containerd": "v1.6.20"}),
        ("a--v1.27.1-live-kind.json", {}),
    ):
        (recordings / name).write_text(json.dumps({"origin": origin}))
    groups = runtimes.grouped("1.27.16", tmp_path)
    assert {k: [p.name for p in v] for k, v in groups.items()} == {
        "containerd v1.7.18": ["a--v1.27.16-live-kind.json"],
        runtimes.DEBIAN: ["a--v1.27.16-live-kind-2.json"],
    }


def _verdict(status: str, observed: object) -> dict[str, object]:
    return {"status": status, "observed": observed}


def test_claims_are_set_side_by_side_and_a_difference_is_marked(tmp_path: Path) -> None:
    recordings = tmp_path / "family" / "recordings"
    recordings.mkdir(parents=True)
    runs = {"old": {}, "new": {"containerd": "v2.3.4 (x)", "runc": "v1.4.3 (x)"}, "mid": {"containerd": "v1.7.18"}}
    for name, origin in runs.items():
        (recordings / f"{name}--v1.27.16-live-kind.json").write_text(json.dumps({"origin": origin}))
    judged: dict[str, Verdicts] = {
        "old": {"p::test_a": {"timed": _verdict("pass", 5.0), "phase": _verdict("pass", "Failed")}},
        "new": {"p::test_a": {"timed": _verdict("pass", 4.5), "phase": _verdict("fail", "Running")}},
        "mid": {"p::test_a": {"timed": _verdict("pass", 4.8)}, "p::test_b": {"only": _verdict("pass", 1)}},
    }

    def judge(paths: list[Path], scratch: Path) -> Verdicts:
        (path,) = paths
        return judged[path.name.split("--")[0]]

    found = runtimes.side_by_side("1.27.16", tmp_path, judge)
    assert found.runtimes == (runtimes.DEBIAN, "containerd v1.7.18", "containerd v2.3.4, runc v1.4.3")
    assert [(r.claim, r.differs, r.timed) for r in found.rows] == [("phase", True, False), ("timed", False, True)]
    text = runtimes.render(found, values=False)
    assert "    phase" in text and 'pass "Failed"' in text and 'fail "Running"' in text and " differs" in text
    assert not [line for line in text.splitlines() if line.startswith("    timed")]  # the same on each: not shown
    assert "containerd 1.6.20 (Debian) | containerd v2.3.4: 2 claims observed by both; 1 differ" in text
    assert "containerd v1.7.18 | containerd v2.3.4: 1 claims observed by both; 0 differ" in text
    with_values = runtimes.render(found, values=True)
    assert "| pass 5   " in with_values and "| pass 4.8 " in with_values and "    timed " in with_values
    assert all(len(line) <= 120 for line in with_values.splitlines())
    rows = runtimes.markdown_rows(found)
    assert rows[1] == f"| v1.27.16 | {runtimes.DEBIAN} | containerd v2.3.4, runc v1.4.3 | 2 | 1 | 1 | phase |"


def _make_runtimes(*variables: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "harness", "make", "runtimes"]
    env = {k: v for k, v in os.environ.items() if k not in ("VERSION", "VALUES", "MARKDOWN")}
    env |= dict(v.split("=", 1) for v in variables)
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def _make_runtimes_here(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *variables: str
) -> subprocess.CompletedProcess[str]:
    """What _make_runtimes answers, through the same CLI in this process."""
    from harness.doors import cli

    with monkeypatch.context() as patched:
        for name in ("VERSION", "VALUES", "MARKDOWN"):
            patched.delenv(name, raising=False)
        for name, value in (v.split("=", 1) for v in variables):
            patched.setenv(name, value)
        code = cli.main(["make", "runtimes"])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["make", "runtimes", *variables], code, out, err)


def test_bad_versions_are_refused_in_one_line_before_any_replay(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first row through python -m harness in a child, the others through the same CLI in this process: a child
    took 0.1 s of CPU to say one line."""
    for variables, said, in_a_child in (
        ((), "error: no VERSION given: name a release with kind recordings, e.g. make runtimes VERSION=1.27.16", True),
        (("VERSION=banana",), "error: not a Kubernetes version: 'banana'", False),
        (("VERSION=1.27.99",), "error: 1.27.99 is not a published release", False),
        (
            ("VERSION=1.21.0-alpha.0",),
            "error: v1.21.0-alpha.0 has shipped kind recordings on fewer than two runtimes",
            False,
        ),
    ):
        run = _make_runtimes(*variables) if in_a_child else _make_runtimes_here(monkeypatch, capsys, *variables)
        assert run.returncode == 2 and run.stderr.startswith(said) and len(run.stderr.splitlines()) == 1, run.stderr
        assert "replaying" not in run.stdout or "alpha" in said


def test_the_shipped_v1_36_4_runs_on_two_runtimes_are_compared_claim_by_claim() -> None:
    found = runtimes.side_by_side("1.36.4")
    ((one, other, compared, _),) = found.pairs()
    assert compared > 50 and "v2.3.4" in other and "Debian" not in other and "1.6.20" in one
    rows = runtimes.markdown_rows(found)
    assert len(rows) == 1 and rows[0].startswith("| v1.36.4 |")
