"""make probe: every input and the host checked in seconds, then the probes, on a cluster made here (kind or local)
or an existing one; with PARALLEL, on one cluster this process makes and removes, as pytest-xdist workers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness import inputs, paths, selection
from harness.cluster_gate import READY, ClusterGate
from harness.commands.refusal import (
    BAD,
    MISSING,
    NO_TESTS_COLLECTED,
    Refused,
    host_refusal,
    refuse,
    selection_problem,
    stopping,
)
from harness.engine import check_engine
from harness.errors import ClusterFailed, PrerequisiteMissing
from harness.families import families
from harness.inputs import BadInput
from harness.kind import INSTALL_KIND, check_docker, check_prerequisites
from harness.kind_install import KindInstallError, ensure_kind
from harness.local import host as local_host
from harness.local import teardown as local_teardown
from harness.local.build import (
    BuildError,
    build_kubernetes,
    build_summary,
    check_go,
    existing_build,
    resolve_module,
)
from harness.process import wait_through_interrupt
from harness.run import Run
from harness.versions import KubeVersion, NodeImage

if TYPE_CHECKING:
    from harness import schedule
    from harness.lifecycle import ClusterProvider

AUTO = "auto"


def run_probe_command(args: argparse.Namespace) -> int:
    """make probe: every input checked, then the host (Docker and kind, or a local cluster's needs and its build),
    then the probes: in this process become pytest, or with PARALLEL on a cluster made here."""
    try:
        image = check_probe_input(args)
    except Refused as refused:
        return refuse(refused.kind, refused.problem)
    kind_line = ""
    if args.cluster == "local" and not args.kubeconfig:
        if code := prepare_local(args):
            return code
    elif image is not None:
        code, kind_line = prepare_kind(args, image)
        if code != 0:
            return code
    if args.parallel == "":  # the default: auto on a local cluster, one probe at a time otherwise
        args.parallel = AUTO if args.cluster == "local" and not args.kubeconfig else 1
    if (args.parallel == AUTO or args.parallel > 1) and not args.kubeconfig:
        return run_parallel(args, image, kind_line)
    command = pytest_argv(args)
    print("+ " + " ".join(command), flush=True)
    # Become pytest: Ctrl-C and CI's SIGTERM then reach it directly and its teardown cleans up; its
    # exit code is make's.
    os.execv(command[0], command)


def check_probe_input(args: argparse.Namespace) -> NodeImage | None:
    """Every check of make probe's input, in seconds and before anything starts; raises BadInput or Refused.

    Returns the kind node image to run when a kind cluster is to be made.
    """
    if not args.kubeconfig:
        inputs.check_existing_cluster(args.kubeconfig, args.context)  # a CONTEXT without KUBECONFIG_FILE
    inputs.check_run_dir(args.run_dir)
    inputs.check_apiserver_restart(args.restart_apiserver_after, args.cluster == "local" and not args.kubeconfig)
    image: NodeImage | None = None
    if args.kubeconfig:
        if args.version or args.image or args.cluster == "local":
            raise BadInput(
                "KUBECONFIG_FILE (--kubeconfig) probes an existing cluster, VERSION, IMAGE and CLUSTER=local make a "
                "new one: give one or the other",
            )
        if args.parallel not in ("", 1):
            raise BadInput("PARALLEL runs the probes on a cluster make probe creates itself, not on an existing one")
        inputs.check_existing_cluster(args.kubeconfig, args.context)
        try:  # once, before any probe: a server that cannot be reached is one line, not a traceback per probe
            print(f"API server of context {args.context}: {inputs.check_api_server(args.kubeconfig, args.context)}")
        except PrerequisiteMissing as err:
            raise Refused(MISSING, str(err)) from None
    elif args.cluster == "local":
        if args.image:
            raise BadInput("IMAGE is a kind node image; a local cluster (CLUSTER=local) takes VERSION only")
        if not args.version:
            raise BadInput("no VERSION given: a local cluster is built from one release (VERSION=1.27.3)")
        args.version = inputs.local_release(args.version)
        print(inputs.check_manifests_for(KubeVersion.parse(args.version)))
    else:
        if args.version and args.image:
            raise BadInput(
                f"VERSION ({args.version}) and IMAGE ({args.image}) both name the node image: give one (IMAGE runs "
                "an image of your own, VERSION the pinned one)"
            )
        image = inputs.kind_image(args.version or None, args.image or None)
        if image.digest is None and not image.reference.startswith(f"{paths.NODE_IMAGE_REPOSITORY}:"):
            print(
                f"warning: {image.reference} is not pinned by digest; kind asks for @sha256 digests because tags "
                "are rebuilt (kind#3853), so what runs may not be what this name meant before",
                file=sys.stderr,
            )
        print(inputs.check_manifests_for(image.kubernetes))
    if args.probe and (refused := selection_problem(args.probe, args.run_dir)):
        raise Refused(*refused)
    return image


def local_host_refusal(one_at_a_time: bool) -> int | None:
    """The refusal's exit code when a local cluster cannot run here (what is missing, with the one apt-get line
    that installs it), or, with one_at_a_time, when one of the suite's is already running; None when it can."""
    if host_problems := local_host.check_host():
        return refuse(MISSING, host_refusal("a local cluster cannot run here", host_problems))
    if one_at_a_time and (running := local_teardown.running_clusters()):
        return refuse(
            MISSING,
            f"a local cluster of the suite is already running ({', '.join(running)}); one at a time "
            "(make clean stops it)",
        )
    return None


