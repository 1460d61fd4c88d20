"""Watching a Kubernetes build: how far it is while it runs, and where its time went once it ended.

`go build -v` prints a package's import path when it is compiled, and nothing for a package taken from the build
cache; `-debug-trace` writes every action of the build (compile, link) with its start and end. While the build
runs, a line says how long it has run, how many packages were compiled and the last one (on a terminal one line
that updates each second; in a log a line every 30 s). When it ends, the trace gives the figures build.json keeps:
packages in the build, compiled, reused from the cache, the seconds spent compiling (summed over the parallel
actions) and each component's link.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

# A line of `go build -v`: an import path alone (not "go: downloading ..." or a compiler message).
_PACKAGE_LINE = re.compile(r"^[A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-~]+)*$")
_ACTION = re.compile(r"^Executing action \((build|link) (\S+)\)$")
_COMPONENT_PREFIX = "k8s.io/kubernetes/cmd/"


def compiled_packages(log_text: str) -> list[str]:
    """The packages `go build -v` said it compiled, in order, from the build log's text after the build started."""
    return [line for line in log_text.splitlines() if _PACKAGE_LINE.match(line)]


def progress_line(elapsed_s: float, compiled: list[str], total: int | None) -> str:
    """'3m12s  compiled 812 packages (of 2,540 in the build; the rest from the cache)  last: k8s.io/...'."""
    minutes, seconds = divmod(int(elapsed_s), 60)
    of = f" (about {total:,} in the build)" if total else ""
    last = compiled[-1] if compiled else ""
    doing = (
        f"linking or compiling after {last.removeprefix(_COMPONENT_PREFIX)}"
        if last.startswith(_COMPONENT_PREFIX)
        else f"last: {last}"
        if last
        else "loading packages"
    )
    return f"{minutes}m{seconds:02d}s  compiled {len(compiled):,} packages{of}  {doing}"


class Progress:
    """Say how far a running build is, from its log, until stopped (a context manager around the build step)."""

    def __init__(
        self,
        log: Path,
        start_offset: int,
        total: Callable[[], int | None],
        out: IO[str] | None = None,
        interval_s: float | None = None,
    ) -> None:
        self._log, self._offset, self._total = log, start_offset, total
        self._out = out if out is not None else sys.stdout
        self._terminal = self._out.isatty()
        self._interval = interval_s if interval_s is not None else (1.0 if self._terminal else 30.0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="build-progress", daemon=True)
        self._started = time.monotonic()

    def __enter__(self) -> Progress:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self._terminal:
            self._out.write("\n")
            self._out.flush()

    def line(self) -> str:
        with self._log.open(errors="replace") as log:
            log.seek(self._offset)
            text = log.read()
        return progress_line(time.monotonic() - self._started, compiled_packages(text), self._total())

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            text = self.line()
            if self._terminal:
                self._out.write("\r\033[K" + text)
            else:
                self._out.write(text + "\n")
            self._out.flush()


def trace_summary(trace: Path, compiled: list[str]) -> dict[str, Any]:
    """What one `go build -debug-trace` did: packages in the build, compiled, reused, compile and link seconds.

    Compile seconds add up the build actions that ran (two run at once on two cores, so the sum can exceed the
    wall time); a link's seconds are its own action's. An unreadable trace gives the counts from the log alone.
    """
    try:
        events = json.loads(trace.read_text())
    except (OSError, ValueError):
        return {"packages_compiled": len(compiled)}
    begun: dict[tuple[str, str], float] = {}
    spans: dict[tuple[str, str], float] = {}
    for event in events:
        match = _ACTION.match(str(event.get("name", "")))
        if not match:
            continue
        key = (match[1], match[2])
        if event.get("ph") == "B":
            begun[key] = float(event["ts"])
        elif event.get("ph") == "E" and key in begun:
            spans[key] = spans.get(key, 0.0) + (float(event["ts"]) - begun.pop(key)) / 1e6
    builds = {name: s for (kind, name), s in spans.items() if kind == "build"}
    links = {name.removeprefix(_COMPONENT_PREFIX): round(s, 1) for (kind, name), s in spans.items() if kind == "link"}
    compiled_set = set(compiled)
    return {
        "packages_in_build": len(builds),
        "packages_compiled": len(compiled_set & set(builds)) or len(compiled),
        "packages_reused": len(set(builds) - compiled_set),
        "compile_s_summed": round(sum(s for name, s in builds.items() if name in compiled_set), 1),
        "link_s": dict(sorted(links.items())),
    }
