"""The version axis on local clusters: the matrix's plan, builder and progress, and bisection on a claim.

Stood in: builds, probe runs and the proxy (functions). Real: the plan, the search, the records.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from harness.axis import matrix
from harness.axis.bisect import (
    BAD,
    GOOD,
    SKIP,
    BisectError,
    ClaimObservation,
    ClaimOracle,
    bisect,
    bisection_record,
    claim_observations,
)
from harness.axis.release_axis import PlannedVersion, Readied, plan_versions
from harness.axis.releases import bisect_releases
from harness.base.versions import Release, VersionError


def between(good: str, bad: str, pre_releases: bool = False) -> list[str]:
    """bisect_releases on GOOD and BAD as make bisect's door reads them, by the names records give them."""
    return [str(r) for r in bisect_releases(Release.parse(good), Release.parse(bad), pre_releases)]


def test_a_minor_resolves_to_its_pinned_patch_or_the_nearest_earlier_served_one() -> None:
    served = {"1.26.15", "1.25.15", "1.25.16"}
    requested = [Release.parse(v) for v in ("1.26", "1.29", "1.25.16")]
    plan = plan_versions(requested, lambda release: str(release) in served or str(release) == "1.29.13")
    assert [(str(p.requested), str(p.release)) for p in plan] == [
        ("1.26", "1.26.15"),
        ("1.29", "1.29.13"),
        ("1.25.16", "1.25.16"),
    ]
    assert plan[0].note == "" and plan[1].note == "1.29.14 is not served by the Go module proxy"
    with pytest.raises(VersionError):
        plan_versions([Release.parse("1.12")], lambda release: True)


def test_a_build_keeps_its_go_minors_cache_the_shared_one_and_the_last_other_used(tmp_path: Path) -> None:
    """Seen: bisections and single builds trimmed nothing, and .tools/go reached 47 GB with six caches. Kept besides
    the build's own: the other cache used last, so a bisection alternating between go1.20 and go1.21 keeps both."""
    import os

    from harness.gobuild.go import build_cache_name, trim_build_caches

    assert build_cache_name("go1.20.14") == build_cache_name("go1.20.8") == "go1.20"
    caches = tmp_path / "go" / "cache"
    for age, name in enumerate(("go1.21", "go1.19", "1.27", "shared")):
        (caches / name / "00").mkdir(parents=True)  # an entry: a cache that holds something
        (caches / name / ".used").touch()
        os.utime(caches / name / ".used", (1_000_000 - age, 1_000_000 - age))
    assert trim_build_caches(tmp_path, "go1.20") == ["1.27", "go1.19"]
    assert sorted(p.name for p in caches.iterdir()) == ["go1.20", "go1.21", "shared"]
    (caches / "go1.20" / "00").mkdir()
    assert trim_build_caches(tmp_path, "go1.21") == []  # go1.20 is now the other one used last
    assert trim_build_caches(tmp_path, "go1.22") == ["go1.20"]
    assert trim_build_caches(tmp_path / "nothing-yet", "go1.20") == []


def test_an_empty_build_cache_is_not_the_other_one_kept(tmp_path: Path) -> None:
    """Seen: a pre-release whose modules did not load left an empty go1.18 cache, used last, and the next build kept
    it and removed a 6 GB go1.20 cache."""
    from harness.gobuild.go import trim_build_caches

    caches = tmp_path / "go" / "cache"
    (caches / "go1.20" / "00").mkdir(parents=True)
    (caches / "go1.20" / ".used").touch()
    assert trim_build_caches(tmp_path, "go1.18") == []  # the failed build's own cache: made, nothing in it
    assert trim_build_caches(tmp_path, "go1.17") == ["go1.18"]  # the empty one goes, go1.20 stays
    assert sorted(p.name for p in caches.iterdir()) == ["go1.17", "go1.20"]


