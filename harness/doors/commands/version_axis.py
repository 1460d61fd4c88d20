"""The version axis: make matrix (the probes on several versions) and make bisect (the first release on which a
probe fails, or on which a claim observed what BAD did), each version one `python -m harness probe` run, on any
kind of cluster that runs a given release: the kind says which releases, how one is made runnable and how it is
probed (harness/axis/release_axis.py ReleaseAxis).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from harness.axis import bisect as bisect_module
from harness.axis import matrix
from harness.axis.build_ahead import BuildAhead
from harness.axis.release_axis import PlannedVersion, ReleaseAxis, matrix_entry
from harness.base import inputs, outputs
from harness.base.errors import PrerequisiteMissing, stopping
from harness.base.inputs import BadInput
from harness.base.paths import TOOLS, in_checkout
from harness.base.process import run_through_interrupt
from harness.base.run import new_run_id, safe_name, suite_version
from harness.base.versions import Release, VersionError
from harness.clusters.kinds import ClusterKind, RunsReleases
from harness.clusters.registry import kind_named
from harness.core.expectations import all_claim_ids
from harness.doors.commands.housekeeping import run_report_command
from harness.doors.commands.refusal import (
    BAD,
    MISSING,
    missing_arguments,
    refuse,
    selection_problem,
)
from harness.doors.commands.runtimes import runtimes_of_runs
from harness.gobuild.go import BuildError, check_go


def release_axis(args: argparse.Namespace, tools: Path = TOOLS) -> tuple[ClusterKind, ReleaseAxis]:
    """The kind CLUSTER names and its version axis for this command's options."""
    kind = kind_named(args.cluster)
    assert isinstance(kind, RunsReleases), f"CLUSTER={kind.name} has no version axis"  # (CLUSTER offers only those)
    return kind, kind.release_axis(args, tools)


def axis_host_refusal(axis: ReleaseAxis, one_at_a_time: bool, go: bool, host: bool = True) -> int | None:
    """The refusal when this host cannot run the kind's releases (`host`), or has no Go to ask the module proxy or
    build with (`go`); else None, Go said."""
    try:
        if host:
            axis.check_host(one_at_a_time)
        if go:
            print(check_go())
    except (PrerequisiteMissing, BuildError) as err:
        return refuse(MISSING, str(err))
    return None


def requested_versions(args: argparse.Namespace, every: list[str]) -> list[str]:
    """VERSIONS as given: not given, `every` minor; given but empty, or naming none, refused (an empty VERSIONS
    is more likely a mistake than a wish for all of them, which is VERSIONS left out)."""
    if args.versions is None:
        return every
    versions: list[str] = args.versions.split()
    if not versions:
        raise BadInput(
            f'VERSIONS (--versions) is empty: name the versions (VERSIONS="1.26 1.27"), or leave VERSIONS out for '
            f"every minor with a pinned image ({len(every)})"
        )
    return versions


def read_releases(texts: list[str]) -> list[Release]:
    """The versions of VERSIONS (or the kind's default ones) read once, into the typed releases the version axis takes;
    BadInput for one that names no release."""
    try:
        return [Release.parse(text) for text in texts]
    except VersionError as err:
        raise BadInput(str(err)) from err


def read_end(text: str, variable: str) -> Release:
    """GOOD or BAD read once, into the typed release the version axis takes; VersionError naming the variable."""
    try:
        return Release.parse(text)
    except VersionError as err:
        raise VersionError(str(err).replace("VERSION=", f"{variable}=")) from None


def refuse_duplicates(requested: list[str], runs: list[str]) -> None:
    """Each run once: two entries that resolve to one (1.27 and 1.27.16; 1.27.16:kind and 1.27.16:kind=v0.25.0, one
    node image) are refused, never run twice; `runs` says what each entry runs (ReleaseAxis.runs_as)."""
    seen: dict[str, str] = {}
    for asked, run in zip(requested, runs, strict=True):
        if run in seen:
            raise BadInput(
                f"VERSIONS names {run} twice ({seen[run]} and {asked}): each version runs once "
                "(REPEAT runs each probe again)"
            )
        seen[run] = asked


