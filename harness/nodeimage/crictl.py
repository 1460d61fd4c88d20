"""plp-crictl: the suite's own minimal crictl for kind node images built from Go modules, built once.

cri-tools (`sigs.k8s.io/cri-tools`) is not served by the Go module proxy this suite can reach and Debian
packages no crictl, yet callers run `crictl ps -a -o json` and `crictl inspecti` inside a node. So
`harness/nodeimage/crictl-go/` is a small Go module of the suite's own on `k8s.io/cri-api` (CRI v1) that
prints what those callers parse the way cri-tools does. `build_crictl()` builds it statically (cgo off) into
`.tools/crictl/<key>/crictl`, where the key hashes the Go sources, the toolchain and the build flags, so a
binary is reused until one of them changes; `build.log` and `build.json` lie beside it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import shlex
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from harness.base.paths import TOOLS
from harness.gobuild.go import BuildError, go_environment, go_on_path, log_tail, logged_step
from harness.gobuild.toolchain import SUITE_TOOLCHAIN

SOURCE = Path(__file__).resolve().parent / "crictl-go"
SOURCE_FILES = ("go.mod", "go.sum", "main.go")
TOOLCHAIN = SUITE_TOOLCHAIN  # cri-api v0.27's era: its go.mod says go 1.20
BUILD_FLAGS = ("-trimpath", "-ldflags", "-s -w")
BUILD_TIMEOUT_S = 900.0

Runner = Callable[[list[str], Mapping[str, str], Path, Path], int]
GO_BUILD: Runner = functools.partial(logged_step, timeout=BUILD_TIMEOUT_S)  # go build, its output in the log


class CrictlBuildError(BuildError):
    """plp-crictl could not be built; the message says why and where the log is (meant for users)."""


def source_key(source: Path = SOURCE, toolchain: str = TOOLCHAIN) -> str:
    """What a built binary depends on: the Go sources, the toolchain and the flags (16 hex digits)."""
    digest = hashlib.sha256(f"{toolchain}\0{' '.join(BUILD_FLAGS)}\0".encode())
    for name in SOURCE_FILES:
        path = source / name
        if not path.is_file():
            raise CrictlBuildError(f"the crictl sources are incomplete: {path} is missing")
        digest.update(f"{name}\0{len(path.read_bytes())}\0".encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def cri_api_version(source: Path = SOURCE) -> str:
    """The k8s.io/cri-api version go.mod requires ("v0.27.3")."""
    match = re.search(r"^\s*(?:require\s+)?k8s\.io/cri-api\s+(v\S+)", (source / "go.mod").read_text(), re.M)
    if not match:
        raise CrictlBuildError(f"{source / 'go.mod'} requires no k8s.io/cri-api")
    return match[1]


def crictl_record(source: Path = SOURCE, toolchain: str = TOOLCHAIN) -> dict[str, str]:
    """What a node image records about its crictl."""
    return {
        "name": "plp-crictl (the suite's own minimal crictl, not cri-tools)",
        "module": "local/plp-crictl (harness/nodeimage/crictl)",
        "source_key": source_key(source, toolchain),
        "toolchain": toolchain,
        "cri_api": cri_api_version(source),
    }


def build_crictl(
    tools: Path = TOOLS,
    source: Path = SOURCE,
    toolchain: str = TOOLCHAIN,
    runner: Runner = GO_BUILD,
) -> Path:
    """The path of plp-crictl built from `source`, built now unless a build of the same key is there."""
    key = source_key(source, toolchain)
    directory = tools / "crictl" / key
    binary = directory / "crictl"
    if binary.is_file():
        return binary
    try:
        go = go_on_path("building crictl for the node image")
    except BuildError as err:
        raise CrictlBuildError(str(err)) from None
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "build.log"
    log.write_text(f"plp-crictl {key} from {source} with {toolchain}\n")
    partial = directory / "crictl.partial"  # renamed when whole: a broken build is never reused
    env = {
        **go_environment(tools),
        "GOTOOLCHAIN": toolchain,
        "GOFLAGS": "-mod=readonly",  # go.sum is committed: the build never edits the sources
        "CGO_ENABLED": "0",
        "GOOS": "linux",
    }
    command = [go, "build", *BUILD_FLAGS, "-o", str(partial), "."]
    with log.open("a") as out:
        out.write(f"+ cd {source}; GOTOOLCHAIN={toolchain} CGO_ENABLED=0 {shlex.join(command)}\n")
    started = time.monotonic()
    try:
        code = runner(command, env, source, log)
    except subprocess.TimeoutExpired:
        raise CrictlBuildError(f"building crictl took over {BUILD_TIMEOUT_S:.0f}s and was stopped; see {log}") from None
    except OSError as err:
        raise CrictlBuildError(f"building crictl could not start ({err}); see {log}") from None
    if code != 0 or not partial.is_file():
        raise CrictlBuildError(
            f"building crictl failed (go build exited {code}); last lines of {log}:\n{log_tail(log, 15)}"
        )
    partial.rename(binary)
    record: dict[str, object] = {**crictl_record(source, toolchain), "duration_s": round(time.monotonic() - started, 1)}
    (directory / "build.json").write_text(json.dumps(record, indent=1) + "\n")
    return binary
