"""The go command as every build of the suite runs it: its own environment under `.tools/go/`, the host's Go
checked, and a build step run with its output in a log.

Nothing is taken from the host's `go env` file or a GOFLAGS of its own; the proxy and checksum database stay the
host's. A Kubernetes build's steps run in a process group of their own (`run_step`), which is killed whole on
Ctrl-C or when a background build is stopped; the suite's small tools (kind, crictl, etcd, CoreDNS) run theirs
to their end with a timeout (`logged_step`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from harness.base.inputs import BadInput
from harness.base.paths import TOOLS
from harness.base.process import interrupts_held

# The oldest Go on PATH that can switch toolchains (GOTOOLCHAIN), which every build here relies on.
GO_ON_PATH = "Go 1.21 or newer"


class BuildError(RuntimeError):
    """A Go build could not be made; the message says why (the proxy's answer, or the log's last lines)."""


class BuildStopped(BuildError):
    """A background build stopped because the command that asked for it was interrupted (make matrix)."""


# The compiler's garbage collector. At Go's default (GOGC=100) the compilers of a build spend about a fifth of
# their CPU collecting: measured here (2 cores, beside a Kubernetes build), compiling k8s.io/api's core, apps and
# batch packages from an empty cache took 41.7 and 40.2 s of CPU at GOGC=100, 33.1 and 33.1 s at GOGC=400, and
# the binaries were byte-identical (so was v1.37.2's kube-scheduler, built from an empty cache at 400 and by the
# suite at 100: the same sha256). GOGC is not in the build cache's key (a cache filled at one value served
# the other without one compile), so builds before and after share their caches. GOMEMLIMIT makes each compiler
# collect as usual again before the ones the go command runs at once (one per core) hold half the memory; Go
# reads it from go1.19 (the Go 1.19 release notes: "The runtime now includes support for a soft memory limit"),
# so older toolchains (Kubernetes 1.21-1.24) keep Go's defaults rather than a bigger heap
# with no limit.
COMPILER_GOGC = "400"
GOMEMLIMIT_FROM = (1, 19)


def go_minor(version: str) -> tuple[int, int] | None:
    """'go1.20.14', '1.25.0' or '1.20' -> (1, 20); None when it names no Go release."""
    found = re.match(r"(?:go)?(\d+)\.(\d+)", version)
    return (int(found[1]), int(found[2])) if found else None


def compiler_gc(toolchain: str, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """GOGC and GOMEMLIMIT for a build's compilers ({}: Go's defaults); the caller's own GOGC wins."""
    if environ.get("GOGC"):
        return {"GOGC": environ["GOGC"], **({"GOMEMLIMIT": environ["GOMEMLIMIT"]} if environ.get("GOMEMLIMIT") else {})}
    minor = go_minor(toolchain)
    if minor is None or minor < GOMEMLIMIT_FROM:
        return {}
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    per_compiler = memory // (2 * (os.cpu_count() or 1)) // (1 << 20)
    return {"GOGC": COMPILER_GOGC, "GOMEMLIMIT": f"{per_compiler}MiB"}


def go_environment(tools: Path = TOOLS, cache: str = "shared") -> dict[str, str]:
    """The build's own Go environment: caches inside .tools/ (shared by every build), cgo off as upstream builds.

    Nothing is taken from the host's `go env` file or a GOFLAGS of its own (a `-buildvcs=false` there, seen
    on this machine, is refused as an unknown flag by go1.16 and go1.17, which Kubernetes 1.21-1.23 need):
    GOENV=off, and every setting a toolchain from go1.16 on reads is given here. The proxy and checksum
    database stay the host's, as the host's Go reports them.
    """
    return {
        **os.environ,
        "GOENV": "off",
        "GOMODCACHE": str(tools / "go" / "mod"),
        "GOCACHE": str(go_build_cache(tools, cache)),
        "GOPATH": str(tools / "go" / "path"),
        "GOFLAGS": "-mod=mod",
        "GOWORK": "off",
        "CGO_ENABLED": "0",
        "GO111MODULE": "on",
        "GOPROXY": _host_go_setting("GOPROXY", "https://proxy.golang.org,direct"),
        "GOSUMDB": _host_go_setting("GOSUMDB", "sum.golang.org"),
    }


