"""tools/compare_runtimes.py: a release's kind recordings grouped by the runtime their origin names, compared."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import compare_runtimes


def test_a_recording_names_its_runtime_or_ran_on_the_debian_image() -> None:
    kind_parts = {"containerd": "v1.7.18 (built here from github.com/containerd/containerd with go1.22.9)"}
    kind_parts["runc"] = "v1.1.13 (built here from github.com/opencontainers/runc with go1.22.9)"
    assert compare_runtimes.runtime_of(kind_parts) == "containerd v1.7.18, runc v1.1.13"
    assert compare_runtimes.runtime_of({"node_image": "plp-node:v1.36.4"}) == compare_runtimes.DEBIAN


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
    groups = compare_runtimes.grouped("1.27.16", tmp_path)
    assert {k: [p.name for p in v] for k, v in groups.items()} == {
        "containerd v1.7.18": ["a--v1.27.16-live-kind.json"],
        compare_runtimes.DEBIAN: ["a--v1.27.16-live-kind-2.json"],
    }


def test_a_release_on_one_runtime_only_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert compare_runtimes.main(["1.21.0-alpha.0"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: v1.21.0-alpha.0 has shipped kind recordings on fewer than two runtimes: none"
    )


def test_the_shipped_v1_36_4_runs_on_two_runtimes_are_compared_claim_by_claim(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = compare_runtimes.main(["1.36.4", "--markdown"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| v1.36.4 |")]
    assert len(rows) == 1
    cells = [cell.strip() for cell in rows[0].strip("|").split("|")]
    compared, same, differ = (int(c) for c in cells[3:6])
    assert compared > 50 and same + differ == compared and code == (1 if differ else 0)
