"""`make matrix`: the probes on several Kubernetes versions, each as its own `harness probe` process, on any kind of
cluster that runs a given release (harness/axis/release_axis.py ReleaseAxis).

Each planned release is made runnable first (built here, or nothing to do for a pinned node image) on one background
thread, the next one ahead while the current one's probes run; versions run JOBS at a time, or one at a time where
two clusters of the kind cannot share a host (a local cluster's kubelet removes the pod logs of pods it does not
know). Each version has its own run directory, and a version whose build or cluster fails is reported as such while
the others go on.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.axis.build_ahead import BUILD_NICENESS, yield_the_cpu
from harness.axis.release_axis import PlannedVersion, Readied
from harness.base.process import Terminated, run_through_interrupt, terminate_waited_children

EXIT_MEANING = {0: "passed", 1: "failed", 2: "interrupted or bad input", 3: "prerequisite missing", 5: "no probe ran"}


@dataclass
class VersionResult:
    """One version of a matrix: how its run ended, its probes' outcomes, and what its release took."""

    version: str
    status: str
    exit_code: int | None
    run_dir: str
    seconds: float
    probes: dict[str, int] = field(default_factory=dict)  # outcome -> count, from the run's probe records
    detail: str = ""
    release: str = ""
    note: str = ""
    build_s: float | None = None  # the build's own duration; None when it was reused or nothing was built
    build_reused: bool = False
    startup_s: float | None = None
    probes_s: float | None = None
    substitutions: dict[str, str] = field(default_factory=dict)
    build_during_probes: str = ""  # the version that was building while these probes ran, if any
    disk_tools_gb: float | None = None
    runtime: str = ""  # the runtime its entry named after the version ("" the kind's own)

    @property
    def name(self) -> str:
        """As its entry named it: 'v1.27.16', 'v1.27.16:containerd=v2.3.4'."""
        release = self.release or self.version
        return f"v{release}:{self.runtime}" if self.runtime else f"v{release}"


def summarize_run(run_dir: Path) -> tuple[dict[str, int], str]:
    """Probe outcomes of one version's run, and why its cluster failed if it did."""
    outcomes: dict[str, int] = {}
    for record in sorted(run_dir.glob("*/probes/*.json")):
        outcome = json.loads(record.read_text()).get("outcome", "unknown")
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    provenance: dict[str, Any] = {}
    for run_json in run_dir.glob("*/run.json"):
        provenance = json.loads(run_json.read_text())
    return outcomes, str(provenance.get("cluster_error", ""))


# How soon a Ctrl-C or SIGTERM that came just before the main thread began to wait for a version is seen: a signal
# wakes a wait it interrupts, not one that began after it (the handler's flag is then only read at the wait's end).
# Seen on a loaded machine: the test's Ctrl-C during a build ahead waited out the build instead of stopping it.
INTERRUPT_POLL_S = 1.0


def result_seeing_interrupts(future: Future[VersionResult]) -> VersionResult:
    """The version's result, waited for in steps, so that a pending Ctrl-C or SIGTERM is raised within a step."""
    while True:
        try:
            return future.result(timeout=INTERRUPT_POLL_S)
        except TimeoutError:
            continue


def run_matrix(
    versions: Sequence[str],
    jobs: int,
    run_one: Callable[[str], VersionResult],
    on_stop: Callable[[], None] = lambda: None,
) -> list[VersionResult]:
    """Run every version, at most `jobs` at a time; one version's failure never stops the others. `on_stop` runs once
    a Ctrl-C or SIGTERM came, before the running versions are waited for (a version waiting for its build ahead waits
    for nothing longer once the build was stopped)."""

    def guarded(version: str) -> VersionResult:
        started = time.monotonic()
        try:
            return run_one(version)
        except Exception as err:  # a crash of one version's runner is that version's result
            return VersionResult(version, "error", None, "", round(time.monotonic() - started, 1), detail=repr(err))

    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    futures: list[Future[VersionResult]] = []
    try:  # a Ctrl-C while the versions are still being submitted (the first may be building already) stops too
        futures.extend(pool.submit(guarded, version) for version in versions)
        return [result_seeing_interrupts(future) for future in futures]
    except KeyboardInterrupt as stop:
        # No version starts after a Ctrl-C or SIGTERM, and the running ones stop and clean up: a terminal's Ctrl-C
        # reached them; a SIGTERM reached this process alone (before, the matrix then waited for them to run to
        # their end).
        if isinstance(stop, Terminated):
            terminate_waited_children()
        on_stop()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # the running versions' cleanup ends before this process


def disk_gb(path: Path) -> float:
    """Disk used under a folder, in GB (du -s: block use, as the user's df sees it)."""
    done = subprocess.run(["du", "-sk", str(path.resolve())], capture_output=True, text=True, check=False)
    try:
        return round(int(done.stdout.split()[0]) / 1024 / 1024, 2)
    except (IndexError, ValueError):
        return 0.0


