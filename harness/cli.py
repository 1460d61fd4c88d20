"""The `make ...` entry points: check every input and the host in seconds, then start the slow work.

Everything the harness refuses, it refuses before anything slow starts (no cluster, no build, no download)
with one line on stderr, `error: <class>: <what is wrong>`; the class is said in words because make turns
every failure into its own exit code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from harness import bisect as bisect_module
from harness import inputs, janitor, matrix, paths, schedule, selection
from harness import report as report_module
from harness.engine import check_engine
from harness.errors import ClusterFailed, PrerequisiteMissing
from harness.expectations import all_claim_ids
from harness.families import families
from harness.inputs import BadInput, count
from harness.kind import INSTALL_KIND, check_docker, check_prerequisites
from harness.kind_install import KindInstallError, ensure_kind
from harness.lifecycle import ClusterProvider, KindProvider, LocalProvider, cluster_life
from harness.local import cluster as local_cluster
from harness.local.build import (
    TOOLS,
    BuildError,
    build_kubernetes,
    check_go,
    existing_build,
    resolve_module,
)
from harness.nodeimage import release as node_image_release
from harness.nodeimage.images import NodeImageError
from harness.nodeimage.node import build_node_images
from harness.nodeimage.node import host_problems as node_image_host_problems
from harness.run import Run, new_run_id, safe_name
from harness.versions import KubeVersion, NodeImage, VersionError, known_images, known_versions

REPO = Path(__file__).resolve().parent.parent
BAD_INPUT, PREREQUISITE_MISSING = 2, 3
NO_TESTS_COLLECTED = 5  # pytest's exit code when a selection matches nothing; also ours for "nothing to do"
# The classes of refusal, as each error line names them, and their exit codes.
BAD, MISSING, NOTHING_TO_RUN, NOTHING_TO_REPORT = (
    "bad input",
    "prerequisite missing",
    "nothing to run",
    "nothing to report",
)
EXIT_CODE = {BAD: BAD_INPUT, MISSING: PREREQUISITE_MISSING, NOTHING_TO_RUN: NO_TESTS_COLLECTED, NOTHING_TO_REPORT: 5}

EXIT_CODES = f"""\
exit codes (make turns every non-zero one into 2: the error line says which it was):
  0  done; for probe, every probe passed
  1  a probe failed or left a claim undecided; a build, a bisection or a cleanup failed
  {BAD_INPUT}  {BAD}: an argument the harness cannot use ('error: {BAD}: ...'), refused before anything starts
  {PREREQUISITE_MISSING}  {MISSING}: Docker, kind, Go, root ... ('error: {MISSING}: ...')
  {NO_TESTS_COLLECTED}  {NOTHING_TO_RUN} / {NOTHING_TO_REPORT}: PROBE matches no probe, or RUNS holds no run records
     ('error: {NOTHING_TO_RUN}: ...', 'error: {NOTHING_TO_REPORT}: ...')
  130  interrupted (Ctrl-C) in the harness itself: one line says what was stopped ('interrupted: stopped ...')
  other: pytest's own, for a probe run that started (2 interrupted, 4 pytest usage error)"""


INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a process Ctrl-C ended


class Interrupted(Exception):
    """Ctrl-C during a step: what that step was and what stopping it undid, for the one line main() says."""

    def __init__(self, stopped: str) -> None:
        super().__init__(stopped)
        self.stopped = stopped


@contextlib.contextmanager
def stopping(what: str) -> Iterator[None]:
    """Turn Ctrl-C inside the block into Interrupted(what), once the block's own cleanup has run."""
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(what) from None


def refuse(kind: str, problem: str) -> int:
    """Say why the harness will not go on, as `error: <class>: <problem>`; return the class's exit code."""
    print(f"error: {kind}: {problem}", file=sys.stderr)
    return EXIT_CODE[kind]


def host_refusal(header: str, problems: Sequence[str]) -> str:
    """`header:` and each problem on its own line, ending with the one apt-get line that installs every
    Debian package the problems name (each says `apt-get install <packages>` where it comes from)."""
    packages = dict.fromkeys(
        package for hint in re.findall(r"apt-get install ([^)]+)", "\n".join(problems)) for package in hint.split()
    )
    lines = [f"{header}:", *problems]
    if packages:
        lines.append(f"install them all with: apt-get install {' '.join(packages)}")
    return "\n  ".join(lines)