def prepare_local(args: argparse.Namespace) -> int:
    """Check the host for a local cluster in seconds, then build (or reuse) the release: 0 when ready."""
    if refused := local_host_refusal(one_at_a_time=True):
        return refused
    if existing_build(args.version) is None:
        try:
            print(check_go())
            resolve_module(args.version)
        except BuildError as err:
            return refuse(BAD if "does not serve" in str(err) else MISSING, str(err))
    try:
        stopped = "its go processes were stopped and its unfinished binaries removed (the Go caches stay)"
        with stopping(f"the Kubernetes {args.version} build: {stopped}"):
            build = build_kubernetes(args.version)
    except BuildError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"Kubernetes {build.version}: {build_summary(build.record)} ({build.directory})")
    return 0


def prepare_kind(args: argparse.Namespace, image: NodeImage) -> tuple[int, str]:
    """Docker and the kind that built the image, checked (and that kind installed) in seconds: (0 or the
    refusal's exit code, kind's version line)."""
    try:
        check_docker()
        check_engine()
    except PrerequisiteMissing as err:
        return refuse(MISSING, f"{err}\n  {kind_status(image.kind_release)}"), ""
    if args.kind_bin == "kind" and image.kind_release:
        try:
            args.kind_bin = ensure_kind(image.kind_release)
        except KindInstallError as err:
            return refuse(MISSING, str(err)), ""
    try:
        kind_line = check_prerequisites(kind_bin=args.kind_bin)
    except PrerequisiteMissing as err:
        return refuse(MISSING, str(err)), ""
    print(f"node image {image.reference} (built by kind {image.kind_release or 'unknown'}); {kind_line}")
    if image.kind_release and image.kind_release not in kind_line:
        print(
            f"warning: this image was built for kind {image.kind_release}; kind supports an image only with "
            "the release that built it (best effort otherwise)",
            file=sys.stderr,
        )
    return 0, kind_line


def kind_status(release: str | None) -> str:
    if shutil.which("kind"):
        return "kind is on PATH"
    if release:
        return f"kind is not on PATH: once Docker works, make probe installs kind {release} (checksum-verified) itself"
    return f"kind is not on PATH: {INSTALL_KIND}"


def pytest_argv(args: argparse.Namespace, target: Sequence[str] | None = None) -> list[str]:
    """pytest's command line; `target` replaces the cluster options (the parallel mode's own cluster)."""
    argv = [sys.executable, "-m", "pytest", str(paths.REPO / "probes"), "-p", "no:cacheprovider"]
    if target is not None:
        argv += list(target)
        argv += ["--keep-cluster"] if args.keep_cluster else []  # there: keep the failed probes' namespaces
    elif args.kubeconfig:
        argv += ["--kubeconfig", args.kubeconfig] + (["--context", args.context] if args.context else [])
    elif args.cluster == "local":
        argv += ["--local-version", args.version]
        argv += ["--keep-cluster"] if args.keep_cluster else []
    else:
        argv += ["--kind-bin", args.kind_bin]
        argv += ["--kind-version", args.version] if args.version else []
        argv += ["--kind-image", args.image] if args.image else []
        argv += ["--keep-cluster"] if args.keep_cluster else []
    # always said, so that a REPEAT in the environment (make exports its command line: make bisect REPEAT=3 runs
    # each release up to 3 times, each time the probe once) is not read by the plugin in its place
    argv += ["--repeat", str(args.repeat)]
    if args.restart_apiserver_after is not None:
        argv += ["--restart-apiserver-after", str(args.restart_apiserver_after)]
    argv += ["-k", args.probe] if args.probe else []
    argv += ["--run-dir", args.run_dir]
    return argv + list(args.pytest_args)


