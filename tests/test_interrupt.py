"""Ctrl-C during a build, a node image or the engine's start: exit 130, one line saying what was
stopped, no traceback, nothing left that a later run would take for finished. The slow steps are stood in:
a `go` that sleeps (a real SIGINT reaches the real entry point in a child process), or a step monkeypatched
to raise KeyboardInterrupt."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.base.errors import INTERRUPTED
from harness.base.process import Completed
from harness.base.versions import Release
from harness.clusters.kind import engine
from harness.clusters.local import cluster as local
from harness.clusters.local.teardown import StopReport
from harness.doors import cli
from harness.doors.commands import probe as probe_command
from harness.gobuild import go as go_command
from harness.gobuild import kubernetes as build_module
from harness.nodeimage import base_rootfs

pytestmark = pytest.mark.mostly_waits  # on signals, the processes they stop and their timers

if TYPE_CHECKING:
    from tests.conftest import NodeImageBuild

REPO = Path(__file__).resolve().parent.parent


def stand_in_build_steps(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Everything build_kubernetes asks before `go build` answered at once (no proxy, no toolchain)."""
    source = tmp_path / "source"
    source.mkdir()
    (source / "go.mod").write_text("module k8s.io/kubernetes\n")
    generated = source / "pkg" / "generated" / "openapi" / "zz_generated.openapi.go"  # a tag from 1.24 on
    generated.parent.mkdir(parents=True)
    generated.write_text("package openapi\n")
    monkeypatch.setattr(build_module, "check_go", lambda: "go version go1.26.8 linux/amd64")
    monkeypatch.setattr(build_module, "resolve_module", lambda version, tools: {"Dir": str(source)})
    monkeypatch.setattr(build_module, "upstream_go_version", lambda source: "1.20.5")
    monkeypatch.setattr(build_module, "choose_toolchain", lambda upstream, env, cwd, policy: ("go1.20.5", ""))
    monkeypatch.setattr(build_module, "substitute_refused_twins", lambda *a: ({}, {}))


def test_an_interrupted_build_leaves_no_binaries_and_is_not_reused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    stand_in_build_steps(monkeypatch, tmp_path)

    def go(step: list[str], directory: Path, env: Any, out: Any, stop: Any = None) -> int:
        if step[:2] == ["go", "build"]:  # half the binaries written, then Ctrl-C
            (directory / "bin").mkdir(exist_ok=True)
            (directory / "bin" / "kube-apiserver").write_bytes(b"\x7fELF")
            raise KeyboardInterrupt
        return 0

    monkeypatch.setattr(build_module, "run_step", go)
    tools = tmp_path / "tools"
    with pytest.raises(KeyboardInterrupt):
        build_module.build_kubernetes(Release.parse("1.27.3"), tools=tools, log_progress=False)
    directory = tools / "kubernetes" / "v1.27.3"
    assert not (directory / "bin").exists() and not (directory / "build.json").exists()
    assert build_module.existing_build(Release.parse("1.27.3"), tools) is None