class _Parser(argparse.ArgumentParser):
    """argparse, refusing a bad argument like every other bad input: `error: bad input: ...`, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(BAD_INPUT, f"error: {BAD}: {message}\n")


AUTO = "auto"


def parallel_count(text: str) -> int | str:
    """PARALLEL: a count of 1 or more, `auto` (workers chosen from durations, harness/schedule.py), or empty for
    the cluster's default (auto for a local cluster, 1 otherwise)."""
    if text.strip().lower() in (AUTO, ""):
        return text.strip().lower()
    try:
        return count("PARALLEL")(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"PARALLEL must be a whole number of 1 or more or auto, not {text!r}"
        ) from None


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = _Parser(
        prog="python -m harness",
        description=__doc__,
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name, help=help_text, description=help_text, epilog=EXIT_CODES, formatter_class=parser.formatter_class
        )

    probe = command("probe", "run the probes on a new kind cluster (or an existing one)")
    probe.add_argument("--version", default="", help="Kubernetes version: a minor (1.27) or a patch (1.27.3)")
    probe.add_argument(
        "--image", default="", help="node image instead of the pinned one (kindest/node:vX.Y.Z@sha256:...)"
    )
    probe.add_argument("--probe", default="", help="run only the probes matching this name or pytest -k expression")
    probe.add_argument(
        "--keep-cluster",
        action="store_true",
        help="do not delete the cluster afterwards, nor the namespace of a probe that failed",
    )
    probe.add_argument("--repeat", type=count("REPEAT"), default=1, help="run each probe N times and report the spread")
    probe.add_argument(
        "--parallel",
        type=parallel_count,
        default="",
        help="run N probes at a time in one new cluster (pytest-xdist workers); auto: as many as the probes' known "
        "durations say (harness/schedule.py); default: auto for --cluster local, 1 otherwise",
    )
    probe.add_argument("--run-dir", default=str(REPO / "runs"), help="where run records go (default: runs/)")
    probe.add_argument("--kubeconfig", default="", help="probe an existing cluster from this kubeconfig instead")
    probe.add_argument("--context", default="", help="context in --kubeconfig")
    probe.add_argument("--kind-bin", default="kind", help="the kind executable")
    probe.add_argument(
        "--cluster",
        choices=("kind", "local"),
        default="kind",
        help="where a new cluster runs: kind (Docker) or local (built from Go modules, run as processes here; root)",
    )
    probe.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    command("versions", "list the Kubernetes versions with a pinned node image")
    clean = command("clean", "remove the suite's leftovers: its kind clusters and labelled namespaces")
    clean.add_argument("--kubeconfig", default="", help="also clean the suite's namespaces on this cluster")
    clean.add_argument("--context", default="", help="context in --kubeconfig")
    clean.add_argument("--kind-bin", default="kind", help="the kind executable")
    clean.add_argument(
        "--cluster", choices=("kind", "local"), default=None, help="only leftovers of this kind (default: both)"
    )
    report = command("report", "the behaviour matrix of run records as Markdown and HTML")
    report.add_argument("runs", nargs="+", help="run directories (or record files) to read")
    report.add_argument(
        "--out", default="", help="where to write report.md and report.html (default: runs/report-<id>)"
    )
    build = command(
        "node-image", "build a node image for a Kubernetes release kind does not publish (kind build node-image)"
    )
    build.add_argument("--version", required=True, help="a full release version, e.g. 1.27.0-rc.0")
    build.add_argument(
        "--source",
        choices=("auto", "release", "modules"),
        default="auto",
        help="release: kind build node-image from dl.k8s.io; modules: built here from Go modules and Debian "
        "packages (harness/nodeimage); auto: release when dl.k8s.io answers, else modules",
    )
    bisect_cmd = command("bisect", "the first release on which a probe fails, or a claim observes what BAD did")
    bisect_cmd.add_argument("--probe", required=True, help="the probe (name or pytest -k expression)")
    bisect_cmd.add_argument("--good", required=True, help="a release where the probe passes, e.g. 1.27.3")
    bisect_cmd.add_argument("--bad", required=True, help="a later release (same minor, or the next one) where it fails")
    bisect_cmd.add_argument(
        "--cluster", choices=("kind", "local"), default="kind", help="local: every release between built here"
    )
    bisect_cmd.add_argument(
        "--claim", default="", help="local: bisect on this claim's observed value (GOOD's against BAD's)"
    )
    bisect_cmd.add_argument(
        "--pre-releases", action="store_true", help="local: also try the x.y.0 pre-releases between GOOD and BAD"
    )
    bisect_cmd.add_argument("--name", default="", help="local: the record's name, bisections/<name>.json")
    bisect_cmd.add_argument(
        "--record-dir", default=str(REPO / "bisections"), help="local: where the record goes (default bisections/)"
    )
    bisect_cmd.add_argument(
        "--build", action="store_true", help="also try patch releases without a pinned image (built by node-image)"
    )
    bisect_cmd.add_argument("--run-dir", default=str(REPO / "runs"), help="where the runs go (default: runs/)")
    matrix = command("matrix", "run the probes on several versions, one cluster each")
    matrix.add_argument("--versions", default="", help="space-separated versions (default: every minor in the table)")
    matrix.add_argument("--jobs", type=count("JOBS"), default=2, help="how many kind clusters at a time")
    matrix.add_argument("--run-dir", default=str(REPO / "runs"), help="where the matrix's run directories go")
    matrix.add_argument(
        "--cluster", choices=("kind", "local"), default="kind", help="kind, or local (built here; one at a time)"
    )
    matrix.add_argument(
        "--parallel", default="auto", help="local: probes at a time in each version's cluster (PARALLEL of make probe)"
    )
    matrix.add_argument(
        "--no-overlap", action="store_true", help="local: build the next version only after this one's probes"
    )
    matrix.add_argument("--probe", default="", help="local: only the probes matching this name or -k expression")
    return parser.parse_args(argv)