def go_build_cache(tools: Path, name: str) -> Path:
    """A Go build cache: one Go minor's Kubernetes builds (harness/gobuild/kubernetes.py `build_cache_name`), or
    "shared" for the suite's small Go tools."""
    return tools / "go" / "cache" / name


# A Go build cache grows with each patch built with it (every package a patch changed is added; seen: go1.20's at
# 9.3 GB after 1.28.6, 1.28.1, 1.28.3, 1.28.4 and half of 1.25.16), and Go itself removes only entries unused for
# five days. Before a build, the least recently used entries of the cache it uses go until it is below this size
# (make's GO_BUILD_CACHE_GB overrides it): room for about two cold builds of a minor, so consecutive patches reuse.
BUILD_CACHE_BUDGET_GB = 6.0
BUILD_CACHE_BUDGET_VARIABLE = "PLP_GO_BUILD_CACHE_GB"


def build_cache_budget() -> float:
    """The Go build cache's size bound in GB: GO_BUILD_CACHE_GB when given (a positive number), else the default."""
    given = os.environ.get(BUILD_CACHE_BUDGET_VARIABLE, "").strip()
    if not given:
        return BUILD_CACHE_BUDGET_GB
    try:
        budget = float(given)
    except ValueError:
        budget = 0.0
    if not budget > 0:
        raise BadInput(f"GO_BUILD_CACHE_GB={given!r}: give the Go build cache's size bound in GB, e.g. 6")
    return budget


def trim_cache_to(cache: Path, budget_bytes: int) -> tuple[int, int]:
    """Remove the least recently used entries of one Go build cache (the files in its 00 ... ff folders; Go
    refreshes an entry's modification time when it uses it, at most hourly) until the rest is within
    budget_bytes. (bytes removed, bytes kept)."""
    entries = []
    for folder in cache.glob("[0-9a-f][0-9a-f]"):
        for entry in folder.iterdir():
            with contextlib.suppress(OSError):
                stat = entry.stat()
                entries.append((stat.st_mtime, stat.st_size, entry))
    kept = sum(size for _, size, _ in entries)
    removed = 0
    for _, size, entry in sorted(entries, key=lambda e: (e[0], str(e[2]))):
        if kept <= budget_bytes:
            break
        with contextlib.suppress(OSError):
            entry.unlink()
            kept -= size
            removed += size
    return removed, kept


@functools.cache
def build_cache_name(toolchain: str) -> str:
    """'go1.20.14' -> 'go1.20': builds share a Go build cache by the Go minor of their toolchain. Its keys name the
    toolchain and each module's version (v0.0.0 for k8s.io/kubernetes and its staging twins here), so the patches
    of a Kubernetes minor, and consecutive minors built with one Go minor, reuse every package that is the same."""
    return ".".join(toolchain.split(".")[:2])


# Go build caches kept besides the one a build uses: the most recently used other one, so a bisection or a matrix
# whose releases alternate between two Go minors (1.27.3 on go1.20, 1.27.11 on go1.21) does not rebuild each
# from nothing every time it changes toolchain.
OTHER_CACHES_KEPT = 1


