"""The version axis: make matrix (the probes on several versions) and make bisect (the first release on which a
probe fails, or on which a claim observed what BAD did), each version one `python -m harness probe` run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness import bisect as bisect_module
from harness import inputs, matrix
from harness.commands.housekeeping import run_node_image_command, run_report_command
from harness.commands.probe import local_host_refusal
from harness.commands.refusal import (
    BAD,
    MISSING,
    missing_arguments,
    refuse,
    selection_problem,
    stopping,
)
from harness.engine import check_engine
from harness.errors import PrerequisiteMissing, one_line
from harness.expectations import all_claim_ids
from harness.inputs import BadInput
from harness.kind import check_docker
from harness.local.build import (
    TOOLS,
    BuildError,
    build_kubernetes,
    check_go,
    existing_build,
    resolve_module,
)
from harness.nodeimage import release as node_image_release
from harness.process import run_through_interrupt
from harness.run import new_run_id, safe_name, suite_version
from harness.versions import KubeVersion, VersionError, known_images


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


def refuse_duplicates(requested: list[str], resolved: list[str]) -> None:
    """Each version once: two that resolve to one release (1.27 and 1.27.16) are refused, never run twice."""
    seen: dict[str, str] = {}
    for asked, release in zip(requested, resolved, strict=True):
        if release in seen:
            raise BadInput(
                f"VERSIONS names Kubernetes {release} twice ({seen[release]} and {asked}): each version runs once "
                "(REPEAT runs each probe again)"
            )
        seen[release] = asked


def run_matrix_command(args: argparse.Namespace) -> int:
    if args.cluster == "local":
        return run_local_matrix_command(args)
    for given, variable in ((args.parallel, "PARALLEL"), (args.probe, "PROBE")):
        if given not in (None, ""):
            raise BadInput(
                f"{variable} applies to make matrix CLUSTER=local; a kind matrix runs every probe of each version as "
                "make probe VERSION=... does"
            )
    versions = requested_versions(args, matrix.default_versions())
    refuse_duplicates(versions, [str(inputs.kind_image(version, None).kubernetes.version) for version in versions])
    inputs.check_run_dir(args.run_dir)
    try:  # every version's cluster needs Docker: said once, before any version starts
        check_docker()
        check_engine()
    except PrerequisiteMissing as err:
        return refuse(MISSING, f"{one_line(str(err))} (every version of the matrix needs it)")
    base = Path(args.run_dir) / f"matrix-{new_run_id()}"
    base.mkdir(parents=True, exist_ok=True)
    print(f"{len(versions)} versions, {args.jobs} at a time; logs and run records under {base}", flush=True)
    results = matrix.run_matrix(versions, args.jobs, lambda v: matrix.run_version_process(v, base))
    print(matrix.render(results))
    print(f"matrix record: {matrix.write_results(base, results)}")
    return 0 if all(r.status == "passed" for r in results) else 1


def run_local_matrix_command(args: argparse.Namespace) -> int:
    """make matrix CLUSTER=local: every version built here and probed on its own local cluster, in turn."""
    requested = requested_versions(args, [m for m in matrix.default_versions() if m not in ("1.19", "1.20")])
    args.parallel = "auto" if args.parallel in (None, "") else args.parallel
    try:
        releases = [matrix.pinned_patch(KubeVersion.requested(v).text.strip().lstrip("v")) for v in requested]
    except VersionError as err:
        return refuse(BAD, str(err))
    refuse_duplicates(requested, releases)
    inputs.check_run_dir(args.run_dir)
    if refused := local_builds_refusal(one_at_a_time=True):
        return refused

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

    stop_builds = threading.Event()

    def build_release(release: str) -> Any:
        found = existing_build(release)
        if found is not None:
            return dataclasses.replace(found, record={**found.record, "reused": True})
        return build_kubernetes(release, log_progress=False, stop=stop_builds)

    def probe_argv(release: str, run_dir: Path) -> list[str]:
        argv = [sys.executable, "-m", "harness", "probe", "--version", release, "--cluster", "local"]
        argv += ["--parallel", str(args.parallel), "--run-dir", str(run_dir)]
        return argv + (["--probe", args.probe] if args.probe else [])

    started = time.monotonic()
    builder = matrix.Builder(build_release, is_built=lambda release: existing_build(release) is not None)
    stopped_build: list[str] = []
    try:
        with stopping(lambda: matrix.stopped_line(base, stopped_build)):
            try:
                results = matrix.run_local_matrix(plan, builder, base, probe_argv, TOOLS, not args.no_overlap)
            finally:
                # (after an interrupt, a build ahead would otherwise run to its end before this process could exit:
                # no Ctrl-C reaches its go processes, which run in a session of their own)
                stopped_build.append(builder.building)
                stop_builds.set()
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


def build_failure(err: Exception) -> str:
    """Why a release could not be built, in one line: the step that failed (the error's first line) and why (a build
    log's last line; seen: "module k8s.io/apiserver ... does not contain package k8s.io/apiserver/pkg/reconcilers"
    for v1.28.0-alpha.3, whose kube-aggregator twin the proxy serves at no 0.28 pre-release)."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()] or ["(no message)"]
    return "could not be built: " + " ... ".join(dict.fromkeys([lines[0][:300], lines[-1][:300]]))