def missing_arguments(args: argparse.Namespace, names: dict[str, str]) -> str | None:
    """'BAD (--bad) is missing' for required values make passes as empty strings; None when all are given."""
    missing = [
        f"{variable} (--{dest.replace('_', '-')})" for dest, variable in names.items() if not getattr(args, dest)
    ]
    if not missing:
        return None
    return f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing"


def selection_problem(expression: str, run_dir: str) -> tuple[str, str] | None:
    """(class, why) when PROBE selects no probe or is not a -k expression; None when it selects some.

    pytest collects in a child process (harness/selection.py), in about a second, before any cluster.
    """
    found = selection.select(expression, run_dir)
    if found.exit_code == NO_TESTS_COLLECTED or (found.exit_code == 0 and not found.selected):
        names = ", ".join(found.probe_names())
        return NOTHING_TO_RUN, (
            f"PROBE {expression!r} matches none of the {found.total} probes (a probe name or a pytest -k "
            f"expression; probes include {names}, ...)"
        )
    if found.exit_code != 0:
        return BAD, f"PROBE {expression!r} cannot select probes (pytest says: {found.errors})"
    return None


def pytest_argv(args: argparse.Namespace, target: Sequence[str] | None = None) -> list[str]:
    """pytest's command line; `target` replaces the cluster options (the parallel mode's own cluster)."""
    argv = [sys.executable, "-m", "pytest", str(REPO / "probes"), "-p", "no:cacheprovider"]
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
    argv += ["--repeat", str(args.repeat)] if args.repeat > 1 else []
    argv += ["-k", args.probe] if args.probe else []
    argv += ["--run-dir", args.run_dir]
    return argv + list(args.pytest_args)


def run_matrix_command(args: argparse.Namespace) -> int:
    if args.cluster == "local":
        return run_local_matrix_command(args)
    versions = args.versions.split() or matrix.default_versions()
    for version in versions:
        inputs.kind_image(version, None)
    inputs.check_run_dir(args.run_dir)
    base = Path(args.run_dir) / f"matrix-{new_run_id()}"
    base.mkdir(parents=True, exist_ok=True)
    print(f"{len(versions)} versions, {args.jobs} at a time; logs and run records under {base}", flush=True)
    results = matrix.run_matrix(versions, args.jobs, lambda v: matrix.run_version_process(v, base))
    print(matrix.render(results))
    print(f"matrix record: {matrix.write_results(base, results)}")
    return 0 if all(r.status == "passed" for r in results) else 1