def run_parallel(args: argparse.Namespace, image: NodeImage | None, kind_line: str) -> int:
    """One cluster (kind, or local with --cluster local), created here through the one lifecycle of
    harness/lifecycle.py; the probes on it `--parallel` at a time as pytest-xdist workers.

    The cluster is this process's: it is removed after pytest ends (also after Ctrl-C or SIGTERM, which
    pytest receives too and answers with its own cleanup first), unless --keep-cluster.
    """
    # The Kubernetes client comes with the lifecycle (a few tenths of a second): imported here, so that a refusal
    # of bad input before this point does not wait for it.
    from harness.lifecycle import KindProvider, LocalProvider, cluster_life

    run = Run.start(Path(args.run_dir))
    run.write_provenance(parallel=args.parallel)
    cluster_kind, version = ("kind", image.kubernetes.text) if image is not None else ("local", args.version)
    plan, schedule_file, with_shutdown_probes = plan_workers(args, run.directory, cluster_kind, version)
    print(f"PARALLEL={args.parallel}: {plan.why()}", flush=True)
    provider: ClusterProvider
    if image is None:
        build = existing_build(args.version)
        assert build is not None  # built by main() before
        name = paths.cluster_name(KubeVersion.parse(args.version).minor, run.run_id)
        provider = LocalProvider.for_build(name, build, run.directory / "local-logs")
        context, node_access = provider.context or name, ["--local-state", str(provider.cluster.state)]
    else:
        name = paths.cluster_name(image.kubernetes.minor, run.run_id)
        provider = KindProvider.for_image(image, name, run.directory / "kubeconfig", args.kind_bin, kind_line)
        context, node_access = f"kind-{name}", ["--kind-nodes"]
    started = time.monotonic()
    # The node-shutdown probes (kind only) need their own cluster, which their own pytest makes (the fixtures'
    # kind mode, harness/node_shutdown.py): started first, so that it comes up beside this one and its probes
    # run while the others do; their output goes to a log, whose end is printed after.
    shutdown = _start_shutdown_probes(args, run) if image is not None and with_shutdown_probes else None
    code = 1
    if shutdown is not None and not any(plan.shares):  # PROBE chose only node-shutdown probes: no cluster here
        try:
            with stopping("the node-shutdown probes: their own cluster is removed by their pytest"):
                code = _shutdown_probes_ended(shutdown, NO_TESTS_COLLECTED)
        finally:
            run.finish("passed" if code == 0 else "failed")
        return code
    # The probes' pytest starts now: its workers start (about 0.7 s of CPU each) while the cluster is made, and wait
    # at the gate until it is ready (harness/cluster_gate.py). It runs in a session of its own, so that a Ctrl-C
    # reaches it through this process (wait_through_interrupt, _stop_probes) and never a worker still starting up,
    # which would print a traceback (seen live: Ctrl-C 5 s into a local start-up).
    gate = ClusterGate(run.directory / "cluster-gate")
    target = ["--kubeconfig", str(provider.kubeconfig), "--context", context, *node_access]
    target += ["--cluster-gate", str(gate.path)]
    planned = ["-n", str(plan.workers), "--schedule", str(schedule_file)]
    command = pytest_argv(args, [*target, "--run-id", run.run_id, *planned, "-m", "not node_shutdown"])
    print("+ " + " ".join(command), flush=True)
    probes = subprocess.Popen(command, start_new_session=True)
    try:

        def stopped() -> str:
            facts = run.provenance
            if facts.get("cluster_kept"):
                outcome = "the cluster was left running (KEEP)"
            elif error := facts.get("cluster_delete_error"):
                outcome = f"the cluster could not be removed ({str(error)[:200]}); make clean removes it"
            elif facts.get("cluster_deleted") or "cluster_ready_after_s" not in facts:
                outcome = "the cluster was stopped and removed"  # (or, stopped while it was made, removed then)
            else:
                outcome = "the cluster may be left: its removal did not finish; make clean removes it"
            return f"the run on {provider.kind} cluster {provider.name}: {outcome}"

        with (
            stopping(stopped),
            cluster_life(
                provider, run.write_provenance, args.keep_cluster, run.directory / "kind-logs", lambda: code != 0
            ),
        ):
            gate.open(READY)
            startup = time.monotonic() - started
            if "preloaded" in run.provenance:
                print("images: " + "; ".join(f"{i}: {said}" for i, said in run.provenance["preloaded"].items()))
            code = wait_through_interrupt(probes, *([shutdown[0]] if shutdown else []))
            if shutdown is not None:
                code = _shutdown_probes_ended(shutdown, code)
            timing: dict[str, float | str] = {
                **probe_timing(run.directory, time.monotonic() - started, startup),
                "workers": plan.workers,
                "workers_why": plan.why(),
                "planned_makespan_s": round(plan.makespan_s, 1),
            }
            run.write_provenance(timing=timing)
            print(
                f"wall {timing['wall_s']:.0f}s = cluster start-up {timing['cluster_startup_s']:.0f}s + probes; "
                f"longest probe {timing['longest_probe_s']:.0f}s; wall / (start-up + longest) = {timing['ratio']:.2f}; "
                f"{plan.workers} workers, planned {plan.makespan_s:.0f}s"
            )
    except ClusterFailed as err:
        print(f"error: {err}", file=sys.stderr)
    finally:
        _stop_probes(probes, gate)
        if shutdown is not None and shutdown[0].returncode is None:  # this cluster failed: theirs goes on
            code = _shutdown_probes_ended(shutdown, code)
        if run.provenance.get("cluster_kept"):
            print(run.provenance["cluster_kept_message"])
        run.finish("passed" if code == 0 else "failed")
    return code


