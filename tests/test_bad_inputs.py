"""Every bad input is refused through the real entry points: non-zero exit, one `error:` line that names the
problem (and, for the harness, the class of failure its --help documents), no traceback, nothing slow started.

Every row runs in this process: `python -m harness` and `make` rows call `harness.doors.cli.main([...])` (a make
target as the Makefile runs it: `make <target>` with its variables in the environment), with everything slow or
outward replaced by a stand-in that fails the test if it is reached (Docker and kind checks, kind's download,
cluster creation, Kubernetes and node-image builds, the matrix and bisect runners, the janitor, pytest's exec): a
refusal must come before all of them; plain pytest rows call `pytest.main`. A few rows of each entry point run
the real `python -m harness`, `make` or `pytest` in a child process too, to show that the real command prints no
traceback and exits with its code (a child costs 0.3-1.4 s of CPU, a row here 0.05 s); they run with stand-ins
for kind and docker on PATH (tests/fake_tools.py) that log every call, and the log must stay empty.
"""

from __future__ import annotations

import http.server
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.axis import bisect as bisect_module
from harness.axis import matrix
from harness.base.families import recording_path
from harness.clusters import janitor, lifecycle
from harness.clusters.existing import clusters as existing_clusters
from harness.clusters.kind import axis as kind_axis
from harness.clusters.kind import clusters as kind_clusters
from harness.clusters.kind import node_images as kind_node_images
from harness.clusters.local import clusters as local_clusters
from harness.clusters.local import host as local_host
from harness.clusters.local import teardown as local_teardown
from harness.doors import cli
from harness.doors.commands import probe as probe_command
from harness.doors.commands import refusal, version_axis
from harness.doors.make_variables import make_argv
from harness.nodeimage import release as node_image_release
from harness.reports import report as report_module
from tests import fake_tools
from tests.pytest_here import harness_here

