"""make probe: every input and the host checked in seconds, then the probes, on a cluster made here (of the kind
CLUSTER names) or an existing one; with PARALLEL, on one cluster this process makes and removes, as pytest-xdist
workers. What depends on the kind of cluster is the kind's (harness/clusters/kinds.py): this module asks it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.base import inputs, paths
from harness.base.errors import ClusterFailed, NotRunnable, PrerequisiteMissing, stopping
from harness.base.families import families
from harness.base.inputs import BadInput
from harness.base.process import wait_through_interrupt
from harness.base.run import Run
from harness.base.versions import Release
from harness.clusters.kinds import ClusterKind, Reattaches, Request, Runnable, ShutsNodesDown
from harness.clusters.registry import DEFAULT_CLUSTER, kind_for
from harness.doors import selection
from harness.doors.cluster_gate import READY, ClusterGate
from harness.doors.commands.refusal import (
    MISSING,
    NO_TESTS_COLLECTED,
    Refused,
    refusal_of_selection,
    refuse,
)

if TYPE_CHECKING:
    from harness.doors import schedule

AUTO = "auto"


def run_probe_command(args: argparse.Namespace) -> int:
    """make probe: every input checked, then the host (what the kind of cluster needs, and its runnable made: the
    kind release installed, the release built), then the probes: in this process become pytest, or with PARALLEL
    on a cluster made here."""
    try:
        kind, runnable, chosen = check_probe_input(args)
        runnable = kind.prepare(runnable, say=print, warn=_warn)
    except Refused as refused:
        return refuse(refused.kind, refused.problem)
    except PrerequisiteMissing as err:
        return refuse(MISSING, str(err))
    except NotRunnable as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.parallel == "":  # the default: the kind's (auto where make probe makes the cluster, else one at a time)
        args.parallel = kind.default_parallel
    if args.parallel == AUTO or args.parallel > 1:
        return run_parallel(args, kind, runnable, chosen)
    command = pytest_argv(args, handed_on(runnable))
    print("+ " + " ".join(command), flush=True)
    # Become pytest: Ctrl-C and CI's SIGTERM then reach it directly and its teardown cleans up; its
    # exit code is make's.
    os.execv(command[0], command)


def _warn(said: str) -> None:
    print(said, file=sys.stderr)


def check_probe_input(args: argparse.Namespace) -> tuple[ClusterKind, Runnable, selection.Selection | None]:
    """Every check of make probe's input, in seconds and before anything starts; raises BadInput or Refused.

    Returns the kind of cluster the run is on, what it resolved the input to (kept for the whole run) and, with
    PROBE, the probes it selects (collected once: a parallel run plans its workers from them)."""
    kind = kind_for(args.cluster, args.kubeconfig)
    if not args.kubeconfig:
        inputs.check_existing_cluster(args.kubeconfig, args.context)  # a CONTEXT without KUBECONFIG_FILE
    inputs.check_run_dir(args.run_dir)
    inputs.check_apiserver_restart(args.restart_apiserver_after, kind.restarts_apiserver)
    asked = Request(
        version=inputs.requested_release(args.version),  # VERSION read here, once, for the whole run
        image=args.image,
        kubeconfig=args.kubeconfig,
        context=args.context,
        cluster="" if args.cluster == DEFAULT_CLUSTER else args.cluster,
        kind_bin=args.kind_bin,
    )
    if not kind.makes_clusters and args.parallel not in ("", 1):
        raise BadInput("PARALLEL runs the probes on a cluster make probe creates itself, not on an existing one")
    runnable = kind.resolve(asked, warn=_warn)
    if runnable.version is not None:
        print(inputs.check_manifests_for(runnable.version.kube))
    chosen = selected_probes(args) if args.probe else None
    if chosen is not None and (refused := refusal_of_selection(args.probe, chosen)):
        raise Refused(*refused)
    return kind, runnable, chosen


def handed_on(runnable: Runnable) -> list[str]:
    """The probes' pytest options for what make probe resolved: the runnable, and the minor whose schema every
    manifest was checked against (check_probe_input, for a runnable with a version), not checked again there on a
    server of that minor (about 0.12 s of CPU in each pytest and parallel worker)."""
    checked = ["--manifests-checked", runnable.version.kube.minor] if runnable.version is not None else []
    return ["--cluster-spec", runnable.to_json(), *checked]


def selected_probes(args: argparse.Namespace) -> selection.Selection:
    """The probes PROBE selects, REPEAT times each, collected in a child pytest (about half a second of CPU)."""
    return selection.select(args.probe, args.run_dir, extra=["--repeat", str(args.repeat)] if args.repeat > 1 else [])


def pytest_argv(args: argparse.Namespace, target: Sequence[str] = ()) -> list[str]:
    """pytest's command line, on the cluster the `target` options name (the resolved cluster, or PARALLEL's)."""
    argv = [sys.executable, "-m", "pytest", str(paths.REPO / "probes"), "-p", "no:cacheprovider", *target]
    argv += ["--keep-cluster"] if args.keep_cluster else []  # with a cluster given: keep the failed probes' namespaces
    # always said, so that a REPEAT in the environment (make exports its command line: make bisect REPEAT=3 runs
    # each release up to 3 times, each time the probe once) is not read by the plugin in its place
    argv += ["--repeat", str(args.repeat)]
    if args.restart_apiserver_after is not None:
        argv += ["--restart-apiserver-after", str(args.restart_apiserver_after)]
    argv += ["-k", args.probe] if args.probe else []
    argv += ["--run-dir", args.run_dir]
    return argv + list(args.pytest_args)


def run_parallel(
    args: argparse.Namespace, kind: ClusterKind, runnable: Runnable, chosen: selection.Selection | None = None
) -> int:
    """One cluster of the kind, created here through the one owner of a run's clusters (harness/clusters/owner.py);
    the probes on it `--parallel` at a time as pytest-xdist workers, which re-attach to it as the kind says.

    The cluster is this process's: it is removed after pytest ends (also after Ctrl-C or SIGTERM, which
    pytest receives too and answers with its own cleanup first), unless --keep-cluster.
    """
    # The Kubernetes client comes with the clusters' life (a few tenths of a second): imported here, so that a
    # refusal of bad input before this point does not wait for it.
    from harness.clusters.owner import RunClusters

    run = Run.start(Path(args.run_dir))
    run.write_provenance(parallel=args.parallel)
    plan, schedule_file, with_shutdown_probes, alone = plan_workers(
        args, run.directory, kind.name, runnable.version, chosen
    )
    print(f"PARALLEL={args.parallel}: {plan.why()}", flush=True)
    if alone:
        print(f"then {len(alone)} alone, one at a time, once the others have ended: {_names(alone)}", flush=True)
    clusters = RunClusters(run, args.keep_cluster)
    provider = clusters.made(kind, runnable)
    context = provider.context or provider.name
    # The workers re-attach to it as its kind: by what the kind reads of it beyond its kubeconfig, where it can
    node_access = kind.attach_options(provider) if isinstance(kind, Reattaches) else []
    started = time.monotonic()
    # The node-shutdown probes need their own cluster (on kinds that have one: harness/clusters/kinds.py), which
    # their own pytest makes: started first, so that it comes up beside this one and its probes run while the others
    # do; their output goes to a log, whose end is printed after.
    with_shutdown_probes = with_shutdown_probes and isinstance(kind, ShutsNodesDown)
    shutdown = _start_shutdown_probes(args, run, runnable) if with_shutdown_probes else None
    code = 1
    if shutdown is not None and not any(plan.shares) and not alone:  # only node-shutdown probes: no cluster here
        try:
            with stopping("the node-shutdown probes: their own cluster is removed by their pytest"):
                code = _shutdown_probes_ended(shutdown, NO_TESTS_COLLECTED)
        finally:
            run.finish("passed" if code == 0 else "failed")
        return code
    # The probes' pytest starts now: its workers start (about 0.7 s of CPU each) while the cluster is made, and wait
    # at the gate until it is ready (harness/doors/cluster_gate.py). It runs in a session of its own, so that a Ctrl-C
    # reaches it through this process (wait_through_interrupt, _stop_probes) and never a worker still starting up,
    # which would print a traceback (seen live: Ctrl-C 5 s into a local start-up).
    gate = ClusterGate(run.directory / "cluster-gate")
    target = [*handed_on(runnable), "--kubeconfig", str(provider.kubeconfig), "--context", context]
    target += node_access
    target += ["--cluster-gate", str(gate.path)]
    planned = ["-n", str(plan.workers), "--schedule", str(schedule_file)]
    command = pytest_argv(args, [*target, "--run-id", run.run_id, *planned, "-m", "not node_shutdown and not alone"])
    print("+ " + " ".join(command), flush=True)
    probes = subprocess.Popen(command, start_new_session=True)
    try:
        with (
            stopping(lambda: clusters.stopped(provider)),
            clusters.life(provider, failed=lambda: code != 0),
        ):
            if not node_access:  # what the workers' recordings say ran, for those that reach it by kubeconfig alone
                run.write_provenance(origin=run.provenance.get("origin") or provider.origin())
            gate.open(READY)
            startup = time.monotonic() - started
            if "preloaded" in run.provenance:
                print("images: " + "; ".join(f"{i}: {said}" for i, said in run.provenance["preloaded"].items()))
            code = wait_through_interrupt(probes, *([shutdown[0]] if shutdown else []))
            if shutdown is not None:
                code = _shutdown_probes_ended(shutdown, code)
            if alone and code in (0, 1, NO_TESTS_COLLECTED):  # (not after a usage error: theirs would be the same)
                probes = _start_alone_probes(args, run, target)
                code = _alone_probes_ended(wait_through_interrupt(probes), code)
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


def _start_shutdown_probes(
    args: argparse.Namespace, run: Run, runnable: Runnable
) -> tuple[subprocess.Popen[bytes], Path]:
    """The node-shutdown probes' pytest, one at a time on their own cluster in this run's directory."""
    own = _own_junit(pytest_argv(args, handed_on(runnable)), "shutdown")
    command = [*own, "--run-id", run.run_id, "-m", "node_shutdown"]
    log = run.directory / "shutdown-probes.log"
    print(f"+ {' '.join(command)} > {log}", flush=True)
    env = {**os.environ, "PYTEST_XDIST_WORKER": "shutdown"}
    with log.open("wb") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT), log


def _start_alone_probes(args: argparse.Namespace, run: Run, target: Sequence[str]) -> subprocess.Popen[bytes]:
    """The probes marked alone, one at a time in one pytest on this run's cluster, once every other probe of the
    run has ended (those on the node-shutdown cluster too): their timing claims move when many probes share the
    machine (docs/running-probes.md). In a session of its own, as the parallel probes' pytest."""
    own = _own_junit(pytest_argv(args, [*target, "--run-id", run.run_id]), "alone")
    command = [*own, "-m", "alone and not node_shutdown"]
    print("+ " + " ".join(command), flush=True)
    env = {**os.environ, "PYTEST_XDIST_WORKER": "alone"}  # its run record: run-alone.json, beside the workers'
    return subprocess.Popen(command, env=env, start_new_session=True)