def test_a_build_cache_beyond_its_bound_loses_its_least_recently_used_entries_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen: go1.20's cache reached 9.3 GB over four 1.28 patches and 1.25.16; Go removes only entries unused for
    five days."""
    import os

    from harness.base.inputs import BadInput
    from harness.gobuild.go import BUILD_CACHE_BUDGET_GB, build_cache_budget, trim_cache_to

    cache = tmp_path / "go1.20"
    for n, folder in enumerate(("00", "7f", "ff")):
        (cache / folder).mkdir(parents=True)
        for k in range(2):
            entry = cache / folder / f"{folder}{k}-d"
            entry.write_bytes(b"x" * 100)
            os.utime(entry, (1_000 + 10 * n + k, 1_000 + 10 * n + k))  # 000 oldest, ff1 newest
    (cache / "README").write_text("not an entry")
    (cache / "trim.txt").write_text("Go's own")
    assert trim_cache_to(cache, 600) == (0, 600)  # within the bound: nothing goes
    assert trim_cache_to(cache, 350) == (300, 300)
    assert sorted(p.name for p in cache.glob("*/*")) == ["7f1-d", "ff0-d", "ff1-d"]
    assert (cache / "README").is_file() and (cache / "trim.txt").is_file()
    assert trim_cache_to(tmp_path / "none", 1) == (0, 0)
    monkeypatch.delenv("PLP_GO_BUILD_CACHE_GB", raising=False)
    assert build_cache_budget() == BUILD_CACHE_BUDGET_GB
    monkeypatch.setenv("PLP_GO_BUILD_CACHE_GB", "2.5")
    assert build_cache_budget() == 2.5
    for wrong in ("0", "-1", "lots", "nan"):
        monkeypatch.setenv("PLP_GO_BUILD_CACHE_GB", wrong)
        with pytest.raises(BadInput, match="GO_BUILD_CACHE_GB"):
            build_cache_budget()


def test_the_local_matrix_goes_on_past_a_failed_build_and_says_where_it_is(tmp_path: Path) -> None:
    def build(name: str) -> Readied:
        if name == "1.22.17":
            raise RuntimeError("building Kubernetes v1.22.17 failed (go build)\nlast lines ...")
        return Readied(
            Release.parse(name), {"duration_s": 200.0, "staging_substitutions": {"k8s.io/kube-proxy": "v0.25.15"}}
        )

    def probe_argv(name: str, run_dir: Path) -> list[str]:
        script = (
            "import json, pathlib, sys; d = pathlib.Path(sys.argv[1]) / 'r1'; (d / 'probes').mkdir(parents=True);"
            "(d / 'probes' / 'p.json').write_text(json.dumps({'outcome': 'passed'}));"
            "(d / 'run.json').write_text(json.dumps({'timing': {'wall_s': 70.0, 'cluster_startup_s': 5.0}}))"
        )
        return ["python3", "-c", script, str(run_dir)]

    plan = [PlannedVersion(Release.parse(v), Release.parse(v)) for v in ("1.21.14", "1.22.17", "1.25.16")]
    lines: list[str] = []
    builder = matrix.Builder(build)
    results = matrix.run_versions(plan, 1, builder, tmp_path / "m", probe_argv, tmp_path, True, lines.append)
    builder.shutdown()
    assert [r.status for r in results] == ["passed", "build failed", "passed"]
    assert results[1].detail == "building Kubernetes v1.22.17 failed (go build)"
    assert results[2].probes == {"passed": 1} and results[2].startup_s == 5.0 and results[2].probes_s == 65.0
    assert lines[0].startswith("[1/3] v1.21.14 ") and "probes 1/1 passed" in lines[0] and "left ~" in lines[0]
    assert lines[2].startswith("[3/3]") and "left ~0s" in lines[2]
    table = matrix.render(results, 300.0)
    assert "substituted: k8s.io/kube-proxy v0.25.15" in table and table.splitlines()[-1].startswith("total wall 5m00s")


def test_the_local_matrix_measures_the_disk_again_only_after_a_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """du over .tools took 5-20 s a version; only a build changes what it measures."""
    measured: list[Path] = []

    def disk_gb(path: Path) -> float:
        measured.append(path)
        return 40.0 + len(measured)

    monkeypatch.setattr(matrix, "disk_gb", disk_gb)
    built = {"1.21.14", "1.22.17", "1.24.17"}  # 1.23.17 is built here

    def build(name: str) -> Readied:
        built.add(name)
        return Readied(Release.parse(name), {"reused": name != "1.23.17"})

    plan = [PlannedVersion(Release.parse(v), Release.parse(v)) for v in ("1.21.14", "1.22.17", "1.23.17", "1.24.17")]
    builder = matrix.Builder(build, is_built=lambda name: name in built)
    results = matrix.run_versions(plan, 1, builder, tmp_path / "m", lambda r, d: ["true"], tmp_path, False, print)
    builder.shutdown()
    # measured after the first version and after 1.23.17's build; 1.22.17 and 1.24.17 say the last figure
    assert [r.disk_tools_gb for r in results] == [41.0, 41.0, 42.0, 42.0] and len(measured) == 2


def test_a_stopped_matrix_does_not_measure_the_disk_on_its_way_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C while a build ahead runs: the build is stopped, and the matrix exits without du over .tools (seen
    live: 18-45 s on a loaded machine after a build stopped within 3 s)."""
    measured: list[Path] = []

    def disk_gb(path: Path) -> float:
        measured.append(path)
        return 40.0

    monkeypatch.setattr(matrix, "disk_gb", disk_gb)
    stopped = threading.Event()

    def build(name: str) -> Readied:
        main = threading.main_thread().ident
        assert main is not None
        signal.pthread_kill(main, signal.SIGINT)  # a Ctrl-C reaches the matrix's main thread while this build runs
        assert stopped.wait(10), "the matrix did not stop its builds"
        return Readied(Release.parse(name), why_not="stopped with the matrix", error="stopped")

    plan = [PlannedVersion(Release.parse("1.27.16"), Release.parse("1.27.16"))]
    builder = matrix.Builder(build, nice=0)
    with pytest.raises(KeyboardInterrupt):
        matrix.run_versions(
            plan, 1, builder, tmp_path / "m", lambda r, d: ["true"], tmp_path, False, print, on_stop=stopped.set
        )
    builder.shutdown()
    assert stopped.is_set() and measured == []