def run_local_matrix_command(args: argparse.Namespace) -> int:
    """make matrix CLUSTER=local: every version built here and probed on its own local cluster, in turn."""
    requested = args.versions.split() or [m for m in matrix.default_versions() if m not in ("1.19", "1.20")]
    try:
        for version in requested:
            matrix.pinned_patch(KubeVersion.parse(version).text.lstrip("v"))
    except VersionError as err:
        return refuse(BAD, str(err))
    inputs.check_run_dir(args.run_dir)
    if host_problems := local_cluster.check_host():
        return refuse(MISSING, "a local cluster cannot run here:\n  " + "\n  ".join(host_problems))
    if running := local_cluster.running_clusters():
        return refuse(MISSING, f"a local cluster of the suite is already running ({', '.join(running)}); make clean")
    try:
        print(check_go())
    except BuildError as err:
        return refuse(MISSING, str(err))

    def served(release: str) -> bool:
        if existing_build(release) is not None:
            return True
        try:
            resolve_module(release)
        except BuildError:
            return False
        return True

    plan = matrix.plan_versions(requested, served)
    base = Path(args.run_dir) / f"matrix-{new_run_id()}"
    base.mkdir(parents=True, exist_ok=True)
    for planned in plan:
        said = f" ({planned.note})" if planned.note else ""
        print(f"  {planned.requested} -> v{planned.release}{said}")
    print(
        f"{len(plan)} versions on local clusters, one at a time, PARALLEL={args.parallel}; builds "
        f"{'after each version' if args.no_overlap else 'ahead, while probes run'}; records under {base}",
        flush=True,
    )

    def build_release(release: str) -> Any:
        found = existing_build(release)
        if found is not None:
            return dataclasses.replace(found, record={**found.record, "reused": True})
        return build_kubernetes(release, log_progress=False)

    def probe_argv(release: str, run_dir: Path) -> list[str]:
        argv = [sys.executable, "-m", "harness", "probe", "--version", release, "--cluster", "local"]
        argv += ["--parallel", str(args.parallel), "--run-dir", str(run_dir)]
        return argv + (["--probe", args.probe] if args.probe else [])

    started = time.monotonic()
    builder = matrix.Builder(build_release, TOOLS, is_built=lambda release: existing_build(release) is not None)
    try:
        results = matrix.run_local_matrix(plan, builder, base, probe_argv, TOOLS, not args.no_overlap)
    finally:
        builder.shutdown()
    wall = time.monotonic() - started
    print(matrix.render_local(results, wall))
    record = {"cluster": "local", "wall_s": round(wall, 1), "versions": [dataclasses.asdict(r) for r in results]}
    (base / "matrix.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"matrix record: {base / 'matrix.json'}")
    if any(r.probes for r in results):
        run_report_command(argparse.Namespace(runs=[str(base)], out=str(base / "report")))
    return 0 if all(r.status == "passed" for r in results) else 1


def run_parallel(args: argparse.Namespace, image: NodeImage | None, kind_line: str) -> int:
    """One cluster (kind, or local with --cluster local), created here through the one lifecycle of
    harness/lifecycle.py; the probes on it `--parallel` at a time as pytest-xdist workers.

    The cluster is this process's: it is removed after pytest ends (also after Ctrl-C or SIGTERM, which
    pytest receives too and answers with its own cleanup first), unless --keep-cluster.
    """
    run = Run.start(Path(args.run_dir))
    run.write_provenance(parallel=args.parallel)
    plan, schedule_file = plan_workers(args, run.directory)
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
    code = 1
    try:
        kept = "left running (KEEP)" if args.keep_cluster else "stopped and removed"
        with (
            stopping(f"the run on {provider.kind} cluster {provider.name}: the cluster was {kept}"),
            cluster_life(provider, run.write_provenance, args.keep_cluster, run.directory / "kind-logs"),
        ):
            if "preloaded" in run.provenance:
                print("images: " + "; ".join(f"{i}: {said}" for i, said in run.provenance["preloaded"].items()))
            startup = time.monotonic() - started
            target = ["--kubeconfig", str(provider.kubeconfig), "--context", context, *node_access]
            planned = ["-n", str(plan.workers), "--schedule", str(schedule_file)]
            command = pytest_argv(args, [*target, "--run-id", run.run_id, *planned, "-m", "not node_shutdown"])
            print("+ " + " ".join(command), flush=True)
            code = _wait_for(subprocess.Popen(command))
            if image is not None:
                # The node-shutdown probes need their own kind cluster (harness/node_shutdown.py), which only
                # the kind mode of the fixtures makes: they run afterwards, one at a time, in this run's directory.
                shutdown = [*_own_junit(pytest_argv(args), "shutdown"), "--run-id", run.run_id, "-m", "node_shutdown"]
                print("+ " + " ".join(shutdown), flush=True)
                env = {**os.environ, "PYTEST_XDIST_WORKER": "shutdown"}
                shutdown_code = _wait_for(subprocess.Popen(shutdown, env=env))
                if code == NO_TESTS_COLLECTED:  # PROBE selected only node-shutdown probes: theirs is the result
                    code = shutdown_code
                elif shutdown_code not in (0, NO_TESTS_COLLECTED):
                    code = code or shutdown_code
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
        if run.provenance.get("cluster_kept"):
            print(run.provenance["cluster_kept_message"])
        run.finish("passed" if code == 0 else "failed")
    return code


def plan_workers(args: argparse.Namespace, directory: Path) -> tuple[schedule.Plan, Path]:
    """The probes this run selects (collected in a child pytest, about a second), planned longest first on
    PARALLEL workers or, with auto, on as few as finish about when the longest probe does; the durations and
    the plan go to <run>/schedule.json, which the pytest-xdist controller hands out from."""
    extra = ["-m", "not node_shutdown", *(["--repeat", str(args.repeat)] if args.repeat > 1 else [])]
    items = selection.select(args.probe, args.run_dir, extra=extra).selected
    recordings = [path for family in families() for path in family.recordings.glob("*.json")]
    known = schedule.known_durations(recordings, Path(args.run_dir))
    if args.parallel == AUTO:
        plan = schedule.choose_workers(items, known)
    else:
        plan = schedule.plan_for(items, known, args.parallel)
    schedule.write_schedule(directory / "schedule.json", known, plan)
    return plan, directory / "schedule.json"


def _own_junit(argv: list[str], part: str) -> list[str]:
    """The same command line, but a --junitxml=FILE of it written to FILE-<part>.xml (not over the first run's)."""
    return [f"{a.removesuffix('.xml')}-{part}.xml" if a.startswith("--junitxml=") else a for a in argv]


def _wait_for(process: subprocess.Popen[bytes]) -> int:
    """Wait for pytest to end, through Ctrl-C (it got the signal too) and forwarding SIGTERM to it."""
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: process.send_signal(signal.SIGTERM))
    try:
        while True:
            try:
                return process.wait()
            except KeyboardInterrupt:
                continue
    finally:
        signal.signal(signal.SIGTERM, previous)