REPO = Path(__file__).resolve().parent.parent
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: kind-mine, context: {cluster: c, user: u}}]
current-context: kind-mine
"""
RECORD = (
    '{"probe": "p.py::test_p", "family": "phase_after_deletion", "server_version": "v1.27.3", "verdicts": '
    '[{"claim": "default-grace-period", "status": "pass", "observed": 30}]}'
)
RECORDING = recording_path("phase_after_deletion/always_pod_trapping_sigterm--v1.27.3-live-local.json")  # only read


@dataclass(frozen=True)
class Bad:
    """One bad input: the arguments ({tmp} is the test's directory), the exit code, what the error says."""

    argv: tuple[str, ...]
    code: int
    says: str
    env: dict[str, str] = field(default_factory=dict)


# python -m harness ... ({tmp}: files the fixture below writes: kubeconfig, binary, notakubeconfig, file, runs/)
HARNESS: dict[str, Bad] = {
    # probe: the existing-cluster options
    "kubeconfig-hostname": Bad(("probe", "--kubeconfig", "/etc/hostname", "--context", "x"), 2, "is not a kubeconfig"),
    "kubeconfig-passwd": Bad(("probe", "--kubeconfig", "/etc/passwd", "--context", "x"), 2, "is not a kubeconfig"),
    "kubeconfig-other-yaml": Bad(
        ("probe", "--kubeconfig", "{tmp}/notakubeconfig", "--context", "x"), 2, "is not a kubeconfig"
    ),
    "kubeconfig-binary": Bad(("probe", "--kubeconfig", "{tmp}/binary", "--context", "x"), 2, "not a text file"),
    "kubeconfig-missing": Bad(("probe", "--kubeconfig", "{tmp}/missing", "--context", "x"), 2, "missing not found"),
    "kubeconfig-directory": Bad(("probe", "--kubeconfig", "{tmp}", "--context", "x"), 2, "is a directory"),
    "kubeconfig-no-context": Bad(("probe", "--kubeconfig", "{tmp}/kubeconfig"), 2, "needs an explicit --context"),
    "kubeconfig-unknown-context": Bad(
        ("probe", "--kubeconfig", "{tmp}/kubeconfig", "--context", "prod"), 2, "it has: kind-mine"
    ),
    "context-without-kubeconfig": Bad(("probe", "--context", "x"), 2, "--kubeconfig (KUBECONFIG_FILE), which is not"),
    "kubeconfig-and-version": Bad(
        ("probe", "--kubeconfig", "{tmp}/kubeconfig", "--context", "kind-mine", "--version", "1.27"),
        2,
        "give one or the other",
    ),
    "kubeconfig-and-parallel": Bad(
        ("probe", "--kubeconfig", "{tmp}/kubeconfig", "--context", "kind-mine", "--parallel", "2"),
        2,
        "PARALLEL runs the probes on a cluster make probe creates",
    ),
    # probe: versions and images
    "no-version": Bad(("probe", "--version", ""), 2, "no VERSION given; known versions: 1.19"),
    "unknown-version": Bad(("probe", "--version", "9.99"), 2, "no pinned node image for Kubernetes 9.99"),
    "malformed-version": Bad(("probe", "--version", "latest"), 2, "not a Kubernetes version: 'latest'"),
    "not-a-node-image": Bad(("probe", "--image", "alpine:3.18.4"), 2, "not a node image reference"),
    "unknown-cluster-kind": Bad(("probe", "--cluster", "k3d"), 2, "argument --cluster: invalid choice: 'k3d'"),
    # probe: counts
    "parallel-zero": Bad(("probe", "--version", "1.27", "--parallel", "0"), 2, "PARALLEL must be a whole number"),
    "parallel-negative": Bad(("probe", "--version", "1.27", "--parallel", "-2"), 2, "not '-2'"),
    "repeat-zero": Bad(("probe", "--version", "1.27", "--repeat", "0"), 2, "REPEAT must be a whole number"),
    "repeat-word": Bad(("probe", "--version", "1.27", "--repeat", "many"), 2, "not 'many'"),
    # probe: selection and run directory
    "probe-matches-nothing": Bad(
        ("probe", "--version", "1.27", "--probe", "doesnotexist"), 5, "matches none of the 38 probes"
    ),
    "probe-not-an-expression": Bad(("probe", "--version", "1.27", "--probe", "and"), 2, "Wrong expression passed"),
    "restart-apiserver-on-kind": Bad(
        ("probe", "--version", "1.27", "--restart-apiserver-after", "10"), 2, "of a local cluster the suite makes"
    ),
    "restart-apiserver-not-seconds": Bad(
        ("probe", "--version", "1.27.3", "--cluster", "local", "--restart-apiserver-after", "soon"),
        2,
        "RESTART_APISERVER_AFTER must be a number of seconds above 0, not 'soon'",
    ),
    "run-dir-not-writable": Bad(("probe", "--version", "1.27", "--run-dir", "{tmp}/file/runs"), 2, "is not writable"),
    # probe --cluster local (tests/test_local.py has these too): refused before the host check and the build
    "local-minor-only": Bad(("probe", "--cluster", "local", "--version", "1.27"), 2, "give a full Kubernetes release"),
    "local-no-version": Bad(("probe", "--cluster", "local"), 2, "no VERSION given: a local cluster is built"),
    "local-with-image": Bad(
        ("probe", "--cluster", "local", "--version", "1.27.3", "--image", "kindest/node:v1.27.3"),
        2,
        "IMAGE is a kind node image",
    ),
    "local-and-kubeconfig": Bad(
        ("probe", "--cluster", "local", "--kubeconfig", "{tmp}/kubeconfig", "--context", "kind-mine"),
        2,
        "give one or the other",
    ),
    # probe: version text taken strictly, conflicting and unknown inputs
    "version-with-x": Bad(("probe", "--version", "1.27.x"), 2, "not a Kubernetes version: '1.27.x' (give 1.27, 1.27.3"),
    "version-rc-without-number": Bad(("probe", "--version", "1.27.3-rc"), 2, "not a Kubernetes version: '1.27.3-rc'"),
    "version-full-width-digit": Bad(("probe", "--version", "\uff11.27"), 2, "not a Kubernetes version: '\uff11.27'"),
    "version-vendor-suffix": Bad(("probe", "--version", "1.27.3-eks-1"), 2, "v1.27.3, 1.27.0-rc.0, 1.27.0-alpha.3"),
    "local-version-with-x": Bad(("probe", "--cluster", "local", "--version", "v1.27.x"), 2, "'v1.27.x' (give 1.27"),
    "version-and-image": Bad(
        ("probe", "--version", "1.27", "--image", "kindest/node:v1.27.3"), 2, "both name the node image: give one"
    ),
    "keep-maybe": Bad(("probe", "--version", "1.27", "--keep", "maybe"), 2, "KEEP must be 1, yes or true"),
    # probe and clean: an existing cluster's API server, asked once (/version) before anything
    "kubeconfig-closed-port": Bad(
        ("probe", "--kubeconfig", "{tmp}/closed", "--context", "kind-mine"), 3, "cannot be reached: Connection refused"
    ),
    "kubeconfig-not-kubernetes": Bad(
        ("probe", "--kubeconfig", "{tmp}/notk8s", "--context", "kind-mine"), 2, "is not a Kubernetes API server"
    ),
    "clean-kubeconfig-closed-port": Bad(
        ("clean", "--kubeconfig", "{tmp}/closed", "--context", "kind-mine"), 3, "cannot be reached"
    ),
    # matrix
    "matrix-versions-empty": Bad(("matrix", "--versions", ""), 2, "VERSIONS (--versions) is empty"),
    "matrix-versions-blank": Bad(("matrix", "--versions", "  "), 2, "or leave VERSIONS out for every minor"),
    "matrix-duplicate": Bad(("matrix", "--versions", "1.27 1.27.16"), 2, "names Kubernetes 1.27.16 twice"),
    "matrix-local-duplicate": Bad(
        ("matrix", "--cluster", "local", "--versions", "1.27.3 v1.27.3"), 2, "names Kubernetes 1.27.3 twice"
    ),
    "matrix-version-with-x": Bad(("matrix", "--versions", "1.26 1.27.x"), 2, "not a Kubernetes version: '1.27.x'"),
    "matrix-parallel-word": Bad(("matrix", "--parallel", "banana"), 2, "PARALLEL must be a whole number"),
    "matrix-parallel-on-kind": Bad(
        ("matrix", "--versions", "1.27", "--parallel", "2"), 2, "PARALLEL applies to make matrix CLUSTER=local"
    ),
    "matrix-overlap-word": Bad(
        ("matrix", "--cluster", "local", "--versions", "1.27.3", "--overlap", "perhaps"), 2, "OVERLAP must be 1"
    ),
    "matrix-jobs-zero": Bad(("matrix", "--jobs", "0"), 2, "JOBS must be a whole number of 1 or more, not '0'"),
    "matrix-jobs-word": Bad(("matrix", "--jobs", "two"), 2, "not 'two'"),
    "matrix-unknown-version": Bad(("matrix", "--versions", "1.26 9.9"), 2, "no pinned node image for Kubernetes 9.9"),
    # matrix: a runtime after a version (VERSIONS="1.27.16:debian"), read as make node-image's PARTS, CONTAINERD, KIND
    "matrix-runtime-empty": Bad(
        ("matrix", "--versions", "1.27.16:"), 2, "'1.27.16:' is not VERSION or VERSION:RUNTIME"
    ),
    "matrix-runtime-no-version": Bad(("matrix", "--versions", ":debian"), 2, "':debian' is not VERSION or VERSION:"),
    "matrix-runtime-two-colons": Bad(("matrix", "--versions", "1.27.16:debian:kind"), 2, "is not VERSION or VERSION:"),
    "matrix-runtime-unknown-word": Bad(
        ("matrix", "--versions", "1.27.16 1.27.16:gentoo"), 2, "entry 1.27.16:gentoo: 'gentoo' is not a runtime: give"
    ),
    "matrix-runtime-unknown-setting": Bad(
        ("matrix", "--versions", "1.27.16:runc=1.1.12"), 2, "'runc=1.1.12' is not a runtime: give debian, kind"
    ),
    "matrix-runtime-unknown-part": Bad(("matrix", "--versions", "1.27.16:parts=gentoo"), 2, "PARTS=gentoo: give kind"),
    "matrix-runtime-empty-containerd": Bad(
        ("matrix", "--versions", "1.27.16:containerd="), 2, "'containerd=' is not a runtime"
    ),
    "matrix-runtime-named-twice": Bad(
        ("matrix", "--versions", "1.27.16:containerd=2.3.4,containerd=2.1.4"), 2, "containerd is named twice"
    ),
    "matrix-runtime-debian-with-containerd": Bad(
        ("matrix", "--versions", "1.27.16:debian,containerd=2.3.4"), 2, "they do not apply with PARTS=debian"
    ),
    "matrix-runtime-containerd-not-a-version": Bad(
        ("matrix", "--versions", "1.27.16:containerd=latest"), 2, "CONTAINERD=latest is not a version"
    ),
    "matrix-runtime-containerd-too-old": Bad(
        ("matrix", "--versions", "1.27.16:containerd=1.5.18"), 2, "containerd v1.5.18 is too old for Kubernetes 1.27.16"
    ),
    "matrix-runtime-kind-not-read": Bad(
        ("matrix", "--versions", "1.27.16:kind=v0.9.0"), 2, "kind v0.9.0: its base image definition was not read"
    ),
    "matrix-runtime-unpublished": Bad(("matrix", "--versions", "1.27.99:debian"), 2, "1.27.99 is not a published"),
    "matrix-runtime-twice": Bad(
        ("matrix", "--versions", "1.27:containerd=2.3.4 1.27.16:containerd=v2.3.4"),
        2,
        "names the node image plp-node:v1.27.16-kind.v0.25.0-containerd.v2.3.4 twice",
    ),
    "matrix-runtime-same-entry": Bad(
        ("matrix", "--versions", "1.27.16:kind 1.27.16:kind"),
        2,
        "names the node image plp-node:v1.27.16-kind.v0.25.0 twice (1.27.16:kind and 1.27.16:kind)",
    ),
    "matrix-runtime-same-image": Bad(
        ("matrix", "--versions", "1.27.16:debian 1.27.16:kind 1.27.16:kind=0.25.0"),  # v0.25.0 built the pinned image
        2,
        "names the node image plp-node:v1.27.16-kind.v0.25.0 twice (1.27.16:kind and 1.27.16:kind=0.25.0)",
    ),
    "matrix-runtime-on-local": Bad(
        ("matrix", "--cluster", "local", "--versions", "1.27.3:debian"), 2, "CLUSTER=local runs each release on its own"
    ),
    # report
    "report-path-missing": Bad(("report", "/nonexistent"), 2, "nothing to report from /nonexistent"),
    "report-nothing-there": Bad(("report", "{tmp}/runs"), 5, "no run records: looked for probe records"),
    "report-not-a-record": Bad(("report", "/etc/passwd"), 2, "/etc/passwd is not a probe record"),
    "report-a-recording": Bad(("report", str(RECORDING)), 2, "is a recording, not a probe record"),
    "report-no-runs": Bad(("report",), 2, "the following arguments are required: runs"),
    "report-out-a-folder-of-mine": Bad(
        ("report", "{tmp}/record.json", "--out", "{tmp}"), 2, "holds files the suite did not write"
    ),
    "report-out-home": Bad(("report", "{tmp}/record.json", "--out", "~"), 2, "is your home folder"),
    "report-out-empty-after-strip": Bad(("report", "{tmp}/record.json", "--out", " "), 2, "is empty"),
    "report-out-not-writable": Bad(
        ("report", "{tmp}/record.json", "--out", "{tmp}/file/report"), 2, "--out (the report folder)"
    ),
    # bisect
    "bisect-no-bad": Bad(("bisect", "--probe", "trapping", "--good", "1.27.3", "--bad", ""), 2, "BAD (--bad) is"),
    "bisect-no-probe-no-good": Bad(
        ("bisect", "--probe", "", "--good", "", "--bad", "1.27.16"), 2, "PROBE (--probe) and GOOD (--good) are missing"
    ),
    "bisect-two-minors": Bad(("bisect", "--probe", "x", "--good", "1.26.6", "--bad", "1.27.3"), 2, "one minor"),
    "bisect-reversed": Bad(("bisect", "--probe", "x", "--good", "1.27.16", "--bad", "1.27.3"), 2, "must be an earlier"),
    "bisect-unpinned-end": Bad(
        ("bisect", "--probe", "x", "--good", "1.27.4", "--bad", "1.27.16"), 2, "no pinned node image for 1.27.4"
    ),
    "bisect-probe-matches-nothing": Bad(
        ("bisect", "--probe", "doesnotexist", "--good", "1.27.3", "--bad", "1.27.16"), 5, "matches none"
    ),
    "bisect-build-word": Bad(
        ("bisect", "--probe", "x", "--good", "1.27.3", "--bad", "1.27.16", "--build", "maybe"), 2, "BUILD must be 1"
    ),
    "bisect-version-with-x": Bad(
        ("bisect", "--probe", "x", "--good", "1.27.x", "--bad", "1.27.16"), 2, "not a Kubernetes version: '1.27.x'"
    ),
    # node-image
    "node-image-version-with-x": Bad(("node-image", "--version", "1.27.0-rc"), 2, "not a Kubernetes version"),
    "node-image-no-version": Bad(("node-image", "--version", ""), 2, "VERSION (--version) is missing"),
    "node-image-minor-only": Bad(("node-image", "--version", "1.27"), 2, "give a full release version"),
    "node-image-malformed": Bad(("node-image", "--version", "latest"), 2, "not a Kubernetes version"),
    # clean
    "clean-kubeconfig-hostname": Bad(
        ("clean", "--kubeconfig", "/etc/hostname", "--context", "x"), 2, "is not a kubeconfig"
    ),
    "clean-kubeconfig-missing": Bad(("clean", "--kubeconfig", "{tmp}/missing", "--context", "x"), 2, "not found"),
    "clean-context-without-kubeconfig": Bad(("clean", "--context", "x"), 2, "which is not given"),
}

# pytest probes ... (plain pytest, docs/running-probes.md): pytest's usage errors, exit 4
PYTEST: dict[str, Bad] = {
    "pytest-repeat-zero": Bad(("--repeat", "0"), 4, "argument --repeat: REPEAT must be a whole number of 1 or more"),
    "pytest-REPEAT-word": Bad(
        (), 4, "--repeat (REPEAT) must be a whole number of 1 or more, not 'abc'", {"REPEAT": "abc"}
    ),
    "pytest-replay-missing": Bad(("--replay", "/nonexistent"), 4, "--replay /nonexistent: no such file"),
    "pytest-replay-not-a-recording": Bad(("--replay", "/etc/hostname"), 4, "/etc/hostname is not a recording"),
    "pytest-kubeconfig-passwd": Bad(("--kubeconfig", "/etc/passwd", "--context", "x"), 4, "is not a kubeconfig"),
    "pytest-context-alone": Bad(("--context", "x"), 4, "--context (CONTEXT) names a context of --kubeconfig"),
    "pytest-local-minor": Bad(("--local-version", "1.27"), 4, "give a full Kubernetes release"),
    "pytest-restart-without-local": Bad(("--restart-apiserver-after", "5"), 4, "give CLUSTER=local (--local-version)"),
    "pytest-replay-and-kind": Bad(("--replay", "probes", "--kind-version", "1.27"), 4, "cannot be combined"),
    "pytest-kubeconfig-no-context": Bad(("--kubeconfig", "/etc/passwd"), 4, "needs an explicit --context"),
    "pytest-kind-version-with-x": Bad(("--kind-version", "1.27.x"), 4, "bad input: not a Kubernetes version: '1.27.x'"),
    "pytest-local-version-with-x": Bad(("--local-version", "v1.27.x"), 4, "not a Kubernetes version: 'v1.27.x'"),
    "pytest-kind-version-and-image": Bad(
        ("--kind-version", "1.27", "--kind-image", "kindest/node:v1.27.3"), 4, "both name the node image"
    ),
    "pytest-KEEP-maybe": Bad(
        (), 4, "KEEP must be 1, yes or true (or 0, no, false, or empty), not 'maybe'", {"KEEP": "maybe"}
    ),
    "pytest-kind-version-without-kind": Bad(
        ("--kind-version", "1.27", "--kind-bin", "{tmp}/no-kind"), 3, "error: prerequisite missing: live probes need"
    ),
    "pytest-kubeconfig-closed-port": Bad(
        ("--kubeconfig", "{tmp}/closed", "--context", "kind-mine"), 3, "cannot be reached: Connection refused"
    ),
    "pytest-kubeconfig-not-kubernetes": Bad(
        ("--kubeconfig", "{tmp}/notk8s", "--context", "kind-mine"), 4, "is not a Kubernetes API server"
    ),
}

# make ... (the documented commands; make's own exit code is 2 for all, so the line must say the class)
MAKE: dict[str, Bad] = {
    "make-probe-kubeconfig-hostname": Bad(
        ("probe", "KUBECONFIG_FILE=/etc/hostname", "CONTEXT=x"), 2, "error: bad input: /etc/hostname is not a"
    ),
    "make-clean-kubeconfig-passwd": Bad(
        ("clean", "KUBECONFIG_FILE=/etc/passwd", "CONTEXT=x"), 2, "error: bad input: /etc/passwd is not a"
    ),
    "make-bisect-without-bad": Bad(
        ("bisect", "PROBE=trapping", "GOOD=1.27.3"), 2, "error: bad input: BAD (--bad) is missing"
    ),
    "make-node-image-without-version": Bad(("node-image",), 2, "error: bad input: VERSION (--version) is missing"),
    "make-probe-cache-bound-not-a-number": Bad(
        ("probe", "VERSION=1.27", "CLUSTER=local", "GO_BUILD_CACHE_GB=lots"),
        2,
        "error: bad input: GO_BUILD_CACHE_GB='lots': give the Go build cache's size bound in GB",
    ),
    "make-report-nonexistent": Bad(("report", "RUNS=/nonexistent"), 2, "error: bad input: nothing to report from"),
    "make-probe-unknown-probe": Bad(
        ("probe", "VERSION=1.27", "PROBE=doesnotexist"), 2, "error: nothing to run: PROBE 'doesnotexist'"
    ),
    "make-probe-version-with-x": Bad(("probe", "VERSION=1.27.x"), 2, "error: bad input: not a Kubernetes version"),
    "make-probe-version-and-image": Bad(
        ("probe", "VERSION=1.27", "IMAGE=kindest/node:v1.27.3"), 2, "error: bad input: VERSION (1.27) and IMAGE"
    ),
    "make-probe-keep-maybe": Bad(("probe", "VERSION=1.27", "KEEP=maybe"), 2, "KEEP must be 1, yes or true"),
    "make-probe-closed-port": Bad(
        ("probe", "KUBECONFIG_FILE={tmp}/closed", "CONTEXT=kind-mine"), 2, "error: prerequisite missing: the API server"
    ),
    "make-probe-not-kubernetes": Bad(
        ("probe", "KUBECONFIG_FILE={tmp}/notk8s", "CONTEXT=kind-mine"), 2, "error: bad input: the API server http"
    ),
    "make-matrix-versions-empty": Bad(("matrix", "VERSIONS="), 2, "error: bad input: VERSIONS (--versions) is empty"),
    "make-matrix-duplicate": Bad(("matrix", "VERSIONS=1.27 1.27"), 2, "error: bad input: VERSIONS names Kubernetes"),
    "make-matrix-parallel-word": Bad(("matrix", "PARALLEL=banana"), 2, "error: bad input: argument --parallel"),
    "make-matrix-unknown-runtime": Bad(
        ("matrix", "VERSIONS=1.27.16 1.27.16:gentoo"), 2, "error: bad input: VERSIONS entry 1.27.16:gentoo: 'gentoo'"
    ),
    "make-runtimes-runs-missing": Bad(
        ("runtimes", "RUNS={tmp}/no-such-run"), 2, "error: RUNS names no run directory: "
    ),
    "make-bisect-build-word": Bad(
        ("bisect", "PROBE=x", "GOOD=1.27.3", "BAD=1.27.16", "BUILD=maybe"), 2, "error: bad input: argument --build"
    ),
}

# The real entry points in a child process, a few rows of each: every class of refusal its rows have (bad input,
# prerequisite missing, nothing to run; pytest's usage error), a text that is not ASCII, and the variables the
# Makefile itself renames (make's own exit code is 2 for all, so make's rows differ by what the Makefile does).
SUBPROCESS = ["kubeconfig-closed-port", "version-full-width-digit", "probe-matches-nothing"]
PYTEST_CHILD = ["pytest-replay-not-a-recording", "pytest-kind-version-without-kind"]
MAKE_CHILD = ["make-probe-kubeconfig-hostname", "make-probe-cache-bound-not-a-number"]
# What the Makefile passes under another name (GO_BUILD_CACHE_GB as PLP_GO_BUILD_CACHE_GB): only the real make shows it.
MAKEFILE_RENAMES = ("GO_BUILD_CACHE_GB=", "GO_TOOLCHAIN=")


def renamed_by_the_makefile(bad: Bad) -> bool:
    return any(word.startswith(MAKEFILE_RENAMES) for word in bad.argv)


class NotKubernetes(http.server.BaseHTTPRequestHandler):
    """A web server on this machine that is not a Kubernetes API server: /version is an HTML page."""

    def do_GET(self) -> None:
        body = b"<html><body>It works!</body></html>\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, str]]:
    """(a server URL nothing listens on, the URL of a web server that is not Kubernetes), on 127.0.0.1."""
    with socket.socket() as free:  # a port the kernel just gave and took back: closed
        free.bind(("127.0.0.1", 0))
        closed = free.getsockname()[1]
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotKubernetes)
    thread = threading.Thread(target=web.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{closed}", f"http://127.0.0.1:{web.server_address[1]}"
    web.shutdown()
    web.server_close()


def write_cluster_files(directory: Path, servers: tuple[str, str]) -> None:
    """Kubeconfigs whose context kind-mine names a closed port (`closed`) and a web server (`notk8s`)."""
    closed, web = servers
    (directory / "closed").write_text(KUBECONFIG.replace("https://127.0.0.1:6443", closed))
    (directory / "notk8s").write_text(KUBECONFIG.replace("https://127.0.0.1:6443", web))


@pytest.fixture
def tmp(tmp_path: Path, servers: tuple[str, str]) -> Path:
    """The files the rows name: a kubeconfig, a binary, YAML that is not a kubeconfig, a plain file, a record, and
    kubeconfigs of a closed port and of a web server that is not Kubernetes."""
    write_cluster_files(tmp_path, servers)
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    (tmp_path / "binary").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "notakubeconfig").write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n")
    (tmp_path / "file").write_text("a file, not a directory")
    (tmp_path / "runs").mkdir()
    (tmp_path / "record.json").write_text(RECORD)
    return tmp_path