def test_candidates_follow_the_line_bad_was_cut_from() -> None:
    assert between("1.25.9", "1.25.12") == ["1.25.9", "1.25.10", "1.25.11", "1.25.12"]
    # Across a minor: GOOD's later patches are another branch; BAD's x.y.0 pre-releases only when asked.
    assert between("1.30.13", "1.31.1") == ["1.30.13", "1.31.0", "1.31.1"]
    with_pre = between("1.30.13", "1.31.0", pre_releases=True)
    assert with_pre[:3] == ["1.30.13", "1.31.0-alpha.0", "1.31.0-alpha.1"] and with_pre[-1] == "1.31.0"
    assert between("1.28.0-alpha.2", "1.28.0-alpha.3") == ["1.28.0-alpha.2", "1.28.0-alpha.3"]
    with pytest.raises(VersionError, match="one minor boundary"):
        between("1.26.6", "1.28.0")
    with pytest.raises(VersionError, match="earlier release"):
        between("1.27.4", "1.27.4")


def _records(run_dir: Path, claim: str, *observed: Any) -> None:
    probes = run_dir / "run1" / "probes"
    probes.mkdir(parents=True)
    verdicts = [{"claim": claim, "observed": value, "status": "pass"} for value in observed]
    verdicts.append({"claim": "another.claim", "observed": "x", "status": "pass"})
    (probes / "p.json").write_text(json.dumps({"verdicts": verdicts}))


