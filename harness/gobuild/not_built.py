"""Why a release did not build here, in one line, and the releases whose last build on this machine failed."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from harness.base.paths import TOOLS
from harness.base.versions import Release


def build_failure(err: Exception) -> str:
    """Why a release could not be built, in one line: the step that failed (the error's first line) and why (a build
    log's last line; seen: "module k8s.io/apiserver ... does not contain package k8s.io/apiserver/pkg/reconcilers"
    for v1.28.0-alpha.3, whose kube-aggregator twin the proxy serves at no 0.28 pre-release)."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()] or ["(no message)"]
    return "could not be built: " + " ... ".join(dict.fromkeys([lines[0][:300], lines[-1][:300]]))


# Releases whose last build on this machine failed (the proxy refused the tag or a twin, or `go build` failed),
# kept so `make coverage PLAN=1` plans around them; a later build that succeeds removes its entry. The proxy's
# answers change (a tag refused one day is served another), so each entry keeps the day it was seen.
NOT_BUILT_RECORD = "not-built.json"


def not_built_here(tools: Path = TOOLS) -> dict[str, str]:
    """Release ('1.28.0-alpha.3') -> 'YYYY-MM-DD: why its last build here failed' (the error's first and last line)."""
    path = tools / "kubernetes" / NOT_BUILT_RECORD
    try:
        answer = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in answer.items()} if isinstance(answer, dict) else {}


def remember_not_built(release: Release, why: str | None, tools: Path = TOOLS) -> None:
    """Note that this release's build failed here (why), or forget it (None: it built)."""
    name = release.tag.removeprefix("v")
    known = not_built_here(tools)
    if why is None and name not in known:
        return
    if why is None:
        del known[name]
    else:
        lines = [line.strip() for line in why.splitlines() if line.strip()] or ["the build failed"]
        first = lines[0].split("; last lines of ")[0]  # what failed (the log's path is this machine's)
        said = first if len(lines) == 1 else f"{first}: {lines[-1]}"  # and its last error line (failure_lines)
        known[name] = f"{datetime.now(UTC).date().isoformat()}: {said}"
    path = tools / "kubernetes" / NOT_BUILT_RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")


# A line of `go build` output that says what failed: a compile error (file.go:12:3: ...), or the go command's own.
_ERROR_LINE = re.compile(
    r"\.go:\d+(:\d+)?: |^go: (?!downloading|finding|extracting)|: module \S+ found|cannot find module|missing go.sum"
)


def failure_lines(log: Path, most: int = 20) -> str:
    """The log's last lines and, last of all, its error lines: with `go build -v` the package names it went on
    printing come after the error that stopped it (seen: v1.29.0-alpha.1's 'unknown field V3Config')."""
    lines = log.read_text(errors="replace").splitlines()
    errors = [line for line in lines if _ERROR_LINE.search(line)][-5:]
    tail = [line for line in lines[-most:] if line not in errors]
    said = f"last lines of {log}:\n" + "\n".join(tail)
    return said + ("\nerrors:\n" + "\n".join(errors) if errors else "")