def expand(argv: tuple[str, ...], tmp: Path) -> list[str]:
    return [a.replace("{tmp}", str(tmp)) for a in argv]


def forbid(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace every slow or outward step with a stand-in that fails the test; returns the steps reached."""
    reached: list[str] = []

    def stand_in(name: str) -> Callable[..., Any]:
        def reach(*args: Any, **kwargs: Any) -> Any:
            reached.append(name)
            pytest.fail(f"a refused input reached {name}")

        return reach

    for owner, names in (
        (kind_clusters, ["check_docker", "check_engine", "ensure_kind", "check_prerequisites"]),
        (kind_axis, ["check_docker", "check_engine", "make_node_image"]),
        (kind_node_images, ["check_docker", "check_engine", "ensure_kind", "check_go", "resolve_module"]),
        (kind_node_images, ["make_node_image"]),
        (kind_node_images, ["build_node_images"]),
        (local_clusters, ["build_kubernetes", "check_go", "resolve_module"]),
        (existing_clusters, ["clean_namespaces"]),
        (probe_command, ["run_parallel"]),
        (lifecycle, ["cluster_life"]),  # the probe command imports it when it makes a cluster
        (version_axis, ["check_go"]),
        (os, ["execv"]),
        (local_host, ["check_host"]),
        (local_teardown, ["running_clusters", "stop_cluster"]),
        (node_image_release, ["build_node_image", "build_kind_release"]),
        (matrix, ["run_matrix", "run_versions"]),
        (bisect_module, ["bisect"]),
        (janitor, ["clean"]),
        (report_module, ["write_matrix"]),
    ):
        for name in names:
            monkeypatch.setattr(owner, name, stand_in(f"{getattr(owner, '__name__', owner)}.{name}"))
    return reached


def assert_refused(code: int, expected: Bad, out: str, err: str) -> None:
    """The exit code, an `error: <class>:` line whose class has that code in --help, the problem, no traceback."""
    assert code == expected.code, err
    assert "Traceback" not in out + err
    (line,) = [line for line in err.splitlines() if line.startswith("error: ")]
    kind = next((k for k in refusal.EXIT_CODE if line.startswith(f"error: {k}: ")), None)
    assert kind is not None, f"the error line does not say its class: {line}"
    assert refusal.EXIT_CODE[kind] == code
    assert expected.says in err, err


@pytest.mark.parametrize("name", sorted(HARNESS))
def test_python_m_harness_refuses(
    name: str, tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = HARNESS[name]
    reached = forbid(monkeypatch)
    monkeypatch.chdir(tmp)  # a default run or report directory would be made here, not in the checkout
    done = harness_here(*expand(expected.argv, tmp), capsys=capsys)
    assert_refused(done.returncode, expected, done.stdout, done.stderr)
    assert reached == []


def test_every_refusal_class_and_its_exit_code_is_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ([], ["probe"], ["report"], ["bisect"], ["matrix"], ["node-image"], ["clean"]):
        with pytest.raises(SystemExit):
            cli.main([*command, "--help"])
        text = capsys.readouterr().out
        for kind, code in refusal.EXIT_CODE.items():
            assert re.search(rf"^  {code}  .*{kind}", text, re.M), (command, kind)
    assert {b.code for b in HARNESS.values()} <= set(refusal.EXIT_CODE.values())


def _child(argv: list[str], tmp: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], list[Any]]:
    """A command with stand-ins for kind and docker first on PATH; returns it and what they were asked."""
    log = tmp / "calls.log"
    fake_tools.install(tmp / "bin", log, "https://127.0.0.1:9", [])
    proc = subprocess.run(
        argv,
        cwd=REPO,
        env={**os.environ, "PATH": f"{tmp / 'bin'}:{os.environ['PATH']}", **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    return proc, fake_tools.calls(log)


@pytest.mark.parametrize("name", SUBPROCESS)
def test_the_real_entry_point_refuses_without_a_traceback(
    name: str, tmp: Path, record_property: Callable[[str, object], None]
) -> None:
    """What shows the refusal came before anything slow is what was reached, not the wall clock: kind and docker
    never asked here, and the in-process row of the same input fails on any slow step reached. The time taken is
    kept as a figure (a JUnit property, 0.4-0.9 s on an idle machine), not asserted: under load it measured 9.4 s."""
    started = time.monotonic()
    proc, calls = _child([sys.executable, "-m", "harness", *expand(HARNESS[name].argv, tmp)], tmp, {})
    record_property("refusal_s", round(time.monotonic() - started, 2))
    assert_refused(proc.returncode, HARNESS[name], proc.stdout, proc.stderr)
    assert calls == []  # kind and docker never asked: nothing started


def test_make_report_before_any_run_has_nothing_to_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """make report's default RUNS (runs/) not there yet: nothing to report (5), as README says; a RUNS given that
    is not there is a mistake in it (bad input, the rows above)."""
    monkeypatch.setattr("harness.base.paths.RUNS", tmp_path / "runs")
    assert cli.main(["report", str(tmp_path / "runs")]) == refusal.NO_TESTS_COLLECTED
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: nothing to report: no run records: ") and "is not there yet" in line


def test_the_makefile_passes_every_yes_no_variable_on_to_be_checked() -> None:
    """KEEP, BUILD, PRE and OVERLAP reach the harness as given, where anything but yes or no is refused; make
    filtered them before, so KEEP=maybe was taken as no."""
    makefile = (REPO / "Makefile").read_text()
    environ = {"KEEP": "maybe", "BUILD": "maybe", "PRE": "maybe", "OVERLAP": "maybe"}
    assert "--keep=maybe" in make_argv("probe", environ)
    assert {"--build=maybe", "--pre-releases=maybe"} <= set(make_argv("bisect", environ))
    assert "--overlap=maybe" in make_argv("matrix", environ)
    assert "$(filter 1 yes true" not in makefile and "$(filter 0 no false" not in makefile


@pytest.mark.parametrize("name", sorted(PYTEST))
def test_plain_pytest_refuses_bad_options(
    name: str,
    tmp_path: Path,
    servers: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """pytest in this process, as plain `pytest probes` in the checkout starts (its refusals come before any
    collection); the rows of PYTEST_CHILD run it in a child process too."""
    expected = PYTEST[name]
    write_cluster_files(tmp_path, servers)
    for variable, value in expected.env.items():
        monkeypatch.setenv(variable, value)
    monkeypatch.chdir(REPO)
    code = pytest.main(collect_only_argv(expected, tmp_path))
    out, err = capfd.readouterr()
    assert_pytest_refused(int(code), expected, out, err)


@pytest.mark.parametrize("name", PYTEST_CHILD)
def test_real_pytest_refuses_bad_options_without_a_traceback(
    name: str, tmp_path: Path, servers: tuple[str, str]
) -> None:
    expected = PYTEST[name]
    write_cluster_files(tmp_path, servers)
    proc, _ = _child([sys.executable, "-m", "pytest", *collect_only_argv(expected, tmp_path)], tmp_path, expected.env)
    assert_pytest_refused(proc.returncode, expected, proc.stdout, proc.stderr)


def collect_only_argv(expected: Bad, tmp_path: Path) -> list[str]:
    """pytest's arguments for a bad-option row: collect the probes only, with the row's options and a run dir."""
    options = expand(expected.argv, tmp_path)
    return ["probes", "-p", "no:cacheprovider", "--collect-only", "-q", *options, "--run-dir", str(tmp_path / "runs")]


def assert_pytest_refused(code: int, expected: Bad, out: str, err: str) -> None:
    assert code == expected.code, out + err
    assert "Traceback" not in out + err
    assert re.search(r"(?i)\berror: ", err)
    assert expected.says in err, err


@pytest.mark.parametrize("name", sorted(name for name in MAKE if not renamed_by_the_makefile(MAKE[name])))
def test_make_refuses_and_says_which_class_of_failure(
    name: str,
    tmp_path: Path,
    servers: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`make <target> VAR=value ...` as the Makefile runs it: every variable given on make's command line exported
    as given, then `python -m harness make <target>` (harness/doors/make_variables.py reads them), here in this
    process; the rows of MAKE_CHILD run the real make. The harness exits with the code of the class its error line
    names (make itself then exits 2 for all)."""
    expected = MAKE[name]
    write_cluster_files(tmp_path, servers)
    target, *variables = expand(expected.argv, tmp_path)
    for variable, value in [("RUNS", str(tmp_path / "nothing")), *(v.split("=", 1) for v in variables)]:
        monkeypatch.setenv(variable, value)
    reached = forbid(monkeypatch)
    monkeypatch.chdir(tmp_path)  # a default run or report directory would be made here, not in the checkout
    done = harness_here("make", target, capsys=capsys)
    code, out, err = done.returncode, done.stdout, done.stderr
    (line,) = [line for line in err.splitlines() if line.startswith("error: ")]
    kind = next((k for k in refusal.EXIT_CODE if line.startswith(f"error: {k}: ")), None)
    assert code == (refusal.EXIT_CODE[kind] if kind else code) != 0, line  # a class named is the code exited with
    assert "Traceback" not in out + err
    assert expected.says in err, err
    assert reached == []


@pytest.mark.parametrize("name", MAKE_CHILD)
def test_real_make_refuses_and_says_which_class_of_failure(name: str, tmp_path: Path, servers: tuple[str, str]) -> None:
    expected = MAKE[name]
    write_cluster_files(tmp_path, servers)
    make = ["make", "--no-print-directory", "STAMP=", f"PY={sys.executable}", f"RUNS={tmp_path / 'nothing'}"]
    proc, calls = _child([*make, *expand(expected.argv, tmp_path)], tmp_path, expected.env)
    assert proc.returncode == expected.code, proc.stdout + proc.stderr  # make's own 2 for every failure
    assert "Traceback" not in proc.stdout + proc.stderr
    assert expected.says in proc.stderr, proc.stderr
    assert calls == []


def test_every_row_of_a_child_process_is_a_row_of_its_table() -> None:
    assert set(SUBPROCESS) <= set(HARNESS) and set(PYTEST_CHILD) <= set(PYTEST) and set(MAKE_CHILD) <= set(MAKE)
    assert {name for name in MAKE if renamed_by_the_makefile(MAKE[name])} <= set(MAKE_CHILD)


def test_at_least_25_distinct_bad_inputs_are_covered() -> None:
    inputs = {b.argv for b in HARNESS.values()} | {(*b.argv, *b.env.items()) for b in PYTEST.values()}
    assert len(inputs) + len(MAKE) >= 25