def test_a_claim_bisection_classifies_by_the_observed_value_and_records_every_try(tmp_path: Path) -> None:
    versions = between("1.25.0", "1.25.16")
    claim = "statefulset.scale-up.replicas-cover-pods"
    ran: list[str] = []

    def observe(version: str, attempt: int) -> ClaimObservation:
        ran.append(version)
        run_dir = tmp_path / version
        patch = int(version.rsplit(".", 1)[1])
        if version == "1.25.5":
            return ClaimObservation(version, "", why="could not be built: the proxy refused ...")
        _records(run_dir, claim, patch < 12)
        observed, verdicts = claim_observations(run_dir, claim)
        return ClaimObservation(version, "", observed, verdicts, run_dir=str(run_dir), build={"version": version})

    said: list[str] = []
    oracle = ClaimOracle(claim, observe, said.append)
    oracle.learn_ends(versions[0], versions[-1])
    assert ran[:2] == ["1.25.16", "1.25.0"]  # BAD first: its value is what is looked for
    found = bisect(versions, oracle, say=lambda _: None)
    assert (found.last_good, found.first_bad) == ("1.25.11", "1.25.12")
    assert len(set(ran)) == len(ran) <= 2 + 5  # each release run (and built) once
    record = bisection_record("x", claim, "statefulset", "1.25.0", "1.25.16", oracle, found, {"provider": "local"})
    assert record["good"] == {"version": "1.25.0", "observed": True}
    assert record["bad"] == {"version": "1.25.16", "observed": False}
    tried = {t["version"]: t for t in record["tried"]}
    assert tried["1.25.12"]["outcome"] == BAD and tried["1.25.11"]["outcome"] == GOOD
    assert [t["version"] for t in record["tried"]] == sorted(tried, key=versions.index)
    assert record["conclusion"] == "first bad: 1.25.12 (last good: 1.25.11)"


def test_a_release_that_observed_something_else_or_nothing_is_a_skip(tmp_path: Path) -> None:
    values = {"1.27.4": "update", "1.27.5": "update", "1.27.6": "both", "1.27.8": "current"}

    def observe(version: str, attempt: int) -> ClaimObservation:
        value = values.get(version)
        return ClaimObservation(version, "", [] if value is None else [value], ["pass"])

    oracle = ClaimOracle("c", observe, lambda _: None)
    oracle.learn_ends("1.27.4", "1.27.8")
    assert oracle("1.27.6") == SKIP and "neither GOOD's nor BAD's" in oracle.tried["1.27.6"].why
    assert oracle("1.27.7") == SKIP and oracle.tried["1.27.7"].why == "the claim was not observed"
    assert oracle("1.27.5") == GOOD


def test_with_several_runs_a_race_that_hides_the_old_value_cannot_make_a_release_look_changed() -> None:
    # replicas-cover-pods before k/k#117865: True while the pod cache keeps up, False when a race hides it;
    # after: False in every run. Per release, the value each successive run observes:
    runs_of: dict[str, list[Any]] = {
        "1.27.0": [False, True],
        "1.27.1": [False, False, False],  # the race in all three runs: indistinguishable from BAD
        "1.27.2": [True],
        "1.27.3": [False, "x", True],
        "1.27.4": [False, False, False],
    }
    ran: list[tuple[str, int]] = []

    def observe(version: str, attempt: int) -> ClaimObservation:
        ran.append((version, attempt))
        value = runs_of[version][attempt - 1]
        return ClaimObservation(version, "", [value], ["pass"], run_dir=f"/runs/{version}-run-{attempt}")

    oracle = ClaimOracle("c", observe, lambda _: None, runs=3)
    oracle.learn_ends("1.27.0", "1.27.4")
    assert (oracle.good_value, oracle.bad_value) == (True, False)
    assert ran == [("1.27.4", 1), ("1.27.4", 2), ("1.27.4", 3), ("1.27.0", 1), ("1.27.0", 2)]
    assert oracle("1.27.2") == GOOD and oracle("1.27.3") == GOOD and oracle("1.27.1") == BAD
    assert ran.count(("1.27.2", 1)) == 1 and ("1.27.2", 2) not in ran  # one run showing GOOD's value decides
    assert [run.why for run in oracle.tried["1.27.3"].runs][1] == "observed 'x': neither GOOD's nor BAD's value"
    found = bisect(["1.27.0", "1.27.1", "1.27.2", "1.27.3", "1.27.4"], oracle, say=lambda _: None)
    assert (found.last_good, found.first_bad) == ("1.27.3", "1.27.4")
    record = bisection_record("x", "c", "p", "1.27.0", "1.27.4", oracle, found, {"provider": "local"})
    assert record["runs_per_release"] == 3
    tried = {t["version"]: t for t in record["tried"]}
    assert [r["observed"] for r in tried["1.27.0"]["runs"]] == [[False], [True]]
    assert tried["1.27.4"]["observed"] == [False, False, False] and "runs" not in tried["1.27.2"]

    unstable_bad = ClaimOracle("c", lambda v, n: ClaimObservation(v, "", [n == 2], ["pass"]), lambda _: None, runs=3)
    with pytest.raises(BisectError, match="BAD must observe one value in every run"):
        unstable_bad.learn_ends("1.27.0", "1.27.4")
    never = ClaimOracle("c", lambda v, _: ClaimObservation(v, "", [False], ["pass"]), lambda _: None, runs=2)
    with pytest.raises(BisectError, match="both observed False for c in 2 runs each: nothing to bisect"):
        never.learn_ends("1.27.0", "1.27.4")