def run_bisect_command(args: argparse.Namespace) -> int:
    """Each candidate version is one `python -m harness probe` run (its own cluster); see harness/bisect.py."""
    if problem := missing_arguments(args, {"probe": "PROBE", "good": "GOOD", "bad": "BAD"}):
        return refuse(BAD, f"{problem}: make bisect PROBE=<name or -k expression> GOOD=1.27.3 BAD=1.27.16")
    if args.cluster == "local":
        return run_local_bisect_command(args)
    if args.claim or args.pre_releases or args.runs > 1:
        return refuse(BAD, "CLAIM, PRE=1 and REPEAT bisect releases built here: give CLUSTER=local with them")
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
            built = run_node_image_command(argparse.Namespace(version=version, source="auto"))
            if built != 0:
                return bisect_module.SKIP
            where = ["--image", node_image_release.local_tag(version)]
        run_dir = directory / version
        command = [sys.executable, "-m", "harness", "probe", *where, "--probe", args.probe, "--run-dir", str(run_dir)]
        print("+ " + " ".join(command), flush=True)
        code = run_through_interrupt(command)
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


def local_builds_refusal(one_at_a_time: bool) -> int | None:
    """The refusal when this host cannot run local clusters or build Kubernetes (Go); else None, Go said."""
    if refused := local_host_refusal(one_at_a_time=one_at_a_time):
        return refused
    try:
        print(check_go())
    except BuildError as err:
        return refuse(MISSING, str(err))
    return None


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
    if not_selected := selection_problem(args.probe, args.run_dir):
        return refuse(*not_selected)
    if refused := local_builds_refusal(one_at_a_time=False):
        return refused
    name = safe_name(args.name or f"{args.claim}-{args.good}-{args.bad}")
    directory = Path(args.run_dir) / f"bisect-{new_run_id()}"

    def observe(version: str, attempt: int) -> bisect_module.ClaimObservation:
        seen = bisect_module.ClaimObservation(version, "")
        try:
            build = existing_build(version) or build_kubernetes(version)
        except (BuildError, VersionError) as err:
            seen.why = build_failure(err)
            return seen
        recorded = ("version", "commit", "toolchain", "toolchain_policy", "upstream_go", "duration_s", "work")
        seen.build = {k: build.record.get(k) for k in recorded if k in build.record}
        seen.build["staging_substitutions"] = build.record.get("staging_substitutions") or {}
        name = version if args.runs == 1 else f"{version}-run-{attempt}"
        run_dir = directory / name
        command = [sys.executable, "-m", "harness", "probe", "--version", version, "--cluster", "local"]
        command += ["--probe", args.probe, "--run-dir", str(run_dir)]
        print("+ " + " ".join(command), flush=True)
        with (directory / f"{name}.log").open("w") as log:
            run_through_interrupt(command, log)
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
            seen.why = f"the run observed nothing for the claim (log: {directory / f'{name}.log'})"
        return seen

    directory.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    runs = f", up to {args.runs} runs each" if args.runs > 1 else ""
    print(f"bisecting {args.claim} ({args.probe}) over {', '.join(versions)}{runs}", flush=True)
    oracle = bisect_module.ClaimOracle(args.claim, observe, print, runs=args.runs)
    try:
        oracle.learn_ends(versions[0], versions[-1])
        found = bisect_module.bisect(versions, oracle)
    except bisect_module.BisectError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    ran = {
        "provider": "local",
        "started": started,
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "kernel": platform.release(),
        "runs": str(directory),
        **suite_version(),
    }
    record = bisect_module.bisection_record(name, args.claim, args.probe, args.good, args.bad, oracle, found, ran)
    out = Path(args.record_dir) / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1, default=str) + "\n")
    print(f"{found.conclusion}; record: {out}")
    return 0 if found.first_bad else 1
