"""The Docker engine under kind: can it start privileged containers here, and the suite's own engine if not.

kind's nodes are `--privileged` containers. Where root's bounding set lacks CAP_SYS_RESOURCE (nested VMs,
some CI sandboxes: CapBnd bit 24 clear in /proc/self/status), Docker asks runc for every capability and runc
refuses ("unable to apply caps: operation not permitted"), so kind fails after minutes of work with an
obscure message. `check_engine` says so before anything is created. The remedy, `make engine`, starts a
dockerd of the suite's own (data under `.tools/engine/`, the host's default socket) whose default runtime is
harness/clusters/kind/runc_without_sys_resource.py; `make engine-stop` stops it by the PID it wrote.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from harness.base import paths
from harness.base.errors import INTERRUPTED, PrerequisiteMissing
from harness.base.process import Runner, run_command

CAP_SYS_RESOURCE = 24
PREREQUISITE_MISSING = 3  # harness/doors/commands/refusal.py's exit code for this class of refusal
RUNTIME_NAME = "plp-runc"
WRAPPER = Path(__file__).resolve().parent / "runc_without_sys_resource.py"
ENGINE_DIR = paths.TOOLS / "engine"  # the suite's own dockerd: its data, its socket, its logs
EXEC_ROOT = Path("/run/plp-docker")
REMEDY = (
    "root on this host lacks CAP_SYS_RESOURCE, so Docker cannot start the privileged containers kind's nodes "
    "are (runc: 'unable to apply caps').\nremedy: stop the running dockerd and start the suite's engine with "
    "`make engine` (as root): a dockerd whose runtime drops CAP_SYS_RESOURCE from privileged containers "
    "(harness/clusters/kind/runc_without_sys_resource.py); `make engine-stop` stops it"
)


def lacks_sys_resource(status: str) -> bool:
    """True when a /proc/<pid>/status text shows a bounding set without CAP_SYS_RESOURCE."""
    for line in status.splitlines():
        if line.startswith("CapBnd:"):
            return not (int(line.split()[1], 16) >> CAP_SYS_RESOURCE) & 1
    return False


def default_runtime(runner: Runner) -> str | None:
    """The answering daemon's default runtime (`plp-runc` for the suite's engine); None when none answers."""
    answer = runner(["docker", "info", "--format", "{{.DefaultRuntime}}"], 20)
    return answer.stdout.strip() if answer.returncode == 0 else None


def missing_wrapper(runner: Runner) -> str | None:
    """The suite's runtime wrapper the answering engine was started with, when that file is gone (the engine was
    started from a checkout whose layout has changed since): kind's nodes would then fail to start. Else None."""
    answer = runner(["docker", "info", "--format", "{{json .Runtimes}}"], 20)
    if answer.returncode != 0:
        return None
    try:
        runtimes = json.loads(answer.stdout or "{}")
    except json.JSONDecodeError:
        return None
    path = str((runtimes.get(RUNTIME_NAME) or {}).get("path") or "")
    return path if path and not Path(path).is_file() else None


STALE_ENGINE = (
    "the suite's engine runs a runtime wrapper that is no longer there ({path}): it was started from another "
    "layout of the suite; restart it with `make engine-stop && make engine`"
)


def engine_is_local() -> bool:
    """The daemon runs on this host (its capabilities are this host's): no DOCKER_HOST, or a unix socket."""
    host = os.environ.get("DOCKER_HOST", "")
    return not host or host.startswith("unix://")


def check_engine(runner: Runner = run_command, status_file: Path = Path("/proc/self/status")) -> None:
    """Refuse to start kind on a local engine that cannot run privileged containers here (no cluster made)."""
    if not engine_is_local() or not status_file.is_file() or not lacks_sys_resource(status_file.read_text()):
        return
    runtime = default_runtime(runner)
    if runtime == RUNTIME_NAME:
        if gone := missing_wrapper(runner):
            raise PrerequisiteMissing(STALE_ENGINE.format(path=gone))
        return
    raise PrerequisiteMissing(REMEDY + f"\n(the engine's default runtime is {runtime or 'unknown'})")


# Debian's package with dockerd and the docker CLI (the engine's runtime is the suite's wrapper around runc).
ENGINE_PACKAGE = "docker.io"