def _alone_probes_ended(alone_code: int, code: int) -> int:
    """The run's exit code with that of the probes run alone: theirs when the others were none."""
    if code == NO_TESTS_COLLECTED:
        return alone_code
    return code or (alone_code if alone_code != NO_TESTS_COLLECTED else 0)


def _names(items: Sequence[str]) -> str:
    """The probes' function names, once each, for a line."""
    return ", ".join(dict.fromkeys(item.split("::")[-1].split("[")[0] for item in items))


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
    args: argparse.Namespace,
    directory: Path,
    cluster: str,
    release: Release | None = None,
    chosen: selection.Selection | None = None,
) -> tuple[schedule.Plan, Path, bool, list[str]]:
    """The probes this run selects (collected in a child pytest, about a second; the node-shutdown ones, which
    run on their own cluster, and those marked alone, which run after all others, are left out and returned
    apart), planned longest first on
    PARALLEL workers or, with auto, on as few as finish about when the longest probe does; the durations and
    the plan go to <run>/schedule.json, which the pytest-xdist controller hands out from. `cluster` (kind,
    local) and `release`: whose durations count first (harness/doors/schedule.py). `chosen`: the selection the
    input check collected already, if any."""
    from harness.doors import schedule  # with pytest-xdist's scheduler, hence pytest: only for a parallel run

    chosen = selected_probes(args) if chosen is None else chosen
    alone = [item for item in chosen.alone if item not in chosen.node_shutdown]
    # the node-shutdown probes run on their own cluster; those marked alone after these, one at a time
    items = [item for item in chosen.selected if item not in chosen.node_shutdown and item not in alone]
    recordings = [path for family in families() for path in family.recordings.glob("*.json")]
    minor = release.minor if release is not None else ""
    known = schedule.known_durations(recordings, Path(args.run_dir), cluster, minor)
    if args.parallel == AUTO:
        plan = schedule.choose_workers(items, known)
    else:
        plan = schedule.plan_for(items, known, args.parallel)
    schedule.write_schedule(directory / "schedule.json", known, plan)
    return plan, directory / "schedule.json", bool(chosen.node_shutdown), alone


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
