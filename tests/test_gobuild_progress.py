"""How a running build reports its progress, and what its trace says about where the time went."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

from harness.gobuild import progress

LOG = """+ go mod edit -require=k8s.io/kubernetes@v0.0.0
go: downloading github.com/google/uuid v1.3.0
internal/goarch
k8s.io/api/core/v1
# k8s.io/kubernetes/pkg/x
pkg/x/y.go:1: warning
k8s.io/kubernetes/cmd/kubelet
"""


def test_only_the_packages_go_build_v_printed_count_as_compiled() -> None:
    assert progress.compiled_packages(LOG) == [
        "internal/goarch",
        "k8s.io/api/core/v1",
        "k8s.io/kubernetes/cmd/kubelet",
    ]


def test_the_progress_line_says_time_count_and_what_is_last() -> None:
    line = progress.progress_line(192.4, ["internal/goarch", "k8s.io/api/core/v1"], 2540)
    assert line == "3m12s  compiled 2 packages (about 2,540 in the build)  last: k8s.io/api/core/v1"
    linking = progress.progress_line(5, ["k8s.io/kubernetes/cmd/kubelet"], None)
    assert linking == "0m05s  compiled 1 packages  linking or compiling after kubelet"
    assert progress.progress_line(0, [], None).endswith("loading packages")


def _event(name: str, phase: str, at_s: float) -> dict[str, object]:
    return {"name": f"Executing action ({name})", "ph": phase, "ts": at_s * 1e6, "pid": 0, "tid": 1}


def test_the_trace_says_what_was_compiled_reused_and_how_long_each_link_took(tmp_path: Path) -> None:
    events = [
        _event("build internal/goarch", "B", 0.0),
        _event("build internal/goarch", "E", 0.5),
        _event("build k8s.io/api/core/v1", "B", 0.5),
        _event("build k8s.io/api/core/v1", "E", 20.5),
        _event("build k8s.io/kubernetes/cmd/kubelet", "B", 20.5),
        _event("build k8s.io/kubernetes/cmd/kubelet", "E", 21.0),
        _event("link k8s.io/kubernetes/cmd/kubelet", "B", 21.0),
        _event("link k8s.io/kubernetes/cmd/kubelet", "E", 51.0),
        _event("link-install k8s.io/kubernetes/cmd/kubelet", "B", 51.0),
    ]
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(events))
    summary = progress.trace_summary(trace, ["k8s.io/api/core/v1", "k8s.io/kubernetes/cmd/kubelet"])
    assert summary == {
        "packages_in_build": 3,
        "packages_compiled": 2,
        "packages_reused": 1,
        "compile_s_summed": 20.5,
        "link_s": {"kubelet": 30.0},
    }
    assert progress.trace_summary(tmp_path / "missing.json", ["a"]) == {"packages_compiled": 1}


def test_in_a_log_the_progress_is_a_line_at_each_interval(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    log.write_text("before the build\n")
    start = log.stat().st_size
    out = io.StringIO()
    with progress.Progress(log, start, lambda: 10, out=out, interval_s=0.05):
        with log.open("a") as writing:
            writing.write("internal/goarch\n")
        deadline = time.monotonic() + 60  # the next tick, whenever a loaded machine runs the progress thread
        while "last: internal/goarch" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.02)
    lines = out.getvalue().splitlines()
    assert lines and "\r" not in out.getvalue()
    assert lines[-1].endswith("compiled 1 packages (about 10 in the build)  last: internal/goarch")