def _start_shutdown_probes(args: argparse.Namespace, run: Run) -> tuple[subprocess.Popen[bytes], Path]:
    """The node-shutdown probes' pytest, one at a time on their own kind cluster in this run's directory."""
    command = [*_own_junit(pytest_argv(args), "shutdown"), "--run-id", run.run_id, "-m", "node_shutdown"]
    log = run.directory / "shutdown-probes.log"
    print(f"+ {' '.join(command)} > {log}", flush=True)
    env = {**os.environ, "PYTEST_XDIST_WORKER": "shutdown"}
    with log.open("wb") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT), log


def _shutdown_probes_ended(shutdown: tuple[subprocess.Popen[bytes], Path], code: int) -> int:
    """Wait for the node-shutdown probes, show the end of their log; the run's exit code with theirs."""
    process, log = shutdown
    shutdown_code = wait_through_interrupt(process)
    if shutdown_code != NO_TESTS_COLLECTED:  # PROBE chose none of them: nothing to show
        print(f"node-shutdown probes (exit {shutdown_code}), from {log}:")
        print("\n".join(log.read_text(errors="replace").splitlines()[-6:]), flush=True)
    if code == NO_TESTS_COLLECTED:  # PROBE selected only node-shutdown probes: theirs is the result
        return shutdown_code
    return code or (shutdown_code if shutdown_code not in (0, NO_TESTS_COLLECTED) else 0)


def plan_workers(
    args: argparse.Namespace, directory: Path, cluster: str, version: str = ""
) -> tuple[schedule.Plan, Path, bool]:
    """The probes this run selects (collected in a child pytest, about a second; the node-shutdown ones, which
    run on their own cluster, are left out and said apart), planned longest first on
    PARALLEL workers or, with auto, on as few as finish about when the longest probe does; the durations and
    the plan go to <run>/schedule.json, which the pytest-xdist controller hands out from. `cluster` (kind,
    local) and `version`: whose durations count first (harness/schedule.py)."""
    from harness import schedule  # with pytest-xdist's scheduler, hence pytest: only for a parallel run

    chosen = selection.select(args.probe, args.run_dir, extra=["--repeat", str(args.repeat)] if args.repeat > 1 else [])
    items = [item for item in chosen.selected if item not in chosen.node_shutdown]  # those run on their own cluster
    recordings = [path for family in families() for path in family.recordings.glob("*.json")]
    minor = KubeVersion.parse(version).minor if version else ""
    known = schedule.known_durations(recordings, Path(args.run_dir), cluster, minor)
    if args.parallel == AUTO:
        plan = schedule.choose_workers(items, known)
    else:
        plan = schedule.plan_for(items, known, args.parallel)
    schedule.write_schedule(directory / "schedule.json", known, plan)
    return plan, directory / "schedule.json", bool(chosen.node_shutdown)


def _own_junit(argv: list[str], part: str) -> list[str]:
    """The same command line, but a --junitxml=FILE of it written to FILE-<part>.xml (not over the first run's)."""
    return [f"{a.removesuffix('.xml')}-{part}.xml" if a.startswith("--junitxml=") else a for a in argv]


def _stop_probes(probes: subprocess.Popen[bytes], gate: ClusterGate) -> None:
    """The probes' pytest once this process is done with the cluster: ended, or ended now.

    Before the gate opened (the cluster failed, or Ctrl-C while it was made) no probe has touched the cluster, so
    the probes' process group is killed: quietly, where a SIGINT would make a worker still starting up print a
    traceback. After it opened, a run still going (this process stopped outside wait_through_interrupt) gets the
    Ctrl-C, so that its probes clean up after themselves."""
    if probes.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(probes.pid, signal.SIGINT if gate.is_open else signal.SIGKILL)
    gate.open("the run stopped before its cluster was ready")  # (nothing when it was opened already)
    wait_through_interrupt(probes)


def probe_timing(run_dir: Path, wall_s: float, startup_s: float) -> dict[str, float]:
    durations = [float(json.loads(p.read_text()).get("duration_s") or 0) for p in run_dir.glob("probes/*.json")]
    longest = max(durations, default=0.0)
    return {
        "wall_s": round(wall_s, 1),
        "cluster_startup_s": round(startup_s, 1),
        "longest_probe_s": round(longest, 1),
        "ratio": round(wall_s / max(startup_s + longest, 0.001), 2),
    }