def probe_timing(run_dir: Path, wall_s: float, startup_s: float) -> dict[str, float]:
    durations = [float(json.loads(p.read_text()).get("duration_s") or 0) for p in run_dir.glob("probes/*.json")]
    longest = max(durations, default=0.0)
    return {
        "wall_s": round(wall_s, 1),
        "cluster_startup_s": round(startup_s, 1),
        "longest_probe_s": round(longest, 1),
        "ratio": round(wall_s / max(startup_s + longest, 0.001), 2),
    }


def run_clean_command(args: argparse.Namespace) -> int:
    """Remove the suite's leftovers; a kubeconfig is checked before anything is touched."""
    inputs.check_existing_cluster(args.kubeconfig, args.context)
    report = janitor.JanitorReport()
    kind_bin = shutil.which(args.kind_bin) or janitor.installed_kind()
    if args.cluster != "local":
        if kind_bin:
            janitor.clean_kind_clusters(report, kind_bin)
        else:
            print(f"{args.kind_bin} is not on PATH: no kind clusters to look for", file=sys.stderr)
    if args.cluster != "kind" and local_cluster.leftover_clusters():
        if os.geteuid() == 0:
            janitor.clean_local_clusters(report)
        else:
            print(f"local clusters under {local_cluster.DEFAULT_ROOT} need root to stop: run make clean as root")
    if args.kubeconfig:
        try:
            api = config.new_client_from_config(config_file=args.kubeconfig, context=args.context)
            janitor.clean_namespaces(report, client.CoreV1Api(api))
        except (config.ConfigException, ApiException, urllib3.exceptions.HTTPError, OSError, ValueError) as err:
            report.errors.append(f"cannot clean namespaces on context {args.context!r} of {args.kubeconfig}: {err}")
    print(report.render())
    return 1 if report.errors else 0


