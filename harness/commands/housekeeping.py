"""make clean (the suite's leftovers), make report (the behaviour matrix of run records) and make node-image (a node
image for a release kind does not publish).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from harness import inputs, paths, upgrade
from harness import report as report_module
from harness.commands.refusal import (
    BAD,
    MISSING,
    NOTHING_TO_REPORT,
    host_refusal,
    missing_arguments,
    refuse,
    stopping,
)
from harness.commands.upgrade import Refusal, releases
from harness.engine import check_engine
from harness.errors import PrerequisiteMissing
from harness.inputs import BadInput
from harness.kind import check_docker
from harness.kind_install import KindInstallError, ensure_kind
from harness.local import host as local_host
from harness.local import teardown as local_teardown
from harness.local.build import (
    BuildError,
    check_go,
    resolve_module,
)
from harness.nodeimage import release as node_image_release
from harness.nodeimage.images import NodeImageError
from harness.nodeimage.node import build_node_images
from harness.nodeimage.node import host_problems as node_image_host_problems
from harness.run import new_run_id
from harness.versions import VersionError


def run_clean_command(args: argparse.Namespace) -> int:
    """Remove the suite's leftovers; a kubeconfig (and the API server it names) is checked before anything is
    touched."""
    inputs.check_existing_cluster(args.kubeconfig, args.context)
    if args.kubeconfig:
        try:
            inputs.check_api_server(args.kubeconfig, args.context)
        except PrerequisiteMissing as err:
            return refuse(MISSING, f"{err} (make clean removes its namespaces only through it)")
    from harness import janitor  # the Kubernetes client with it (a few tenths of a second): after the checks

    report = janitor.JanitorReport()
    kind_bin = shutil.which(args.kind_bin) or janitor.installed_kind()
    if args.cluster != "local":
        if kind_bin:
            janitor.clean_kind_clusters(report, kind_bin)
        else:
            print(f"{args.kind_bin} is not on PATH: no kind clusters to look for", file=sys.stderr)
    if args.cluster != "kind" and local_teardown.leftover_clusters():
        if os.geteuid() == 0:
            janitor.clean_local_clusters(report)
        else:
            print(f"local clusters under {local_host.DEFAULT_ROOT} need root to stop: run make clean as root")
    if args.kubeconfig:
        import urllib3
        from kubernetes import config
        from kubernetes.client.exceptions import ApiException

        from harness.kubeapi import KubeApi

        try:
            api = config.new_client_from_config(config_file=args.kubeconfig, context=args.context)
            janitor.clean_namespaces(report, KubeApi(api))
        except (config.ConfigException, ApiException, urllib3.exceptions.HTTPError, OSError, ValueError) as err:
            report.errors.append(f"cannot clean namespaces on context {args.context!r} of {args.kubeconfig}: {err}")
    print(report.render())
    return 1 if report.errors else 0


def report_home(runs: list[str]) -> Path:
    """Where a report goes when --out is not given: beside the run records it reads (the first directory RUNS
    names, or the folder of the first record file), so RUNS=elsewhere writes nothing under the suite's runs/."""
    first = Path(runs[0])
    return first if first.is_dir() else first.parent


def run_report_command(args: argparse.Namespace) -> int:
    """The behaviour matrix of the run records under RUNS; refused when there is nothing to report."""
    missing = [p for p in args.runs if not Path(p).exists()]
    if missing and all(Path(p).resolve() == paths.RUNS for p in missing):  # make report before any run
        return refuse(
            NOTHING_TO_REPORT,
            f"no run records: {', '.join(missing)} is not there yet (make probe, or make test, writes run records "
            "under runs/)",
        )
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
    chosen = None
    if args.from_version or args.to_version:
        try:
            before, after = releases(args.from_version, args.to_version, records)
        except Refusal as err:
            return refuse(BAD, str(err))
        said = f"live: the {sum(report_module.origin_kind(r) == 'live' for r in records)} live records under RUNS"
        chosen = upgrade.compare(before, after, records, [said])
    built = report_module.build_matrix(records)
    if not built.versions:
        return refuse(NOTHING_TO_REPORT, f"{len(records)} records, none from a run that reached a server: {looked}")
    out = Path(args.out) if args.out else report_home(args.runs) / f"report-{new_run_id()}"
    try:
        inputs.check_run_dir(out)
    except BadInput as err:
        return refuse(BAD, str(err).replace("the run directory", "the report directory"))
    report_module.write_matrix(built, out, chosen)
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