def runtime_axes(kind: ClusterKind, axis: ReleaseAxis, entries: list[tuple[str, str]]) -> dict[str, ReleaseAxis]:
    """The kind's axis for each runtime the entries name after their version ("" its own); BadInput in one line for
    a runtime the kind does not know or has none of."""
    axes: dict[str, ReleaseAxis] = {}
    for version, runtime in entries:
        if runtime in axes:
            continue
        try:
            on_runtime = axis.on_runtime(runtime)
        except BadInput as err:
            raise BadInput(f"VERSIONS entry {version}:{runtime}: {err}") from err
        if on_runtime is None:
            raise BadInput(
                f"VERSIONS entry {version}:{runtime}: CLUSTER={kind.name} runs each release on its own runtime; give "
                "the version alone"
            )
        axes[runtime] = on_runtime
    return axes


def run_matrix_command(args: argparse.Namespace) -> int:
    """make matrix: every version planned and checked in seconds, then run JOBS at a time (one at a time on a kind
    whose clusters cannot share a host), the next release made runnable meanwhile; the record and the report. An
    entry may name a runtime after its version (VERSIONS="1.27.16 1.27.16:debian"), which the kind reads
    (ReleaseAxis.on_runtime); one release on several runtimes is then set side by side, claim by claim."""
    kind, axis = release_axis(args)
    if refusal := axis.matrix_refusal():
        raise BadInput(refusal)
    requested = requested_versions(args, axis.default_versions())
    entries = [matrix_entry(entry) for entry in requested]
    wanted = read_releases([version for version, _ in entries])  # VERSIONS read here, once
    axes = runtime_axes(kind, axis, entries)
    on_axes = [axes[runtime] for _, runtime in entries]
    refuse_duplicates(
        requested, [on.runs_as(on.releases([release])[0]) for release, on in zip(wanted, on_axes, strict=True)]
    )
    inputs.check_run_dir(args.run_dir)
    builds_here = any(each.builds_here for each in axes.values())
    if refused := axis_host_refusal(axis, one_at_a_time=True, go=builds_here):
        return refused
    try:
        plan = [on.plan([release])[0] for release, on in zip(wanted, on_axes, strict=True)]
    except PrerequisiteMissing as err:
        return refuse(MISSING, str(err))
    on = {planned.name: each for planned, each in zip(plan, on_axes, strict=True)}
    release_of = {planned.name: planned.release for planned in plan}
    base = Path(args.run_dir) / f"matrix-{new_run_id()}"
    outputs.own(base)
    for planned, entry in zip(plan, requested, strict=True):
        said = f" ({planned.note})" if planned.note else ""
        print(f"  {entry} -> v{planned.name}{said}")
    jobs = 1 if axis.one_at_a_time else args.jobs
    how = [f"{len(plan)} versions on {kind.name} clusters, {'one' if jobs == 1 else jobs} at a time"]
    how += [f"PARALLEL={args.parallel}"] if args.parallel else []
    if builds_here:
        how.append(f"builds {'after each version' if args.no_overlap else 'ahead, while probes run'}")
    print(f"{', '.join(how)}; records under {base}", flush=True)

    stop_builds = threading.Event()

    def probe_argv(name: str, run_dir: Path) -> list[str]:
        argv = [sys.executable, "-m", "harness", "probe", *on[name].probe_args(release_of[name])]
        argv += ["--parallel", str(args.parallel)] if args.parallel else []
        argv += ["--run-dir", str(run_dir)]
        return argv + (["--probe", args.probe] if args.probe else [])

    started = time.monotonic()
    builder = matrix.Builder(
        lambda name: on[name].ready(release_of[name], stop=stop_builds, quiet=True),
        is_built=lambda name: on[name].is_ready(release_of[name]),
    )
    stopped_build: list[str] = []
    tools = TOOLS if builds_here else None

    def stop_the_builds() -> None:
        # a build ahead would otherwise run to its end before this process could exit (no Ctrl-C reaches it: its go
        # processes, or the node image build, run in a session of their own), and a version waiting for it with it
        if not stop_builds.is_set():
            stopped_build.append(builder.building)
            stop_builds.set()

    try:
        with stopping(lambda: matrix.stopped_line(base, stopped_build)):
            try:
                results = matrix.run_versions(
                    plan, jobs, builder, base, probe_argv, tools, not args.no_overlap, on_stop=stop_the_builds
                )
            finally:
                stop_the_builds()
    finally:
        builder.shutdown()
    wall = time.monotonic() - started
    print(matrix.render(results, wall))
    record = {"cluster": kind.name, "wall_s": round(wall, 1), "versions": [dataclasses.asdict(r) for r in results]}
    (base / "matrix.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"matrix record: {base / 'matrix.json'}")
    if any(r.probes for r in results):
        run_report_command(
            argparse.Namespace(runs=[str(base)], out=str(base / "report"), from_version="", to_version="")
        )
    if on_several_runtimes(plan):
        runtimes_of_runs([base])
    return 0 if all(r.status == "passed" for r in results) else 1


def on_several_runtimes(plan: list[PlannedVersion]) -> bool:
    """Whether the matrix runs one release on two runtimes or more (then set side by side after it)."""
    seen: dict[str, set[str]] = {}
    for planned in plan:
        seen.setdefault(str(planned.release), set()).add(planned.runtime)
    return any(len(runtimes) > 1 for runtimes in seen.values())


def run_bisect_command(args: argparse.Namespace) -> int:
    """Each candidate release is one `python -m harness probe` run (its own cluster), made runnable first; with
    CLAIM, releases are classified by what the claim observed (bisections/<name>.json), else by pass or fail
    (harness/axis/bisect.py). Which a kind bisects with is its own (ReleaseAxis.bisect_refusal)."""
    if problem := missing_arguments(args, {"probe": "PROBE", "good": "GOOD", "bad": "BAD"}):
        return refuse(BAD, f"{problem}: make bisect PROBE=<name or -k expression> GOOD=1.27.3 BAD=1.27.16")
    kind, axis = release_axis(args)
    if refusal := axis.bisect_refusal():
        return refuse(BAD, refusal)
    try:
        good, bad = read_end(args.good, "GOOD"), read_end(args.bad, "BAD")  # GOOD and BAD read here, once
        releases = {str(release): release for release in axis.candidates(good, bad)}  # by the name records give them
    except VersionError as err:
        return refuse(BAD, str(err))
    if args.claim and args.claim not in (known_claims := all_claim_ids()):
        return refuse(BAD, f"no claim {args.claim!r} in the expectations (e.g. {', '.join(sorted(known_claims)[:3])})")
    inputs.check_run_dir(args.run_dir)
    if not_selected := selection_problem(args.probe, args.run_dir):
        return refuse(*not_selected)
    if axis.builds_here and (refused := axis_host_refusal(axis, one_at_a_time=False, go=True)):
        return refused
    if args.claim:
        return _bisect_on_a_claim(args, kind, axis, releases)
    return _bisect_on_pass_or_fail(args, axis, releases)


def builds_ahead(axis: ReleaseAxis, releases: Mapping[str, Release]) -> BuildAhead:
    """The releases a bisection may try next (by name), made runnable one at a time while a candidate's probes
    run."""
    return BuildAhead(
        lambda name, stop, quiet: axis.ready(releases[name], stop, quiet),
        lambda name: axis.is_ready(releases[name]),
        say=print,
    )


def _bisect_on_pass_or_fail(args: argparse.Namespace, axis: ReleaseAxis, releases: dict[str, Release]) -> int:
    directory = Path(args.run_dir) / f"bisect-{new_run_id()}"
    builder = builds_ahead(axis, releases)
    versions = list(releases)

    def run(version: str) -> str:
        if builder.ready(version).why_not:
            return bisect_module.SKIP
        run_dir = directory / version
        command = [sys.executable, "-m", "harness", "probe", *axis.probe_args(releases[version])]
        command += ["--probe", args.probe]
        command += ["--run-dir", str(run_dir)]
        print("+ " + " ".join(command), flush=True)
        code = run_through_interrupt(command)
        records = sorted(run_dir.glob("*/run.json"))
        return bisect_module.outcome_of_run(code, records[-1] if records else run_dir / "run.json")

    print(f"bisecting {args.probe!r} over {', '.join(versions)}")
    try:
        found = bisect_module.bisect(versions, run, ahead=builder.want)
    except bisect_module.BisectError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        builder.close()
    outputs.own(directory)
    (directory / "bisect.json").write_text(json.dumps(found.to_json(), indent=1) + "\n")
    print(f"{found.conclusion}; record: {directory / 'bisect.json'}")
    return 0 if found.first_bad else 1


def _bisect_on_a_claim(
    args: argparse.Namespace, kind: ClusterKind, axis: ReleaseAxis, releases: dict[str, Release]
) -> int:
    """Each release between GOOD and BAD made runnable once, probed on its own cluster, and classified by what the
    claim observed; the record goes to bisections/<name>.json."""
    name = safe_name(args.name or f"{args.claim}-{args.good}-{args.bad}")
    directory = Path(args.run_dir) / f"bisect-{new_run_id()}"
    builder = builds_ahead(axis, releases)
    versions = list(releases)

    def observe(version: str, attempt: int) -> bisect_module.ClaimObservation:
        seen = bisect_module.ClaimObservation(version, "")
        readied = builder.ready(version)
        if readied.why_not:
            seen.why = readied.why_not
            return seen
        recorded = ("version", "commit", "toolchain", "toolchain_policy", "upstream_go", "duration_s", "work")
        seen.build = {k: readied.record.get(k) for k in recorded if k in readied.record}
        seen.build["staging_substitutions"] = readied.record.get("staging_substitutions") or {}
        if readied.record.get("module_stand_ins"):
            seen.build["module_stand_ins"] = readied.record["module_stand_ins"]
        name = version if args.runs == 1 else f"{version}-run-{attempt}"
        run_dir = directory / name
        command = [sys.executable, "-m", "harness", "probe", *axis.probe_args(releases[version])]
        command += ["--probe", args.probe, "--run-dir", str(run_dir)]
        print("+ " + " ".join(command), flush=True)
        probe_started = time.monotonic()
        with (directory / f"{name}.log").open("w") as log:
            run_through_interrupt(command, log)
        seen.probe_s = round(time.monotonic() - probe_started, 1)
        seen.run_dir = in_checkout(run_dir)  # relative to the checkout: the record is committed
        seen.observed, seen.verdicts = bisect_module.claim_observations(run_dir, args.claim)
        for run_json in sorted(run_dir.glob("*/run.json")):
            record = json.loads(run_json.read_text())
            seen.cluster = {
                "run_id": record.get("run_id"),
                "server_version": record.get("server_version"),
                **axis.ran_on(record),
                **({"cluster_error": record["cluster_error"]} if record.get("cluster_error") else {}),
            }
        if not seen.observed:
            seen.why = f"the run observed nothing for the claim (log: {in_checkout(directory / f'{name}.log')})"
        return seen

    outputs.own(directory)
    # what runs is the checkout as it is now: read at the start, as a run record does, not after the builds
    suite, clock = suite_version(), time.monotonic()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    runs = f", up to {args.runs} runs each" if args.runs > 1 else ""
    print(f"bisecting {args.claim} ({args.probe}) over {', '.join(versions)}{runs}", flush=True)
    oracle = bisect_module.ClaimOracle(args.claim, observe, print, runs=args.runs)
    try:
        good, bad, *middle = bisect_module.first_candidates(versions)
        builder.want([bad, good, *middle])  # the oracle runs BAD first
        oracle.learn_ends(versions[0], versions[-1])
        found = bisect_module.bisect(versions, oracle, ahead=builder.want)
    except bisect_module.BisectError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        builder.close()
    ran = {
        "provider": kind.name,
        "started": started,
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_s": round(time.monotonic() - clock, 1),
        "builds_stopped": builder.stopped,  # builds ahead the search went past, in order
        "kernel": platform.release(),
        "runs": in_checkout(directory),
        **suite,
    }
    record = bisect_module.bisection_record(name, args.claim, args.probe, args.good, args.bad, oracle, found, ran)
    out = Path(args.record_dir) / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1, default=str) + "\n")
    print(f"{found.conclusion}; record: {out}")
    return 0 if found.first_bad else 1
