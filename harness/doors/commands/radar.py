"""make radar: the newest pre-release the Go module proxy serves, built and probed beside the newest release; every
claim whose observation differs, with what the expectations say of it (harness/axis/radar.py)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.base import inputs
from harness.base.paths import TOOLS
from harness.base.process import run_through_interrupt
from harness.base.run import new_run_id
from harness.base.versions import KubeVersion, Release
from harness.core.records import RecordError, load_records
from harness.doors.commands.refusal import BAD, MISSING, NOTHING_TO_RUN, refuse, selection_problem

# The axis, the Go module proxy's and the report's modules are imported where they are first used, after the
# inputs are checked: a refused BASELINE or TRIES loads none of them.

JsonDict = dict[str, Any]


@dataclass
class Steps:
    """What the radar does that reaches outside this process: the proxy, builds, probe runs and the replay. The
    command uses the real ones; tests give stand-ins."""

    listed: Callable[[], list[str]]  # k8s.io/kubernetes versions the proxy lists
    served: Callable[[list[str]], set[str]]  # which of these k8s.io/kubernetes versions the proxy serves
    build: Callable[[str], str]  # build a release: "" when built, else why it cannot be, in one line
    probe: Callable[[str, Path], int]  # run every probe on a built release, records under the directory
    shipped: Callable[[], list[JsonDict]]  # the shipped live recordings' records (a replay)


def release_steps(args: argparse.Namespace, tools: Path = TOOLS) -> Steps:
    """The radar on the kind CLUSTER names (releases built here, or kind node images of them with SOURCE=...); the
    proxy asked through Go with the builds' own Go environment and module cache under `tools`."""
    from harness.axis.releases import catalogued
    from harness.doors.commands.version_axis import release_axis
    from harness.gobuild import modules as go_modules
    from harness.reports import coverage

    _, axis = release_axis(args, tools)
    named: dict[str, Release] = {}

    def release_of(version: str) -> Release:
        """A release the proxy lists (or the baseline), read once into the typed release the axis takes."""
        if version not in named:
            named[version] = catalogued(version)
        return named[version]

    def build(version: str) -> str:
        release = release_of(version)
        return axis.unbuildable(release) or axis.ready(release).why_not

    def probe(version: str, run_dir: Path) -> int:
        command = [sys.executable, "-m", "harness", "probe", *axis.probe_args(release_of(version))]
        command += ["--run-dir", str(run_dir)]
        command += ["--probe", args.probe] if args.probe else []
        log_file = run_dir.parent / f"{run_dir.name}.log"
        print(f"+ {' '.join(command)} (log: {log_file})", flush=True)
        run_dir.mkdir(parents=True, exist_ok=True)
        with log_file.open("w") as log:
            return run_through_interrupt(command, log)

    def served(versions: list[str]) -> set[str]:
        return {v for _, v in go_modules.served_versions([("k8s.io/kubernetes", v) for v in versions], tools)}

    return Steps(
        listed=lambda: go_modules.listed_kubernetes_versions(tools),
        served=served,
        build=build,
        probe=probe,
        shipped=lambda: coverage.replay_records()[0],
    )


def run_radar_command(args: argparse.Namespace) -> int:
    """Check the inputs and the host in seconds, then resolve, build, probe and compare (run_radar)."""
    if args.baseline and args.fresh_baseline:
        return refuse(
            BAD,
            "give BASELINE (a run to compare with) or FRESH_BASELINE=1 (probe the newest release now), not both",
        )
    if args.baseline:
        if not Path(args.baseline).exists():
            return refuse(BAD, f"BASELINE {args.baseline}: no such run directory (make probe writes them under runs/)")
        try:
            if not load_records([Path(args.baseline)]):
                return refuse(BAD, f"BASELINE {args.baseline} holds no probe records (probes/*.json)")
        except RecordError as err:
            return refuse(BAD, f"BASELINE: {err}")
    inputs.check_run_dir(args.run_dir)
    if args.probe and (not_selected := selection_problem(args.probe, args.run_dir)):
        return refuse(*not_selected)
    from harness.doors.commands.version_axis import axis_host_refusal, release_axis

    _, axis = release_axis(args)
    # the proxy is asked through Go, as a build here asks it; a kind whose releases are built here checks its host
    if refused := axis_host_refusal(axis, one_at_a_time=True, go=True, host=axis.builds_here):
        return refused
    return run_radar(args, release_steps(args))