def test_a_release_that_decides_in_no_run_is_a_skip_with_the_first_reason() -> None:
    def observe(version: str, attempt: int) -> ClaimObservation:
        value = {"1.27.4": [True], "1.27.8": [False], "1.27.6": [False] if attempt == 1 else []}[version]
        return ClaimObservation(version, "", value, ["pass"] * len(value))

    oracle = ClaimOracle("c", observe, lambda _: None, runs=2)
    oracle.learn_ends("1.27.4", "1.27.8")
    assert oracle("1.27.6") == SKIP and oracle.tried["1.27.6"].why == "the claim was not observed"


def test_ends_that_observed_the_same_value_or_nothing_stop_before_any_search() -> None:
    same = ClaimOracle("c", lambda v, _: ClaimObservation(v, "", [True], ["pass"]), lambda _: None)
    with pytest.raises(BisectError, match="both observed True"):
        same.learn_ends("1.25.0", "1.25.16")
    nothing = ClaimOracle("c", lambda v, _: ClaimObservation(v, "", [], [], why="could not be built"), lambda _: None)
    with pytest.raises(BisectError, match=r"1\.25\.16: the claim was not observed"):
        nothing.learn_ends("1.25.0", "1.25.16")
    mixed = ClaimOracle("c", lambda v, _: ClaimObservation(v, "", [True, False], ["pass", "fail"]), lambda _: None)
    with pytest.raises(BisectError, match="observed 2 different values"):
        mixed.learn_ends("1.25.0", "1.25.16")