class Builder:
    """Makes the planned releases runnable in order on one background thread, ahead of the probes.

    Each Kubernetes build keeps one Go minor's build cache (harness/gobuild/kubernetes.py), so the matrix's disk stays
    that of one cache plus the modules, toolchains and binaries.
    """

    def __init__(
        self,
        build: Callable[[str], Readied],
        is_built: Callable[[str], bool] = lambda release: False,
        nice: int = BUILD_NICENESS,
    ) -> None:
        self._build = build
        self._is_built = is_built  # a reused build compiles nothing: the cache is left alone for it
        self._nice = nice
        self._niced = False
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="build")
        self._futures: dict[str, Future[Readied]] = {}
        self.building: str = ""  # the release being built now ("" when idle)
        self.builds_done = 0  # builds that compiled (not reused): only they change the disk .tools uses

    def submit(self, release: str) -> None:
        if release not in self._futures:
            self._futures[release] = self._pool.submit(self._one, release)

    def _one(self, release: str) -> Readied:
        if self._is_built(release):
            return self._build(release)
        if not self._niced:  # the build yields the CPU to the probes beside it (build_ahead.yield_the_cpu)
            yield_the_cpu(self._nice)
            self._niced = True
        self.building = release
        try:
            return self._build(release)
        finally:
            self.building = ""
            self.builds_done += 1

    def result(self, release: str) -> Readied:
        self.submit(release)
        return self._futures[release].result()

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def progress_line(index: int, total: int, result: VersionResult, elapsed: float) -> str:
    """One line per version: where the matrix is, this version's figures, and an estimate of what is left."""
    left = total - index - 1
    estimate = elapsed / (index + 1) * left
    passed = result.probes.get("passed", 0)
    ran = sum(result.probes.values())
    build = "build reused" if result.build_reused else f"build {_fmt_s(result.build_s)}"
    return (
        f"[{index + 1}/{total}] {result.name:<13} {result.status:<24} probes {passed}/{ran} passed; {build}, "
        f"start-up {_fmt_s(result.startup_s)}, probes {_fmt_s(result.probes_s)}; elapsed {_fmt_s(elapsed)}, "
        f"left ~{_fmt_s(estimate) if left else '0s'}"
        + (f"; disk .tools {result.disk_tools_gb} GB" if result.disk_tools_gb is not None else "")
        + (f" ({result.note})" if result.note else "")
    )


def run_version(
    planned: PlannedVersion, builder: Builder, base: Path, probe_argv: Callable[[str, Path], list[str]]
) -> VersionResult:
    """Make one release runnable (or take the background build of it), then its probes as one `harness probe`
    process, its output in base/<folder>.log (the builder and `probe_argv` know an entry by its name)."""
    started = time.monotonic()
    run_dir = base / planned.folder
    run_dir.mkdir(parents=True, exist_ok=True)
    result = VersionResult(
        planned.name,
        "",
        None,
        str(run_dir),
        0.0,
        release=str(planned.release),
        note=planned.note,
        runtime=planned.runtime,
    )
    try:
        readied = builder.result(planned.name)
    except Exception as err:  # one version's failed build is that version's result
        readied = Readied(planned.release, error=str(err) or repr(err))
    if readied.error:
        result.status, result.detail = "build failed", readied.error.splitlines()[0][:300]
        result.seconds = round(time.monotonic() - started, 1)
        return result
    record = readied.record
    result.build_reused = bool(record.get("reused"))
    result.build_s = None if result.build_reused else record.get("duration_s")
    result.substitutions = dict(record.get("staging_substitutions") or {})
    overlapping = builder.building
    with (base / f"{planned.folder}.log").open("w") as log:
        code = run_through_interrupt(probe_argv(planned.name, run_dir), log)
    result.build_during_probes = overlapping or builder.building
    result.exit_code = code
    result.probes, cluster_error = summarize_run(run_dir)
    result.status = "cluster did not come up" if cluster_error else EXIT_MEANING.get(code, f"exit {code}")
    if result.status == "failed" and result.probes.get("undecided") and not result.probes.get("failed"):
        result.status = "undecided"  # only claims a watch gap left undecided: not evidence that the version fails
    result.detail = cluster_error
    for run_json in run_dir.glob("*/run.json"):
        timing = json.loads(run_json.read_text()).get("timing") or {}
        result.startup_s = timing.get("cluster_startup_s")
        if timing.get("wall_s") is not None and result.startup_s is not None:
            result.probes_s = round(float(timing["wall_s"]) - float(result.startup_s), 1)
    result.seconds = round(time.monotonic() - started, 1)
    return result