def run_report_command(args: argparse.Namespace) -> int:
    """The behaviour matrix of the run records under RUNS; refused when there is nothing to report."""
    missing = [p for p in args.runs if not Path(p).exists()]
    if missing:
        return refuse(
            BAD,
            f"nothing to report from {', '.join(missing)}: no such file or directory (RUNS names run directories or "
            "probe record files; make probe writes them under runs/)",
        )
    try:
        records = report_module.load_records([Path(p) for p in args.runs])
    except report_module.RecordError as err:
        return refuse(BAD, str(err))
    looked = f"looked for probe records (probes/*.json) under {', '.join(args.runs)}"
    if not records:
        return refuse(NOTHING_TO_REPORT, f"no run records: {looked}; make probe (or make test) writes them")
    built = report_module.build_matrix(records)
    if not built.versions:
        return refuse(NOTHING_TO_REPORT, f"{len(records)} records, none from a run that reached a server: {looked}")
    out = Path(args.out) if args.out else REPO / "runs" / f"report-{new_run_id()}"
    try:
        inputs.check_run_dir(out)
    except BadInput as err:
        return refuse(BAD, str(err).replace("the run directory", "the report directory"))
    report_module.write_matrix(built, out)
    print(f"{built.summary()}; {len(built.changed())} verdicts changed")
    print(f"report: {out / 'report.html'} and {out / 'report.md'}")
    return 0


def run_node_image_command(args: argparse.Namespace) -> int:
    """Build (or reuse) plp-node:vX.Y.Z: with kind's release builder, or from Go modules when that cannot work."""
    if problem := missing_arguments(args, {"version": "VERSION"}):
        return refuse(BAD, f"{problem}: the release to build, e.g. make node-image VERSION=1.27.0-rc.0")
    try:
        tag = node_image_release.local_tag(args.version)
        release = node_image_release.build_kind_release()
    except VersionError as err:
        return refuse(BAD, str(err))
    source = getattr(args, "source", "auto")
    if source == "auto":
        source = "release" if node_image_release.release_downloads_reachable() else "modules"
        print(f"building from {source}: dl.k8s.io {'answers' if source == 'release' else 'does not answer'}")
    try:
        check_docker()
        check_engine()
        if source == "modules":
            if problems := node_image_host_problems():
                raise PrerequisiteMissing(host_refusal("building a node image from Go modules needs", problems))
            check_go()
            resolve_module(args.version)
        else:
            kind_bin = ensure_kind(release)
    except (PrerequisiteMissing, KindInstallError) as err:
        return refuse(MISSING, str(err))
    except BuildError as err:
        return refuse(BAD if "does not serve" in str(err) else MISSING, str(err))
    try:
        with stopping(f"building node image {tag}: its unfinished work was removed, nothing of it is reused"):
            if source == "modules":
                tag = build_node_images(args.version)[0]
            else:
                tag, said = node_image_release.build_node_image(args.version, kind_bin, release)
                print(said)
    except (node_image_release.NodeImageBuildFailed, NodeImageError, BuildError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"run the probes on it: make probe IMAGE={tag}")
    return 0