def test_the_claim_bisection_refuses_unknown_claims_and_missing_cluster_before_any_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first through the real entry point (`python -m harness` in a child), the others through the same CLI in
    this process: a child each took 0.15-0.2 s of CPU to say one line."""
    import subprocess
    import sys

    from tests.pytest_here import harness_here

    repo = Path(__file__).resolve().parent.parent
    bisect = ["bisect", "--probe", "statefulset", "--run-dir", str(tmp_path)]

    def bisect_cli(*args: str) -> tuple[int, str]:
        done = harness_here(*bisect, *args, capsys=capsys)
        return done.returncode, done.stderr

    ends = ["--good", "1.25.0", "--bad", "1.25.16", "--cluster", "local"]
    unknown = subprocess.run(
        [sys.executable, "-m", "harness", *bisect, *ends, "--claim", "no.such.claim"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert unknown.returncode == 2 and "no claim 'no.such.claim'" in unknown.stderr
    code, err = bisect_cli(*ends)
    assert code == 2 and "give CLAIM=" in err
    code, err = bisect_cli("--good", "1.27.3", "--bad", "1.27.16", "--claim", "x")
    assert code == 2 and "CLUSTER=local" in err
    code, err = bisect_cli("--good", "1.27.3", "--bad", "1.27.16", "--runs", "3")
    assert code == 2 and "REPEAT bisect releases built here" in err
    code, err = bisect_cli("--good", "1.27.3", "--bad", "1.27.16", "--cluster", "local", "--claim", "x", "--runs", "0")
    assert code == 2 and "REPEAT" in err
    assert not (tmp_path / "bisections").exists()


def test_builder_builds_one_at_a_time_in_order(tmp_path: Path) -> None:
    active, highest, order = [0], [0], []
    lock = threading.Lock()

    def build(release: str) -> Readied:
        with lock:
            active[0] += 1
            highest[0] = max(highest[0], active[0])
            order.append(release)
        with lock:
            active[0] -= 1
        return Readied(Release.parse(release))

    builder = matrix.Builder(build)
    for release in ("1.21.14", "1.22.17", "1.23.17"):
        builder.submit(release)
    assert str(builder.result("1.23.17").release) == "1.23.17"
    builder.shutdown()
    assert order == ["1.21.14", "1.22.17", "1.23.17"] and highest[0] == 1


def test_intervals_are_classified_by_the_end_they_lie_near() -> None:
    from harness.axis.bisect import classify

    # SIGTERM-to-kill after a preStop that overran the grace: 10 s before k/k#115835, 2 s after.
    assert classify(2.3, 10.0, 2.0) == BAD and classify(9.1, 10.0, 2.0) == GOOD
    assert classify(6.0, 10.0, 2.0) is None  # halfway: neither, a skip
    assert classify("Failed", "Running", "Failed") == BAD and classify(True, True, False) == GOOD
    assert classify(1, True, False) is None  # a count is not a boolean

    def observe(version: str, attempt: int) -> ClaimObservation:
        values = {"1.28.0-alpha.2": [10.02, 10.05, 9.98], "1.28.0-alpha.3": [2.01, 2.04]}
        return ClaimObservation(version, "", values[version], ["pass"] * len(values[version]))

    oracle = ClaimOracle("termination.prestop-overrun.sigterm-to-kill", observe, lambda _: None)
    oracle.learn_ends("1.28.0-alpha.2", "1.28.0-alpha.3")  # repeated intervals: their median is the value
    assert (oracle.good_value, oracle.bad_value) == (10.02, 2.025)


def test_an_interrupted_matrix_says_what_its_running_version_and_build_ahead_became(tmp_path: Path) -> None:
    """Seen live: Ctrl-C 40 s into a local matrix said "stopped before any cluster, build or download had started"
    while a version's cluster had just been removed and a build ahead stopped."""
    (tmp_path / "1.36.4.log").write_text("26 passed\n")
    (tmp_path / "1.37.0.log").write_text(
        "...\ninterrupted: stopped the run on local cluster plp-1-37-5a23: the cluster was stopped and removed\n\n"
    )
    os.utime(tmp_path / "1.36.4.log", (1, 1))  # the older log
    assert matrix.stopped_line(tmp_path, ["1.28.0-alpha.3"]) == (
        f"the matrix under {tmp_path} (v1.37.0: stopped the run on local cluster plp-1-37-5a23: the cluster was "
        "stopped and removed; the build of v1.28.0-alpha.3 ahead was stopped (its unfinished work removed))"
    )
    nothing = tmp_path / "none"
    assert matrix.stopped_line(nothing, [""]) == f"the matrix under {nothing} (no version had started)"


def test_a_release_that_cannot_be_built_says_which_step_failed_and_why() -> None:
    from harness.gobuild.go import BuildError
    from harness.gobuild.not_built import build_failure

    log_tail = "go: finding module\n.../apiserver.go:32:2: module k8s.io/apiserver found, but does not contain it"
    err = BuildError(f"building Kubernetes v1.28.0-alpha.3 failed (go build); last lines of build.log:\n{log_tail}\n")
    assert build_failure(err) == (
        "could not be built: building Kubernetes v1.28.0-alpha.3 failed (go build); last lines of build.log: ... "
        ".../apiserver.go:32:2: module k8s.io/apiserver found, but does not contain it"
    )
    assert build_failure(BuildError("the proxy refused it")) == "could not be built: the proxy refused it"