def test_a_background_build_step_ends_when_its_command_is_stopped(tmp_path: Path) -> None:
    """make matrix builds ahead on a thread no Ctrl-C reaches, its go in a session of its own: once the matrix is
    interrupted it sets `stop`, and the running step's whole process group is killed (else the matrix would wait
    for the build to finish before it could exit)."""
    stop = threading.Event()
    pid_file = tmp_path / "child.pid"
    step = ["sh", "-c", f"sleep 300 & echo $! > {pid_file}; wait"]
    threading.Timer(0.5, stop.set).start()
    started = time.monotonic()
    with (tmp_path / "build.log").open("w") as out, pytest.raises(go_command.BuildStopped):
        go_command.run_step(step, tmp_path, dict(os.environ), out, stop)
    # Waiting for the step would take its 300 s sleep; stopping it, well under a second idle and seconds under
    # load: a fifth of the sleep tells the two apart whatever the machine's speed.
    assert time.monotonic() - started < 60
    child = int(pid_file.read_text())
    # SIGKILL is delivered when the child is next scheduled: on a busy machine it can still show R for a while.
    deadline = time.monotonic() + 60
    while not ended(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ended(child), f"the build step's child {child} still runs after its process group was killed"


def ended(pid: int) -> bool:
    """Gone, or a zombie waiting for its reaper."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][:1] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def test_binaries_without_build_json_are_not_a_build(tmp_path: Path) -> None:
    directory = tmp_path / "kubernetes" / "v1.27.3" / "bin"
    directory.mkdir(parents=True)
    for component in build_module.NODE_IMAGE_COMPONENTS:
        (directory / component).write_bytes(b"\x7fELF")
    assert build_module.existing_build(Release.parse("1.27.3"), tmp_path) is None
    (directory.parent / "build.json.partial").write_text("{}")
    assert build_module.existing_build(Release.parse("1.27.3"), tmp_path) is None


SIGINT_BUILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from harness.doors import cli
    from harness.gobuild import kubernetes as build_module
    from harness.clusters.local import host as local_host
    from harness.clusters.local import teardown as local_teardown

    tools = Path(sys.argv[1])
    local_host.check_host = lambda: []
    local_teardown.running_clusters = lambda root=None: []
    from harness.clusters.local import clusters as local_clusters

    local_clusters.existing_build = lambda version: None
    local_clusters.check_go = lambda: "go version go1.26.8 linux/amd64"
    local_clusters.resolve_module = lambda version: {}
    source = tools / "source"
    source.mkdir(parents=True)
    (source / "go.mod").write_text("module k8s.io/kubernetes\\n")
    build_module.openapi.lacks_openapi = lambda source: False  # a tag from 1.24 on: nothing to generate
    build_module.check_go = lambda: "go version go1.26.8 linux/amd64"
    build_module.resolve_module = lambda version, tools: {"Dir": str(source)}
    build_module.upstream_go_version = lambda source: "1.20.5"
    build_module.choose_toolchain = lambda upstream, env, cwd, policy: ("go1.20.5", "")
    build_module.substitute_refused_twins = lambda *a: ({}, {})
    local_clusters.build_kubernetes = lambda version: build_module.build_kubernetes(version, tools=tools)
    sys.exit(cli.main(["probe", "--cluster", "local", "--version", "1.27.3", "--run-dir", str(tools / "runs")]))
    """
)