def run_versions(
    plan: Sequence[PlannedVersion],
    jobs: int,
    builder: Builder,
    base: Path,
    probe_argv: Callable[[str, Path], list[str]],
    tools: Path | None,
    overlap_builds: bool = True,
    say: Callable[[str], None] = print,
    on_stop: Callable[[], None] = lambda: None,
) -> list[VersionResult]:
    """Every planned version, `jobs` at a time; a version that fails to build or start is reported and the others
    go on. With overlap_builds the next version is made runnable while the current one's probes run; with `tools`,
    the disk it uses is said after each version (measured again only once a build changed it). An entry is known
    by its name (a release, and the runtime its entry named). `on_stop`: what stops the builds on Ctrl-C or SIGTERM,
    before the running versions are waited for."""
    started = time.monotonic()
    index = {planned.name: position for position, planned in enumerate(plan)}
    done = 0
    measured: tuple[int, float] | None = None  # (builds done, GB) when `tools` was last measured
    lock = threading.Lock()
    stopping = threading.Event()

    def stop_builds() -> None:
        stopping.set()
        on_stop()

    def one(release: str) -> VersionResult:
        nonlocal done, measured
        position = index[release]
        builder.submit(release)
        if overlap_builds and position + 1 < len(plan):
            builder.submit(plan[position + 1].name)
        result = run_version(plan[position], builder, base, probe_argv)
        with lock:
            # du over .tools (46 GB, millions of module files) took 5-20 s and 7 s of system CPU here: measured again
            # only once a build has changed it, not after every version (a warm matrix of 17 spent 87 s on it), and
            # not at all once stopped: seen live, a Ctrl-C during a runtime's build ahead stopped the build within
            # 3 s and then waited 18-45 s for du over a 64 GB .tools on a loaded machine before the matrix exited
            if tools is not None and not stopping.is_set():
                if measured is None or measured[0] != builder.builds_done:
                    measured = (builder.builds_done, disk_gb(tools))
                result.disk_tools_gb = measured[1]
            say(progress_line(done, len(plan), result, time.monotonic() - started))
            done += 1
        return result

    return run_matrix([planned.name for planned in plan], jobs, one, stop_builds)


def stopped_line(base: Path, building: Sequence[str]) -> str:
    """What an interrupted matrix stopped: the version that was running, as its own last line says (it ran to the
    end of its cleanup), and the build ahead, if one was running."""
    logs = sorted(base.glob("*.log"), key=lambda path: path.stat().st_mtime)
    said = [line for line in logs[-1].read_text(errors="replace").splitlines() if line.strip()] if logs else []
    version = f"v{logs[-1].stem}: {said[-1].removeprefix('interrupted: ')}" if said else "no version had started"
    stopped = building[0] if building else ""
    build = f"; the build of v{stopped} ahead was stopped (its unfinished work removed)" if stopped else ""
    return f"the matrix under {base} ({version}{build})"


def entry_runtimes(runs: Sequence[Path]) -> dict[str, str]:
    """The run id of each make matrix entry that named a runtime after its version -> that runtime, from the matrix
    records (matrix.json) under `runs`: the report gives such an entry a column of its own, headed by release and
    runtime, where one release ran on several runtimes."""
    found: dict[str, str] = {}
    for root in runs:
        for record in sorted(root.rglob("matrix.json")) if root.is_dir() else ():
            try:
                versions = json.loads(record.read_text()).get("versions") or []
            except (OSError, ValueError):
                continue  # not a matrix record the suite wrote: its runs keep the version's column
            for entry in versions:
                if not (isinstance(entry, dict) and entry.get("runtime") and entry.get("run_dir")):
                    continue
                # its folder beside the record (the matrix writes each entry's folder there), wherever it was moved
                for run_json in sorted((record.parent / Path(entry["run_dir"]).name).glob("*/run.json")):
                    found[run_json.parent.name] = str(entry["runtime"])  # the folder of a run is named by its id
    return found


def render(results: Sequence[VersionResult], wall_s: float) -> str:
    """The matrix's figures: per version build / start-up / probes, and the total."""
    width = max([14, *(len(r.name) + 1 for r in results)])
    lines = [f"{'release':<{width}} {'status':<24} {'build':>8} {'start-up':>9} {'probes':>8}  passed  note"]
    for r in results:
        build = "reused" if r.build_reused else _fmt_s(r.build_s)
        passed = f"{r.probes.get('passed', 0)}/{sum(r.probes.values())}"
        substituted = ", ".join(f"{m} {v}" for m, v in sorted(r.substitutions.items()))
        note = "; ".join(
            filter(
                None,
                [
                    r.note,
                    r.detail,
                    f"substituted: {substituted}" if substituted else "",
                    f"v{r.build_during_probes} was building meanwhile" if r.build_during_probes else "",
                ],
            )
        )
        lines.append(
            f"{r.name:<{width}} {r.status:<24} {build:>8} {_fmt_s(r.startup_s):>9} "
            f"{_fmt_s(r.probes_s):>8}  {passed:>6}  {note}"
        )
    builds = sum(r.build_s or 0 for r in results)
    probes = sum(r.probes_s or 0 for r in results)
    lines.append(
        f"total wall {_fmt_s(wall_s)}: builds {_fmt_s(builds)} (part overlapping probes), probes {_fmt_s(probes)}"
    )
    return "\n".join(lines)
