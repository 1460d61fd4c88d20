"""The `make probe` entry point: check the input and the host in seconds, then run the probes with pytest.

Exit codes: pytest's own for a run that started (0 all passed, 1 some failed, 2 interrupted, ...);
2 for a bad VERSION or IMAGE; 3 when Docker is missing or the matching kind cannot be found or installed;
5 (pytest's) when PROBE matches nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from kubernetes import client, config

from harness import bisect as bisect_module
from harness import janitor, matrix, node_image_build
from harness import report as report_module
from harness.kind import (
    INSTALL_KIND,
    ClusterFailed,
    KindCluster,
    PrerequisiteMissing,
    check_docker,
    check_prerequisites,
    parse_kind_version,
)
from harness.kind_install import KindInstallError, ensure_kind
from harness.lifecycle import KindProvider, LocalProvider, cluster_life
from harness.local import cluster as local_cluster
from harness.local.build import BuildError, build_kubernetes, check_go, existing_build, release_text, resolve_module
from harness.manifest_check import check_manifests, images_in_manifests
from harness.run import Run, new_run_id, safe_name
from harness.versions import KubeVersion, NodeImage, VersionError, known_images, known_versions, resolve_image

REPO = Path(__file__).resolve().parent.parent
BAD_INPUT, PREREQUISITE_MISSING = 2, 3
NO_TESTS_COLLECTED = 5  # pytest's exit code when a selection matches nothing


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m harness", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    probe = commands.add_parser("probe", help="run the probes on a new kind cluster (or an existing one)")
    probe.add_argument("--version", default="", help="Kubernetes version: a minor (1.27) or a patch (1.27.3)")
    probe.add_argument(
        "--image", default="", help="node image instead of the pinned one (kindest/node:vX.Y.Z@sha256:...)"
    )
    probe.add_argument("--probe", default="", help="run only the probes matching this name or pytest -k expression")
    probe.add_argument("--keep-cluster", action="store_true", help="do not delete the kind cluster afterwards")
    probe.add_argument("--repeat", type=int, default=1, help="run each probe N times and report the spread")
    probe.add_argument(
        "--parallel", type=int, default=1, help="run N probes at a time in one kind cluster (pytest-xdist workers)"
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
    commands.add_parser("versions", help="list the Kubernetes versions with a pinned node image")
    clean = commands.add_parser("clean", help="remove the suite's leftovers: its kind clusters and labelled namespaces")
    clean.add_argument("--kubeconfig", default="", help="also clean the suite's namespaces on this cluster")
    clean.add_argument("--context", default="", help="context in --kubeconfig")
    clean.add_argument("--kind-bin", default="kind", help="the kind executable")
    report = commands.add_parser("report", help="the behaviour matrix of run records as Markdown and HTML")
    report.add_argument("runs", nargs="+", help="run directories (or record files) to read")
    report.add_argument(
        "--out", default="", help="where to write report.md and report.html (default: runs/report-<id>)"
    )
    build = commands.add_parser(
        "node-image", help="build a node image for a Kubernetes release kind does not publish (kind build node-image)"
    )
    build.add_argument("--version", required=True, help="a full release version, e.g. 1.27.0-rc.0")
    bisect_cmd = commands.add_parser("bisect", help="the first patch release on which a probe fails")
    bisect_cmd.add_argument("--probe", required=True, help="the probe (name or pytest -k expression)")
    bisect_cmd.add_argument("--good", required=True, help="a patch release where the probe passes, e.g. 1.27.3")
    bisect_cmd.add_argument("--bad", required=True, help="a later patch release of that minor where it fails")
    bisect_cmd.add_argument(
        "--build", action="store_true", help="also try patch releases without a pinned image (built by node-image)"
    )
    bisect_cmd.add_argument("--run-dir", default=str(REPO / "runs"), help="where the runs go (default: runs/)")
    matrix = commands.add_parser("matrix", help="run the probes on several versions, one kind cluster each")
    matrix.add_argument("--versions", default="", help="space-separated versions (default: every minor in the table)")
    matrix.add_argument("--jobs", type=int, default=2, help="how many clusters at a time")
    matrix.add_argument("--run-dir", default=str(REPO / "runs"), help="where the matrix's run directories go")
    return parser.parse_args(argv)


def pytest_argv(args: argparse.Namespace, target: Sequence[str] | None = None) -> list[str]:
    """pytest's command line; `target` replaces the cluster options (the parallel mode's own cluster)."""
    argv = [sys.executable, "-m", "pytest", str(REPO / "probes"), "-p", "no:cacheprovider"]
    if target is not None:
        argv += list(target)
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
    versions = args.versions.split() or matrix.default_versions()
    try:
        for version in versions:
            resolve_image(version)
    except VersionError as err:
        print(f"error: {err}", file=sys.stderr)
        return BAD_INPUT
    base = Path(args.run_dir) / f"matrix-{new_run_id()}"
    base.mkdir(parents=True, exist_ok=True)
    print(f"{len(versions)} versions, {args.jobs} at a time; logs and run records under {base}", flush=True)
    results = matrix.run_matrix(versions, args.jobs, lambda v: matrix.run_version_process(v, base))
    print(matrix.render(results))
    print(f"matrix record: {matrix.write_results(base, results)}")
    return 0 if all(r.status == "passed" for r in results) else 1


def run_parallel(args: argparse.Namespace, image: NodeImage | None, kind_line: str) -> int:
    """One cluster (kind, or local with --cluster local), created here through the one lifecycle of
    harness/lifecycle.py; the probes on it `--parallel` at a time as pytest-xdist workers.

    The cluster is this process's: it is removed after pytest ends (also after Ctrl-C or SIGTERM, which
    pytest receives too and answers with its own cleanup first), unless --keep-cluster.
    """
    run = Run.start(Path(args.run_dir))
    run.write_provenance(parallel=args.parallel)
    provider: KindProvider | LocalProvider
    if image is None:
        build = existing_build(args.version)
        assert build is not None  # built by main() before
        name = f"plp-{safe_name(KubeVersion.parse(args.version).minor)}-{run.run_id[-4:]}"
        provider = LocalProvider.for_build(name, build, run.directory / "local-logs")
        context, node_access = provider.context or name, ["--local-state", str(provider.cluster.state)]
    else:
        cluster = KindCluster(
            name=f"plp-{safe_name(image.kubernetes.minor)}-{run.run_id[-4:]}",
            image=image.reference,
            kubeconfig=run.directory / "kubeconfig",
            kind_bin=args.kind_bin,
        )
        provider = KindProvider(
            cluster, image.kind_release, parse_kind_version(kind_line), kind_line, images_in_manifests()
        )
        context, node_access = f"kind-{cluster.name}", ["--kind-nodes"]
    started = time.monotonic()
    code = 1
    try:
        with cluster_life(provider, run.write_provenance, args.keep_cluster, run.directory / "kind-logs"):
            if "preloaded" in run.provenance:
                print("images: " + "; ".join(f"{i}: {said}" for i, said in run.provenance["preloaded"].items()))
            startup = time.monotonic() - started
            target = ["--kubeconfig", str(provider.kubeconfig), "--context", context, *node_access]
            command = pytest_argv(
                args, [*target, "--run-id", run.run_id, "-n", str(args.parallel), "-m", "not node_shutdown"]
            )
            print("+ " + " ".join(command), flush=True)
            code = _wait_for(subprocess.Popen(command))
            if image is not None:
                # The node-shutdown probes need their own kind cluster (harness/node_shutdown.py), which only
                # the kind mode of the fixtures makes: they run afterwards, one at a time, in this run's directory.
                shutdown = [*_own_junit(pytest_argv(args), "shutdown"), "--run-id", run.run_id, "-m", "node_shutdown"]
                print("+ " + " ".join(shutdown), flush=True)
                env = {**os.environ, "PYTEST_XDIST_WORKER": "shutdown"}
                shutdown_code = _wait_for(subprocess.Popen(shutdown, env=env))
                if shutdown_code not in (0, NO_TESTS_COLLECTED):
                    code = code or shutdown_code
            timing = probe_timing(run.directory, time.monotonic() - started, startup)
            run.write_provenance(timing=timing)
            print(
                f"wall {timing['wall_s']:.0f}s = cluster start-up {timing['cluster_startup_s']:.0f}s + probes; "
                f"longest probe {timing['longest_probe_s']:.0f}s; wall / (start-up + longest) = {timing['ratio']:.2f}"
            )
    except ClusterFailed as err:
        print(f"error: {err}", file=sys.stderr)
    finally:
        if run.provenance.get("cluster_kept"):
            print(run.provenance["cluster_kept_message"])
        run.finish("passed" if code == 0 else "failed")
    return code


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


def check_existing_cluster(kubeconfig: str, context: str) -> str | None:
    """Why the suite will not use this kubeconfig/context, or None. The file is only read."""
    if not context:
        return (
            "--kubeconfig needs an explicit --context (CONTEXT=...): without one the suite acts only on clusters "
            "it creates itself"
        )
    try:
        contexts, _ = config.list_kube_config_contexts(config_file=kubeconfig)
    except (OSError, config.ConfigException) as err:
        return f"cannot read kubeconfig {kubeconfig}: {err}"
    names = [c["name"] for c in contexts or []]
    if context not in names:
        return f"context {context!r} is not in {kubeconfig}; it has: {', '.join(names) or 'none'}"
    return None


def run_clean_command(args: argparse.Namespace) -> int:
    report = janitor.JanitorReport()
    if shutil.which(args.kind_bin):
        janitor.clean_kind_clusters(report, args.kind_bin)
    else:
        print(f"{args.kind_bin} is not on PATH: no kind clusters to look for", file=sys.stderr)
    if local_cluster.leftover_clusters():
        if os.geteuid() == 0:
            janitor.clean_local_clusters(report)
        else:
            print(f"local clusters under {local_cluster.DEFAULT_ROOT} need root to stop: run make clean as root")
    if args.kubeconfig:
        problem = check_existing_cluster(args.kubeconfig, args.context)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return BAD_INPUT
        api = config.new_client_from_config(config_file=args.kubeconfig, context=args.context or None)
        janitor.clean_namespaces(report, client.CoreV1Api(api))
    print(report.render())
    return 1 if report.errors else 0


def run_node_image_command(args: argparse.Namespace) -> int:
    """Build (or reuse) plp-node:vX.Y.Z with the newest kind release, checksum-verified like make probe's."""
    try:
        tag = node_image_build.local_tag(args.version)
        release = node_image_build.build_kind_release()
        check_docker()
        kind_bin = ensure_kind(release)
        tag, said = node_image_build.build_node_image(args.version, kind_bin, release)
    except VersionError as err:
        print(f"error: {err}", file=sys.stderr)
        return BAD_INPUT
    except (PrerequisiteMissing, KindInstallError) as err:
        print(f"error: {err}", file=sys.stderr)
        return PREREQUISITE_MISSING
    except node_image_build.NodeImageBuildFailed as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(said)
    print(f"run the probes on it: make probe IMAGE={tag}")
    return 0