def run_radar(args: argparse.Namespace, steps: Steps) -> int:
    """Resolve the newest served pre-release, build the newest that builds, probe it and the baseline, compare."""
    from harness.axis import radar
    from harness.gobuild import go as go_command

    try:
        listed = steps.listed()
    except go_command.BuildError as err:
        return refuse(MISSING, str(err))
    release = radar.newest_release(listed)
    if release is None:
        return refuse(
            NOTHING_TO_RUN, f"the Go module proxy lists no k8s.io/kubernetes release ({len(listed)} versions)"
        )
    asked = radar.pre_release_candidates(listed, release)
    served = set(steps.served(asked))
    pre_releases = [v for v in asked if v in served]
    if not pre_releases:
        return refuse(
            NOTHING_TO_RUN,
            f"the Go module proxy serves no pre-release of {release.minor} or the two minors after it "
            f"(asked for {asked[-1]} ... {asked[0]})",
        )
    # Only a pre-release newer than the newest release can say what the next release changes: one older
    # (v1.37.0-rc.1 beside v1.37.2) is never probed in its place.
    newer = radar.newer_than(pre_releases, release)
    print(
        f"newest release {release}; newest pre-release served: {pre_releases[0]} ({len(pre_releases)} served, "
        f"{len(newer)} newer than {release})"
    )
    chosen, tried = radar.first_buildable(newer, steps.build, print, args.tries)
    if chosen is None:
        print(radar.no_newer_pre_release(release, tried))
        return radar.NO_NEWER_PRE_RELEASE
    base = Path(args.run_dir) / f"radar-{new_run_id()}"
    base.mkdir(parents=True, exist_ok=True)
    steps.probe(chosen, base / chosen)
    candidate = load_records([base / chosen])
    if not candidate:
        print(f"error: the run on {chosen} left no probe records (log: {base / chosen}.log)", file=sys.stderr)
        return 1
    release_text, baseline, said = _baseline(args, steps, release, base)
    if not baseline:
        print(f"error: no observation of a release to compare {chosen} with ({said})", file=sys.stderr)
        return 1
    report = radar.compare_with_baseline(candidate, release_text, baseline, said, chosen, tried)
    print(report.render())
    (base / "radar.json").write_text(json.dumps(report.to_json(), indent=1, default=str) + "\n")
    print(f"radar record: {base / 'radar.json'}")
    return report.exit_code


def _baseline(
    args: argparse.Namespace, steps: Steps, release: KubeVersion, base: Path
) -> tuple[str, list[JsonDict], str]:
    """(the release the pre-release is compared with, its records, where they come from)."""
    from harness.axis import radar
    from harness.doors.commands.version_axis import release_axis

    if args.baseline:
        records = load_records([Path(args.baseline)])
        versions = sorted({str(r.get("server_version")) for r in records if r.get("server_version")})
        return (versions[-1] if versions else "?"), records, f"the run {args.baseline}"
    if args.fresh_baseline:
        # (kind: the newest pinned node image)
        newest = release_axis(args)[1].newest_baseline(Release(release)).kube.text
        why_not = steps.build(newest)
        if why_not:
            return newest, [], f"{newest} {why_not}"
        steps.probe(newest, base / newest)
        return newest, load_records([base / newest]), f"probed now, {base / newest}"
    version, records = radar.baseline_records(steps.shipped(), args.cluster)
    probes = len({r["probe"] for r in records})
    return version, records, f"the shipped live recordings of {version}, replayed: {probes} probes"
