"""make clean (the suite's leftovers, each kind of cluster's own), make report (the behaviour matrix of run
records) and make node-image (a node image for a release kind does not publish).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harness.axis.matrix import entry_runtimes
from harness.base import inputs, outputs, paths
from harness.base.errors import NotRunnable, PrerequisiteMissing
from harness.base.inputs import BadInput
from harness.base.run import new_run_id
from harness.clusters import janitor
from harness.clusters.kind.node_images import make_node_image
from harness.clusters.kinds import Request
from harness.clusters.registry import KINDS
from harness.core import records as records_module
from harness.doors.commands.refusal import (
    BAD,
    MISSING,
    NOTHING_TO_REPORT,
    Refused,
    missing_arguments,
    refuse,
)

if TYPE_CHECKING:
    from harness.reports import report_model, upgrade_model

# The report's modules are imported where a report is made, after its inputs are checked: make report refused (RUNS
# not there) and the commands that only may report (make matrix, make bisect) load none of them before then.


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
    """The behaviour matrix of the run records under RUNS; refused when there is nothing to report. --out, when
    given, is checked before anything is read (harness/base/outputs.py) and replaced only once the report is whole;
    without it, the report goes into a new folder beside the records."""
    try:
        out = outputs.check_output_dir(args.out, "--out (the report folder)") if args.out else None
        records = report_records(args.runs)
        runtimes = entry_runtimes([Path(run) for run in args.runs])  # a matrix's entries on runtimes of their own
        built, chosen = report_matrix(records, args.from_version, args.to_version, ", ".join(args.runs), runtimes)
    except BadInput as err:
        return refuse(BAD, str(err))
    except Refused as refused:
        return refuse(refused.kind, refused.problem)
    from harness.reports import report as report_module

    try:
        if out is None:
            out = outputs.new_output_dir(report_home(args.runs), f"report-{new_run_id()}")
            report_module.write_matrix(built, out, chosen)
        else:
            with outputs.replacing(out) as staging:
                report_module.write_matrix(built, staging, chosen)
    except OSError as err:
        return refuse(BAD, f"the report folder {out} cannot be written: {err.strerror or err}")
    print(f"{built.summary()}; {len(built.changed())} verdicts changed")
    print(f"report: {out / 'report.html'} and {out / 'report.md'}")
    return 0


def report_records(runs: list[str]) -> list[report_model.JsonDict]:
    """The probe records under RUNS, or Refused saying why there are none to read."""
    missing = [p for p in runs if not Path(p).exists()]
    if missing and all(Path(p).resolve() == paths.RUNS for p in missing):  # make report before any run
        raise Refused(
            NOTHING_TO_REPORT,
            f"no run records: {', '.join(missing)} is not there yet (make probe, or make test, writes run records "
            "under runs/)",
        )
    if missing:
        raise Refused(
            BAD,
            f"nothing to report from {', '.join(missing)}: no such file or directory (RUNS names run directories or "
            "probe record files; make probe writes them under runs/)",
        )
    try:
        records = records_module.load_records([Path(p) for p in runs])
    except records_module.RecordError as err:
        raise Refused(BAD, str(err)) from err
    if not records:
        raise Refused(
            NOTHING_TO_REPORT,
            f"no run records: looked for probe records (probes/*.json) under {', '.join(runs)}; make probe (or make "
            "test) writes them",
        )
    return records


def report_matrix(
    records: list[report_model.JsonDict],
    from_version: str,
    to_version: str,
    where: str,
    runtimes: dict[str, str] | None = None,
) -> tuple[report_model.Matrix, upgrade_model.Upgrade | None]:
    """The behaviour matrix of the records, with what changes between FROM and TO when either is given; Refused when
    FROM and TO cannot be used or no record reached a server (`where`: where the records were read). `runtimes`: the
    runs of make matrix entries that named a runtime, each its own column (harness/axis/matrix.py entry_runtimes)."""
    from harness.doors.commands.upgrade import Refusal, releases
    from harness.reports import report_reading, upgrade_compare

    ends = None
    if from_version or to_version:
        try:
            ends = releases(from_version, to_version, records)
        except Refusal as err:
            raise Refused(BAD, str(err)) from err
    built = report_reading.build_matrix(records, runtimes=runtimes)
    if not built.versions:
        raise Refused(
            NOTHING_TO_REPORT,
            f"{len(records)} records, none from a run that reached a server: looked for probe records "
            f"(probes/*.json) under {where}",
        )
    chosen = None
    if ends is not None:  # read from the matrix's observations of the records: judged once, not twice
        said = f"live: the {sum(records_module.origin_kind(r) == 'live' for r in records)} live records under RUNS"
        observed = built.observations or upgrade_compare.Observations.of(records)
        chosen = upgrade_compare.compare(*ends, observed, [said])
    return built, chosen


def run_node_image_command(args: argparse.Namespace) -> int:
    """Build (or reuse) plp-node:vX.Y.Z: with kind's release builder, or from Go modules when that cannot work."""
    if problem := missing_arguments(args, {"version": "VERSION"}):
        return refuse(BAD, f"{problem}: the release to build, e.g. make node-image VERSION=1.27.0-rc.0")
    try:
        release = inputs.requested_release(args.version)  # VERSION read here, once
        assert release is not None  # an empty VERSION was refused above
        tag = make_node_image(
            release,
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