def trim_build_caches(tools: Path, name: str, others: int = OTHER_CACHES_KEPT) -> list[str]:
    """Before a build with cache `name`, mark it used and remove the Go build caches but it, "shared" and the
    `others` most recently used (each a few GB; another Go minor's serves nothing to this build). Seen: with
    bisections and single builds trimming nothing, `.tools/go` reached 47 GB with six caches (one 13 GB, from
    five patches on four Go releases) and left 8 GB free. The names removed."""
    caches = tools / "go" / "cache"
    (caches / name).mkdir(parents=True, exist_ok=True)
    (caches / name / ".used").touch()

    def last_used(cache: Path) -> float:
        marker = cache / ".used"
        return marker.stat().st_mtime if marker.is_file() else 0.0

    def holds_something(cache: Path) -> bool:
        return any(entry.name != ".used" for entry in cache.iterdir())

    # A cache with nothing in it (its build failed before compiling, e.g. a pre-release whose modules do not load)
    # is not the other one worth keeping: seen, an empty go1.18 cache kept over a 6 GB go1.20 one.
    rest = sorted(
        (p for p in caches.iterdir() if p.is_dir() and p.name not in (name, "shared")),
        key=lambda cache: (holds_something(cache), last_used(cache)),
        reverse=True,
    )
    removed = sorted(p.name for p in rest[others:])
    for old in removed:
        shutil.rmtree(caches / old, ignore_errors=True)
    return removed


def _host_go_setting(name: str, default: str) -> str:
    """One of the host Go's settings (environment, go env file, GOROOT/go.env), or the default without Go."""
    if os.environ.get(name):
        return os.environ[name]
    go = shutil.which("go")
    if go is None:
        return default
    return _go_env(go, name) or default


@functools.cache
def _go_env(go: str, name: str) -> str:
    """`go env NAME` of that go executable, asked once a process: every Go command's environment takes the host's
    proxy and checksum database (go_environment), and the radar runs one Go command for each query to the proxy
    (43 in its test). Empty when it says nothing or cannot run (the same as no Go)."""
    try:
        return subprocess.run([go, "env", name], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def go_on_path(purpose: str) -> str:
    """The go executable on PATH; raises BuildError saying `purpose` needs it."""
    go = shutil.which("go")
    if go is None:
        raise BuildError(f"{purpose} needs {GO_ON_PATH} on PATH (https://go.dev/dl/)")
    return go


def check_go() -> str:
    """The host's Go (any release that can switch toolchains, 1.21+); raises BuildError if there is none."""
    go = go_on_path("building Kubernetes")
    out = subprocess.run([go, "version"], capture_output=True, text=True, check=False).stdout.strip()
    match = re.search(r"go1\.(\d+)", out)
    if not match or int(match[1]) < 21:
        raise BuildError(f"building Kubernetes needs {GO_ON_PATH} (toolchain switching); found: {out}")
    return out


def run_go(
    args: list[str], env: Mapping[str, str], cwd: Path, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """One go command whose answer is read (not a build step): its output captured."""
    return subprocess.run(
        ["go", *args], cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout, check=False
    )


def run_step(
    command: list[str], cwd: Path, env: Mapping[str, str], out: IO[str], stop: threading.Event | None = None
) -> int:
    """One build step (go, or a generator it built) with its output in build.log, in its own process group,
    which is killed whole when this process is interrupted or, for a build on a background thread (which no
    Ctrl-C reaches), when `stop` is set: then BuildStopped is raised. Its exit code."""
    process: subprocess.Popen[bytes] | None = None
    try:
        with interrupts_held():  # an interrupt during Popen comes after it, with the child held here
            process = subprocess.Popen(
                command, cwd=cwd, env=dict(env), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        while True:
            try:
                return process.wait(timeout=None if stop is None else 0.5)
            except subprocess.TimeoutExpired:
                if stop is not None and stop.is_set():
                    raise BuildStopped(f"stopped: {' '.join(command[:2])} was stopped with the command") from None
    except BaseException:
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        raise


def logged_step(command: list[str], env: Mapping[str, str], cwd: Path, log: Path, timeout: float = 3600) -> int:
    """One step of a small tool's build, its output appended to `log` (raises TimeoutExpired); its exit code."""
    with log.open("a") as out:
        return subprocess.run(
            command, cwd=cwd, env=dict(env), stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False
        ).returncode


def log_tail(log: Path, lines: int = 20) -> str:
    """The last lines of a build log, for the error that names it."""
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.is_file() else "(no log)"