STAND_IN_GO = """#!/bin/sh
# stands in for go: `go build` writes one binary, then runs (with a child) until it is stopped
if [ "$1" = build ]; then
  mkdir -p bin && echo ELF > bin/kube-apiserver
  echo $$ > "$PLP_TEST_GO_PID"
  sleep 300 &
  echo $! > "$PLP_TEST_GO_PID.child"
  wait
fi
"""


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_during_a_kubernetes_build_exits_130_with_one_line_and_stops_go(
    tmp_path: Path, stop: signal.Signals
) -> None:
    """SIGTERM (CI, `kill`) to the harness alone takes Ctrl-C's path (harness/base/process.py sigterm_as_interrupt)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "go").write_text(STAND_IN_GO)
    (bin_dir / "go").chmod(0o755)
    pid_file = tmp_path / "go.pid"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PLP_TEST_GO_PID": str(pid_file)}
    process = subprocess.Popen(
        [sys.executable, "-c", SIGINT_BUILD, str(tmp_path / "tools")],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not pid_file.with_name("go.pid.child").is_file() and process.poll() is None:
        assert time.monotonic() < deadline, "the stand-in go build never started"
        time.sleep(0.1)
    process.send_signal(stop)
    _, err = process.communicate(timeout=600)
    assert process.returncode == INTERRUPTED, err
    assert err.strip().splitlines() == [
        "interrupted: stopped the Kubernetes v1.27.3 build: its go processes were stopped and its unfinished "
        "binaries removed (the Go caches stay)"
    ]
    for pid in (int(pid_file.read_text()), int(pid_file.with_name("go.pid.child").read_text())):
        # SIGKILL takes effect when the process is next scheduled: on a loaded machine it was still seen sleeping
        # (S) just after the harness had exited 130; a go left running would still be there after the bound.
        deadline = time.monotonic() + 60
        while not ended(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ended(pid), f"go stand-in {pid} still runs after the harness stopped its build"
    directory = tmp_path / "tools" / "kubernetes" / "v1.27.3"
    assert not (directory / "bin").exists() and not (directory / "build.json").exists()


def test_ctrl_c_before_anything_started_still_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(argv: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(probe_command, "check_probe_input", interrupted)
    assert cli.main(["probe", "--version", "1.27"]) == INTERRUPTED
    assert capsys.readouterr().err == "interrupted: stopped before any cluster, build or download had started\n"


def test_ctrl_c_during_a_node_image_build_removes_its_unfinished_base(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("harness.nodeimage.base_rootfs.shutil.which", lambda tool: f"/usr/sbin/{tool}")

    def debootstrap(argv: list[str], stdin: bytes | None = None, timeout: float = 0) -> str:
        Path(argv[-1], "etc").mkdir(parents=True)  # half a root file system
        raise KeyboardInterrupt

    monkeypatch.setattr(base_rootfs, "run", debootstrap)
    with pytest.raises(KeyboardInterrupt):
        base_rootfs.base_rootfs(False, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_during_make_node_image_exits_130_naming_the_image(
    node_image_build_raising: NodeImageBuild, capsys: pytest.CaptureFixture[str]
) -> None:
    node_image_build_raising("v0.20.0", KeyboardInterrupt())  # kind v0.20.0's components, nothing to resolve
    assert cli.main(["node-image", "--version", "1.27.3", "--source", "modules"]) == INTERRUPTED
    err = capsys.readouterr().err
    assert err.startswith("interrupted: stopped building node image plp-node:v1.27.3-kind.v0.20.0: its unfinished")
    assert len(err.splitlines()) == 1


def test_ctrl_c_while_the_engine_starts_stops_its_dockerd(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dockerd").write_text("#!/bin/sh\nexec sleep 300\n")  # a daemon that never answers
    (bin_dir / "docker").write_text("#!/bin/sh\nexit 1\n")
    for tool in ("dockerd", "docker"):
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr("harness.clusters.kind.engine.os.geteuid", lambda: 0)
    started: list[int] = []
    real_popen = subprocess.Popen

    argvs: list[list[str]] = []

    def popen(*args: Any, **kwargs: Any) -> Any:
        process = real_popen(*args, **kwargs)
        started.append(process.pid)
        argvs.append(list(args[0]))
        return process

    asked: list[list[str]] = []

    def docker(argv: Any, timeout: float) -> Completed:
        """No daemon answers before the start; Ctrl-C comes while the suite waits for its own."""
        asked.append(list(argv))
        if len(asked) > 1:
            raise KeyboardInterrupt
        return Completed(tuple(argv), 1, "", "Cannot connect to the Docker daemon")

    monkeypatch.setattr("harness.clusters.kind.engine.subprocess.Popen", popen)
    with pytest.raises(KeyboardInterrupt) as interrupt:
        engine.start_engine(tmp_path / "engine", runner=docker)
    assert str(interrupt.value) == f"dockerd pid {started[0]} stopped"
    assert not Path(f"/proc/{started[0]}").exists()
    assert "--iptables=false" in argvs[0]  # the host's FORWARD policy is not the engine's to change
    monkeypatch.setattr(engine, "start_engine", lambda: (_ for _ in ()).throw(interrupt.value))
    assert engine.main(["start"]) == INTERRUPTED
    said = capsys.readouterr().err
    assert said == f"interrupted: stopped starting the suite's engine (dockerd pid {started[0]} stopped)\n"


def test_an_interrupted_local_cluster_start_stops_what_it_started(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    stopped: list[str] = []
    cluster = local.LocalCluster("plp-t", build_module.Build("v1.27.3", tmp_path, {}), tmp_path / "logs", tmp_path)

    def start_all(self: local.LocalCluster, timeout_s: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(local.LocalCluster, "_start_all", start_all)

    def stop_cluster(state: Path) -> StopReport:
        stopped.append(state.name)
        return StopReport(state.name)

    monkeypatch.setattr(local, "stop_cluster", stop_cluster)
    with pytest.raises(KeyboardInterrupt):
        cluster.start()
    assert stopped == ["plp-t"] and not cluster.started


VERSION_RUN = textwrap.dedent(
    """
    # stands in for one version's `harness probe`: on SIGINT or SIGTERM it takes 0.5 s to clean up (a cluster's
    # removal), then writes what stopped it
    import signal, sys, time
    from pathlib import Path

    out = Path(sys.argv[1])
    got = []
    signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
    out.with_suffix(".started").write_text("")
    waited_until = time.monotonic() + 90  # bounded: a test that fails must not leave it running
    while not got and time.monotonic() < waited_until:
        time.sleep(0.05)
    time.sleep(0.5)
    out.write_text(" ".join(signal.Signals(s).name for s in got))
    sys.exit(130)
    """
)

MATRIX = textwrap.dedent(
    """
    # stands in for `make matrix`: one version run through harness/base/process.py, then the next, unless stopped
    import sys
    from harness.base.process import run_through_interrupt, sigterm_as_interrupt

    sigterm_as_interrupt()
    try:
        for out in sys.argv[2:]:
            run_through_interrupt([sys.executable, "-c", sys.argv[1], out])
    except KeyboardInterrupt:
        sys.exit(130)
    """
)


@pytest.mark.parametrize("stop", ["ctrl-c", "sigterm"])
def test_a_stopped_matrix_lets_its_running_version_clean_up_and_starts_no_other(tmp_path: Path, stop: str) -> None:
    """Ctrl-C (the terminal's SIGINT to the whole group) or SIGTERM to the matrix alone: the version running gets
    the signal once, finishes its cleanup (Python's subprocess.call would kill it 0.25 s after a Ctrl-C, leaving its
    cluster), and the matrix then stops as interrupted without starting the next version."""
    first, second = tmp_path / "first", tmp_path / "second"
    assert stop_a_matrix(MATRIX, [first, second], running=1, stop=stop) == INTERRUPTED
    assert first.read_text() == ("SIGINT" if stop == "ctrl-c" else "SIGTERM")
    assert not second.with_suffix(".started").exists()


def stop_a_matrix(program: str, outs: list[Path], running: int, stop: str) -> int | None:
    """Start a stand-in matrix over stand-in version runs writing to `outs`; once the first `running` have
    started, stop it with Ctrl-C (SIGINT to its whole group, as a terminal) or SIGTERM to it alone; its exit code."""
    matrix = subprocess.Popen(
        [sys.executable, "-c", program, VERSION_RUN, *map(str, outs)], cwd=REPO, start_new_session=True
    )
    deadline = time.monotonic() + 60
    while not all(out.with_suffix(".started").exists() for out in outs[:running]):
        assert matrix.poll() is None and time.monotonic() < deadline, "the stand-in version runs never started"
        time.sleep(0.05)
    if stop == "ctrl-c":
        os.killpg(matrix.pid, signal.SIGINT)
    else:
        matrix.send_signal(signal.SIGTERM)
    return matrix.wait(timeout=600)


KIND_MATRIX = textwrap.dedent(
    """
    # stands in for `make matrix` on kind: versions two at a time on worker threads (harness/axis/matrix.py)
    import sys
    from harness.axis import matrix
    from harness.base.process import run_through_interrupt, sigterm_as_interrupt

    def one(out):
        code = run_through_interrupt([sys.executable, "-c", sys.argv[1], out])
        return matrix.VersionResult(out, "stopped", code, "", 0.0)

    sigterm_as_interrupt()
    try:
        matrix.run_matrix(sys.argv[2:], 2, one)
    except KeyboardInterrupt:
        sys.exit(130)
    """
)


@pytest.mark.parametrize("stop", ["ctrl-c", "sigterm"])
def test_a_stopped_kind_matrix_lets_its_running_versions_clean_up_and_starts_no_other(
    tmp_path: Path, stop: str
) -> None:
    """Versions run on worker threads, where no signal handler runs: a SIGTERM to the matrix is passed on to each
    running version (before, it reached none of them, and the matrix waited for them to run to their end), and no
    queued version starts."""
    outs = [tmp_path / name for name in ("first", "second", "third")]
    assert stop_a_matrix(KIND_MATRIX, outs, running=2, stop=stop) == INTERRUPTED
    assert [out.read_text() for out in outs[:2]] == ["SIGINT" if stop == "ctrl-c" else "SIGTERM"] * 2
    assert not outs[2].with_suffix(".started").exists()


# A stand-in for a node image build (make node-image in a child harness): its work folder, a step that would take
# 300 s in its process group, and, on Ctrl-C, its unfinished work removed as make node-image removes it (STUBBORN:
# it ignores Ctrl-C, and so does its step, which it started with SIGINT ignored).
LONG_BUILD = textwrap.dedent(
    """
    import os, shutil, signal, subprocess, sys, time
    from pathlib import Path

    base, stubborn = Path(sys.argv[1]), sys.argv[2] == "stubborn"

    def stopped(signum, frame):
        shutil.rmtree(base / "work")  # as make node-image removes its unfinished work
        sys.exit(130)

    signal.signal(signal.SIGINT, signal.SIG_IGN if stubborn else stopped)
    (base / "work" / "rootfs").mkdir(parents=True)
    step = subprocess.Popen(["sleep", "300"])
    (base / "step.pid").write_text(str(step.pid))
    (base / "build.started").write_text(str(os.getpid()))
    step.wait()
    time.sleep(300)  # the step ended first (the same Ctrl-C): the handler comes next
    """
)


def started(path: Path, process: subprocess.Popen[bytes] | None = None) -> None:
    """Wait until `path` exists (the stand-in started), while `process` runs."""
    deadline = time.monotonic() + 60
    while not path.exists():
        assert (process is None or process.poll() is None) and time.monotonic() < deadline, f"{path} never came"
        time.sleep(0.05)


@pytest.mark.parametrize("stubborn", [False, True])
def test_a_build_run_until_stopped_is_stopped_by_its_process_group(tmp_path: Path, stubborn: bool) -> None:
    """make matrix's build ahead runs in a child on a thread no Ctrl-C reaches: once `stop` is set it gets SIGINT, as
    from a terminal, removes its unfinished work and ends; one that does not end within its time to clean up is
    killed with its whole process group (what it left is then removed by the caller: `cleaned` says which)."""
    from harness.base.process import StoppedChild, run_until_stopped

    stop = threading.Event()

    def stop_once_started() -> None:
        started(tmp_path / "build.started")
        stop.set()

    threading.Thread(target=stop_once_started, daemon=True).start()
    begun = time.monotonic()
    argv = [sys.executable, "-c", LONG_BUILD, str(tmp_path), "stubborn" if stubborn else "cooperative"]
    with (tmp_path / "build.log").open("w") as out, pytest.raises(StoppedChild) as stopped:
        run_until_stopped(argv, out, stop, cleanup_s=2.0)
    assert time.monotonic() - begun < 150  # half the step's 300 s: stopped, not waited for
    assert stopped.value.cleaned is not stubborn
    assert (tmp_path / "work").exists() is stubborn  # its own cleanup ran, unless it was killed
    assert gone(int((tmp_path / "step.pid").read_text())), "the build's step runs on after its group was stopped"


def gone(pid: int) -> bool:
    """The process ended, waited for up to 60 s: SIGKILL lands when it is next scheduled, seconds on a busy machine."""
    deadline = time.monotonic() + 60
    while not ended(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return ended(pid)


KIND_RUNTIME_MATRIX = textwrap.dedent(
    """
    # stands in for `make matrix VERSIONS=1.27.16:debian` on kind: its entry waits for its node image, which the real
    # KindRuntimeAxis builds ahead in a child (here a stand-in long build), on the matrix's build thread
    import argparse, shutil, sys, threading
    from pathlib import Path
    from harness.axis import matrix
    from harness.axis.release_axis import PlannedVersion
    from harness.base.process import sigterm_as_interrupt
    from harness.base.versions import Release
    from harness.clusters.kind import axis as kind_axis
    from harness.clusters.kind.node_images import ImageRuntime, image_runtime
    from harness.nodeimage import tags

    build, base, how = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    tags.node_image_record = lambda tag: base / "records" / (tag.replace(":", "-") + ".json")  # none built yet
    (base / "records").mkdir()
    ImageRuntime.command = lambda self, release: [sys.executable, "-c", build, str(base), how]
    kind_axis.BUILD_CLEANUP_S = 2.0
    kind_axis.discard_unfinished = lambda tag: (shutil.rmtree(base / "work"), (base / "discarded").write_text(tag))
    axis = kind_axis.KindRuntimeAxis(argparse.Namespace(source="modules"), image_runtime("debian"))
    release = Release.parse("1.27.16")
    plan = [PlannedVersion("1.27.16", release, runtime="debian")]
    stop = threading.Event()
    builder = matrix.Builder(lambda name: axis.ready(release, stop=stop, quiet=True), nice=0)
    never = lambda name, run_dir: [sys.executable, "-c", "open(sys.argv[1], 'w')", str(base / "probed")]
    sigterm_as_interrupt()
    try:
        matrix.run_versions(plan, 1, builder, base, never, None, on_stop=stop.set, say=lambda line: None)
    except KeyboardInterrupt:
        sys.exit(130)
    finally:
        builder.shutdown()
    """
)


@pytest.mark.parametrize(("stop", "how"), [("ctrl-c", "cooperative"), ("sigterm", "stubborn")])
def test_a_stopped_matrix_stops_its_runtimes_node_image_build_and_removes_its_unfinished_work(
    tmp_path: Path, stop: str, how: str
) -> None:
    """Before, Ctrl-C during a runtime entry's node image build waited for the build to end (it ran on a thread of
    the matrix, which no Ctrl-C reaches, and the builds were stopped only once every version had ended, the entry
    waiting for its build among them). Now the build runs in a child the matrix stops as soon as it is interrupted,
    by its process group: the matrix exits 130 promptly, the build's step is gone, its unfinished work removed (by
    the build itself, or after it is killed for not ending in time), and the entry's probes never start."""
    matrix = subprocess.Popen(
        [sys.executable, "-c", KIND_RUNTIME_MATRIX, LONG_BUILD, str(tmp_path), how], cwd=REPO, start_new_session=True
    )
    started(tmp_path / "build.started", matrix)
    begun = time.monotonic()
    if stop == "ctrl-c":
        os.killpg(matrix.pid, signal.SIGINT)  # as a terminal: the whole foreground group, but the build's own
    else:
        matrix.send_signal(signal.SIGTERM)
    try:
        assert matrix.wait(timeout=150) == INTERRUPTED  # half the build step's 300 s: stopped, not waited for
    finally:  # (a matrix that waits for the build is not left running after the test)
        for group in (matrix.pid, int((tmp_path / "build.started").read_text())):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
    assert time.monotonic() - begun < 150
    assert gone(int((tmp_path / "step.pid").read_text()))
    assert not (tmp_path / "work").exists()
    assert (tmp_path / "discarded").exists() is (how == "stubborn")  # killed: its work removed by the matrix
    assert not (tmp_path / "probed").exists()
    log = tmp_path / "records" / "plp-node-v1.27.16.build.log"
    assert log.is_file()  # the build's output, beside where its record would go