def run_bisect_command(args: argparse.Namespace) -> int:
    """Each candidate version is one `python -m harness probe` run (its own cluster); see harness/bisect.py."""
    try:
        versions = bisect_module.candidates(args.good, args.bad, args.build)
    except VersionError as err:
        print(f"error: {err}", file=sys.stderr)
        return BAD_INPUT
    directory = Path(args.run_dir) / f"bisect-{new_run_id()}"
    pinned = {str(i.kubernetes.version) for i in known_images()}

    def run(version: str) -> str:
        where = ["--version", version]
        if version not in pinned:  # only with --build
            built = main(["node-image", "--version", version])
            if built != 0:
                return bisect_module.SKIP
            where = ["--image", node_image_build.local_tag(version)]
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


def prepare_local(args: argparse.Namespace) -> int:
    """Check everything a local cluster needs in seconds, then build (or reuse) the release: 0 when ready."""
    if args.image:
        print("error: IMAGE is a kind node image; a local cluster (CLUSTER=local) takes VERSION only", file=sys.stderr)
        return BAD_INPUT
    try:
        args.version = release_text(args.version or "")
    except VersionError as err:
        print(f"error: {err}", file=sys.stderr)
        return BAD_INPUT
    host_problems = local_cluster.check_host()
    if host_problems:
        print("error: a local cluster cannot run here:\n  " + "\n  ".join(host_problems), file=sys.stderr)
        return PREREQUISITE_MISSING
    if running := local_cluster.running_clusters():
        print(
            f"error: a local cluster of the suite is already running ({', '.join(running)}); one at a time "
            "(make clean stops it)",
            file=sys.stderr,
        )
        return PREREQUISITE_MISSING
    problems, checked = check_manifests(KubeVersion.parse(args.version))
    if problems:
        listed = "\n  ".join(str(p) for p in problems)
        print(f"error: manifests invalid for Kubernetes {args.version}:\n  {listed}", file=sys.stderr)
        return BAD_INPUT
    print(checked)
    if existing_build(args.version) is None:
        try:
            print(check_go())
            resolve_module(args.version)
        except BuildError as err:
            print(f"error: {err}", file=sys.stderr)
            return BAD_INPUT if "does not serve" in str(err) else PREREQUISITE_MISSING
    try:
        build = build_kubernetes(args.version)
    except BuildError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(
        f"Kubernetes {build.version} built with {build.record['toolchain']} in {build.record['duration_s']:.0f}s "
        f"({build.directory})"
    )
    return 0


