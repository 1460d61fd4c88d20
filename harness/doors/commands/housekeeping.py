"""make clean (the suite's leftovers, each kind of cluster's own), make report (the behaviour matrix of run
records) and make node-image (a node image for a release kind does not publish).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.base import inputs, paths
from harness.base.errors import NotRunnable, PrerequisiteMissing
from harness.base.inputs import BadInput
from harness.base.run import new_run_id
from harness.clusters import janitor
from harness.clusters.kind.node_images import make_node_image
from harness.clusters.kinds import Request
from harness.clusters.registry import KINDS
from harness.doors.commands.refusal import (
    BAD,
    MISSING,
    NOTHING_TO_REPORT,
    missing_arguments,
    refuse,
)
from harness.doors.commands.upgrade import Refusal, releases
from harness.reports import report as report_module
from harness.reports import upgrade


def run_clean_command(args: argparse.Namespace) -> int:
    """Remove the suite's leftovers; a kubeconfig (and the API server it names) is checked before anything is
    touched."""
    inputs.check_existing_cluster(args.kubeconfig, args.context)
    if args.kubeconfig:
        try:
            inputs.check_api_server(args.kubeconfig, args.context)
        except PrerequisiteMissing as err:
            return refuse(MISSING, f"{err} (make clean removes its namespaces only through it)")
    request = Request(kubeconfig=args.kubeconfig, context=args.context, kind_bin=args.kind_bin)
    kinds = [kind for kind in KINDS if not kind.makes_clusters or args.cluster in (None, kind.name)]
    report = janitor.clean(kinds, request)
    for note in (note for found in report.found for note in found.notes):
        print(note, file=sys.stderr)
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
        tag = make_node_image(
            args.version,
            getattr(args, "source", "auto"),
            print,
            parts=getattr(args, "parts", "kind"),
            containerd=getattr(args, "containerd", ""),
            kind=getattr(args, "kind", ""),
        )
    except BadInput as err:
        return refuse(BAD, str(err))
    except PrerequisiteMissing as err:
        return refuse(MISSING, str(err))
    except NotRunnable as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"run the probes on it: make probe IMAGE={tag}")
    return 0