def engine_problem(which: Callable[[str], str | None] = shutil.which) -> str | None:
    """What this host lacks to run the suite's engine (None when nothing), before anything starts."""
    missing = [tool for tool in ("dockerd", "docker") if not which(tool)]
    if not missing:
        return None
    return (
        f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not on PATH: the suite's engine is "
        f"Debian's Docker engine with a runc wrapper of its own (apt-get install {ENGINE_PACKAGE})"
    )


def start_engine(
    engine_dir: Path = ENGINE_DIR, runner: Runner = run_command, which: Callable[[str], str | None] = shutil.which
) -> str:
    """Start the suite's dockerd, unless one answers already; returns what was done."""
    if problem := engine_problem(which):
        raise PrerequisiteMissing(problem)
    answering = default_runtime(runner)
    if answering is not None:
        if answering == RUNTIME_NAME:
            if gone := missing_wrapper(runner):
                raise PrerequisiteMissing(STALE_ENGINE.format(path=gone))
            return "the suite's engine is running already"
        raise PrerequisiteMissing(
            "a Docker daemon that is not the suite's runs already; stop it first (the suite never stops it for you)"
        )
    if os.geteuid() != 0:
        raise PrerequisiteMissing("starting a Docker daemon needs root")
    engine_dir.mkdir(parents=True, exist_ok=True)
    Path("/lib/modules").mkdir(parents=True, exist_ok=True)  # kind mounts it into every node
    log = (engine_dir / "dockerd.log").open("a")
    process = subprocess.Popen(
        [
            "dockerd",
            "--data-root",
            str(engine_dir / "docker"),
            "--exec-root",
            str(EXEC_ROOT),
            "--pidfile",
            str(engine_dir / "dockerd.pid"),
            "--add-runtime",
            f"{RUNTIME_NAME}={WRAPPER}",
            "--default-runtime",
            RUNTIME_NAME,
            # Docker's own iptables management sets the host's FORWARD policy to DROP and leaves it so after it
            # stops; a local cluster's bridged pod traffic would then meet it. kind needs none of it here: its
            # nodes share one bridge and nothing is pulled (seen live: kind v1.27.4, 28 of 28, two-node cluster too).
            "--iptables=false",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise PrerequisiteMissing(f"dockerd exited with {process.returncode}; see {engine_dir / 'dockerd.log'}")
            if default_runtime(runner) == RUNTIME_NAME:
                return f"started the suite's engine (dockerd pid {process.pid}; log {engine_dir / 'dockerd.log'})"
            time.sleep(1)
    except KeyboardInterrupt:  # a half-started engine is not left behind
        process.terminate()
        process.wait(30)
        raise KeyboardInterrupt(f"dockerd pid {process.pid} stopped") from None
    raise PrerequisiteMissing(f"dockerd did not answer within 60 s; see {engine_dir / 'dockerd.log'}")


def stop_engine(engine_dir: Path = ENGINE_DIR) -> str:
    """Stop the suite's dockerd by the PID it wrote (never another daemon)."""
    pid_file = engine_dir / "dockerd.pid"
    if not pid_file.is_file():
        return "the suite's engine is not running"
    pid = int(pid_file.read_text().strip())
    try:
        os.kill(pid, 15)
    except ProcessLookupError:
        pid_file.unlink(missing_ok=True)
        return "the suite's engine was not running (stale pid file removed)"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.5)
    return f"stopped the suite's engine (dockerd pid {pid})"


def main(argv: list[str]) -> int:
    """`python -m harness.clusters.kind.engine start|stop|check`."""
    action = argv[0] if argv else ""
    try:
        if action == "start":
            print(start_engine())
        elif action == "stop":
            print(stop_engine())
        elif action == "check":
            check_engine()
            print("the engine can start privileged containers (or this host needs nothing special)")
        else:
            print("usage: python -m harness.clusters.kind.engine start|stop|check", file=sys.stderr)
            return 2
    except PrerequisiteMissing as err:
        print(f"error: prerequisite missing: {err}", file=sys.stderr)
        return PREREQUISITE_MISSING
    except KeyboardInterrupt as interrupt:
        doing = {"start": "starting", "stop": "stopping", "check": "checking"}[action]
        detail = f" ({interrupt})" if str(interrupt) else ""
        print(f"interrupted: stopped {doing} the suite's engine{detail}", file=sys.stderr)
        return INTERRUPTED
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