def run_bisect_command(args: argparse.Namespace) -> int:
    """Each candidate version is one `python -m harness probe` run (its own cluster); see harness/bisect.py."""
    if problem := missing_arguments(args, {"probe": "PROBE", "good": "GOOD", "bad": "BAD"}):
        return refuse(BAD, f"{problem}: make bisect PROBE=<name or -k expression> GOOD=1.27.3 BAD=1.27.16")
    if args.cluster == "local":
        return run_local_bisect_command(args)
    if args.claim or args.pre_releases:
        return refuse(BAD, "CLAIM and PRE=1 bisect releases built here: give CLUSTER=local with them")
    try:
        versions = bisect_module.candidates(args.good, args.bad, args.build)
    except VersionError as err:
        return refuse(BAD, str(err))
    inputs.check_run_dir(args.run_dir)
    if refused := selection_problem(args.probe, args.run_dir):
        return refuse(*refused)
    directory = Path(args.run_dir) / f"bisect-{new_run_id()}"
    pinned = {str(i.kubernetes.version) for i in known_images()}

    def run(version: str) -> str:
        where = ["--version", version]
        if version not in pinned:  # only with --build
            built = run_command(["node-image", "--version", version])
            if built != 0:
                return bisect_module.SKIP
            where = ["--image", node_image_release.local_tag(version)]
        run_dir = directory / version
        command = [sys.executable, "-m", "harness", "probe", *where, "--probe", args.probe, "--run-dir", str(run_dir)]
        print("+ " + " ".join(command), flush=True)
        code = subprocess.run(command, check=False).returncode
        records = sorted(run_dir.glob("*/run.json"))
        return bisect_module.outcome_of_run(code, records[-1] if records else run_dir / "run.json")

    print(f"bisecting {args.probe!r} over {', '.join(versions)}")
    try:
        found = bisect_module.bisect(versions, run)
    except bisect_module.BisectError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "bisect.json").write_text(json.dumps(found.to_json(), indent=1) + "\n")
    print(f"{found.conclusion}; record: {directory / 'bisect.json'}")
    return 0 if found.first_bad else 1


def run_local_bisect_command(args: argparse.Namespace) -> int:
    """make bisect CLUSTER=local CLAIM=<id>: each release between GOOD and BAD built once, probed on its own local
    cluster, and classified by what the claim observed; the record goes to bisections/<name>.json."""
    if not args.claim:
        return refuse(
            BAD,
            "CLUSTER=local bisects on what a claim observed: give CLAIM=<claim id> (probes/*/expectations.yaml)",
        )
    try:
        versions = bisect_module.release_candidates(args.good, args.bad, args.pre_releases)
    except VersionError as err:
        return refuse(BAD, str(err))
    known_claims = all_claim_ids()
    if args.claim not in known_claims:
        return refuse(BAD, f"no claim {args.claim!r} in the expectations (e.g. {', '.join(sorted(known_claims)[:3])})")
    inputs.check_run_dir(args.run_dir)
    if refused := selection_problem(args.probe, args.run_dir):
        return refuse(*refused)
    if host_problems := local_cluster.check_host():
        return refuse(MISSING, "a local cluster cannot run here:\n  " + "\n  ".join(host_problems))
    try:
        print(check_go())
    except BuildError as err:
        return refuse(MISSING, str(err))
    name = safe_name(args.name or f"{args.claim}-{args.good}-{args.bad}")
    directory = Path(args.run_dir) / f"bisect-{new_run_id()}"

    def observe(version: str) -> bisect_module.ClaimObservation:
        seen = bisect_module.ClaimObservation(version, "")
        try:
            build = existing_build(version) or build_kubernetes(version)
        except (BuildError, VersionError) as err:
            seen.why = "could not be built: " + str(err).splitlines()[0][:300]
            return seen
        seen.build = {k: build.record.get(k) for k in ("version", "commit", "toolchain", "duration_s")}
        seen.build["staging_substitutions"] = build.record.get("staging_substitutions") or {}
        run_dir = directory / version
        command = [sys.executable, "-m", "harness", "probe", "--version", version, "--cluster", "local"]
        command += ["--probe", args.probe, "--run-dir", str(run_dir)]
        print("+ " + " ".join(command), flush=True)
        with (directory / f"{version}.log").open("w") as log:
            subprocess.run(command, check=False, stdout=log, stderr=subprocess.STDOUT)
        seen.run_dir = str(run_dir)
        seen.observed, seen.verdicts = bisect_module.claim_observations(run_dir, args.claim)
        for run_json in sorted(run_dir.glob("*/run.json")):
            record = json.loads(run_json.read_text())
            seen.cluster = {
                "run_id": record.get("run_id"),
                "server_version": record.get("server_version"),
                **{
                    k: (record.get("local") or {}).get(k)
                    for k in ("containerd_version", "runc_version", "etcd_version")
                },
                **({"cluster_error": record["cluster_error"]} if record.get("cluster_error") else {}),
            }
        if not seen.observed:
            seen.why = f"the run observed nothing for the claim (log: {directory / f'{version}.log'})"
        return seen

    directory.mkdir(parents=True, exist_ok=True)
    started = new_run_id()
    print(f"bisecting {args.claim} ({args.probe}) over {', '.join(versions)}", flush=True)
    oracle = bisect_module.ClaimOracle(args.claim, observe, print)
    try:
        oracle.learn_ends(versions[0], versions[-1])
        found = bisect_module.bisect(versions, oracle)
    except bisect_module.BisectError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    ran = {
        "provider": "local",
        "started": started,
        "finished": new_run_id(),
        "kernel": platform.release(),
        "runs": str(directory),
        **Run.start(directory / "provenance").suite(),
    }
    record = bisect_module.bisection_record(name, args.claim, args.probe, args.good, args.bad, oracle, found, ran)
    out = Path(args.record_dir) / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1, default=str) + "\n")
    print(f"{found.conclusion}; record: {out}")
    return 0 if found.first_bad else 1