def kind_status(release: str | None) -> str:
    if shutil.which("kind"):
        return "kind is on PATH"
    if release:
        return f"kind is not on PATH: once Docker works, make probe installs kind {release} (checksum-verified) itself"
    return f"kind is not on PATH: {INSTALL_KIND}"


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
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
        out = Path(args.out) if args.out else REPO / "runs" / f"report-{new_run_id()}"
        built = report_module.write_report([Path(p) for p in args.runs], out)
        print(f"{len(built.claims)} claims × {len(built.versions)} versions; {len(built.changed())} verdicts changed")
        print(f"report: {out / 'report.html'} and {out / 'report.md'}")
        return 0
    image: NodeImage | None = None
    kind_line = ""
    if args.kubeconfig:
        problem = check_existing_cluster(args.kubeconfig, args.context)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return BAD_INPUT
    elif args.cluster == "local":
        code = prepare_local(args)
        if code != 0:
            return code
    else:
        try:
            image = resolve_image(args.version or None, args.image or None)
        except VersionError as err:
            print(f"error: {err}", file=sys.stderr)
            return BAD_INPUT
        if image.digest is None and not image.reference.startswith(f"{node_image_build.LOCAL_REPOSITORY}:"):
            print(
                f"warning: {image.reference} is not pinned by digest; kind asks for @sha256 digests because tags "
                "are rebuilt (kind#3853), so what runs may not be what this name meant before",
                file=sys.stderr,
            )
        problems, checked = check_manifests(image.kubernetes)
        if problems:
            listed = "\n  ".join(str(p) for p in problems)
            print(f"error: manifests invalid for Kubernetes {image.kubernetes}:\n  {listed}", file=sys.stderr)
            return BAD_INPUT
        print(checked)
        try:
            check_docker()
        except PrerequisiteMissing as err:
            print(f"error: {err}\n  {kind_status(image.kind_release)}", file=sys.stderr)
            return PREREQUISITE_MISSING
        if args.kind_bin == "kind" and image.kind_release:
            try:
                args.kind_bin = ensure_kind(image.kind_release)
            except KindInstallError as err:
                print(f"error: {err}", file=sys.stderr)
                return PREREQUISITE_MISSING
        try:
            kind_line = check_prerequisites(kind_bin=args.kind_bin)
        except PrerequisiteMissing as err:
            print(f"error: {err}", file=sys.stderr)
            return PREREQUISITE_MISSING
        print(f"node image {image.reference} (built by kind {image.kind_release or 'unknown'}); {kind_line}")
        if image.kind_release and image.kind_release not in kind_line:
            print(
                f"warning: this image was built for kind {image.kind_release}; kind supports an image only with "
                "the release that built it (best effort otherwise)",
                file=sys.stderr,
            )
    if args.parallel > 1 and not args.kubeconfig:
        return run_parallel(args, image, kind_line)
    command = pytest_argv(args)
    print("+ " + " ".join(command), flush=True)
    # Become pytest: Ctrl-C and CI's SIGTERM then reach it directly and its teardown cleans up; its
    # exit code is make's (5 when PROBE matched nothing).
    os.execv(command[0], command)