class Refused(Exception):
    """An input the harness will not run with: the class of refusal (BAD, ...) and what is wrong."""

    def __init__(self, kind: str, problem: str) -> None:
        super().__init__(problem)
        self.kind, self.problem = kind, problem


def check_probe_input(args: argparse.Namespace) -> NodeImage | None:
    """Every check of make probe's input, in seconds and before anything starts; raises BadInput or Refused.

    Returns the kind node image to run when a kind cluster is to be made.
    """
    inputs.check_existing_cluster(args.kubeconfig, args.context)
    inputs.check_run_dir(args.run_dir)
    image: NodeImage | None = None
    if args.kubeconfig:
        if args.version or args.image or args.cluster == "local":
            raise BadInput(
                "KUBECONFIG_FILE (--kubeconfig) probes an existing cluster, VERSION, IMAGE and CLUSTER=local make a "
                "new one: give one or the other",
            )
        if args.parallel not in ("", 1):
            raise BadInput("PARALLEL runs the probes on a cluster make probe creates itself, not on an existing one")
    elif args.cluster == "local":
        if args.image:
            raise BadInput("IMAGE is a kind node image; a local cluster (CLUSTER=local) takes VERSION only")
        if not args.version:
            raise BadInput("no VERSION given: a local cluster is built from one release (VERSION=1.27.3)")
        args.version = inputs.local_release(args.version)
        print(inputs.check_manifests_for(KubeVersion.parse(args.version)))
    else:
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


def prepare_local(args: argparse.Namespace) -> int:
    """Check the host for a local cluster in seconds, then build (or reuse) the release: 0 when ready."""
    host_problems = local_cluster.check_host()
    if host_problems:
        return refuse(MISSING, host_refusal("a local cluster cannot run here", host_problems))
    if running := local_cluster.running_clusters():
        return refuse(
            MISSING,
            f"a local cluster of the suite is already running ({', '.join(running)}); one at a time "
            "(make clean stops it)",
        )
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
    print(
        f"Kubernetes {build.version} built with {build.record['toolchain']} in {build.record['duration_s']:.0f}s "
        f"({build.directory})"
    )
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


def main(argv: Sequence[str]) -> int:
    """Run one command; Ctrl-C ends it with one line saying what was stopped and exit code 130."""
    try:
        return run_command(argv)
    except Interrupted as interrupted:
        print(f"interrupted: stopped {interrupted.stopped}", file=sys.stderr)
    except KeyboardInterrupt:
        print("interrupted: stopped before any cluster, build or download had started", file=sys.stderr)
    return INTERRUPTED


def run_command(argv: Sequence[str]) -> int:
    """Parse and run one command; an input it will not run with is refused as bad input."""
    args = parse_args(argv)
    try:
        return _dispatch(args)
    except BadInput as err:
        return refuse(BAD, str(err))


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "versions":
        print("\n".join(known_versions()))
        return 0
    if args.command == "matrix":
        return run_matrix_command(args)
    if args.command == "node-image":
        return run_node_image_command(args)
    if args.command == "bisect":
        return run_bisect_command(args)
    if args.command == "clean":
        return run_clean_command(args)
    if args.command == "report":
        return run_report_command(args)
    try:
        image = check_probe_input(args)
    except Refused as refused:
        return refuse(refused.kind, refused.problem)
    kind_line = ""  # then the host, in seconds too: Docker and kind, or what a local cluster needs and its build
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
