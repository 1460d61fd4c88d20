"""`make probe`'s kind path end to end, as a user runs it: `python -m harness probe` in a child process, with
stand-ins for kind and docker (tests/fake_tools.py) and the API server with its kubelet (tests/fake_apiserver.py).

The runs are slow (each waits on its probe), so the module makes them once, at the same moment, and its tests
share them (a module-scoped fixture: under pytest-xdist these tests go to one worker, tests/conftest.py). The run
with --parallel is tests/test_make_probe_parallel.py's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.mostly_waits  # on the stand-in probes' grace periods

REPO = Path(__file__).resolve().parent.parent
ALWAYS_POD = "test_always_pod_ignoring_sigterm and not default"


def probe_with_stand_ins(
    tmp_path: Path, *cli_args: str, run_dir: Path | None = None, probe: str = ALWAYS_POD, finalizer: bool = True
) -> tuple[subprocess.CompletedProcess[str], Path, Any]:
    """`python -m harness probe --version 1.27.3 …` with stand-ins for kind, docker (tests/fake_tools.py) and the
    API server with its kubelet (tests/fake_apiserver.py), on a SIGTERM-ignoring pod (`probe` picks which: the
    stand-in API server plays the same pod for each), held by the suite's finalizer or, for a probe of a pod
    without it (`finalizer=False`), gone once it is Failed."""
    import os

    from tests import fake_tools
    from tests.doubles import pod
    from tests.fake_apiserver import AFTER_DELETE, Script, fake_apiserver

    killed = {"terminated": {"exitCode": 137, "reason": "Error", "finishedAt": "2023-12-11T00:00:09Z"}}
    deleting = pod(rv="40", deletion_timestamp="2023-12-11T00:00:09Z", grace=5)
    failed = pod(
        rv="41", phase="Failed", ready=False, container_state=killed, deletion_timestamp="2023-12-11T00:00:09Z", grace=5
    )
    after_delete = [AFTER_DELETE, {"type": "MODIFIED", "object": deleting}, {"type": "MODIFIED", "object": failed}]
    if finalizer:
        for obj in (deleting, failed):
            obj["metadata"]["finalizers"] = ["pod-lifecycle-probes.test/hold"]  # type: ignore[index]
    else:  # nothing holds it: the kubelet's final delete
        after_delete.append({"type": "DELETED", "object": failed})
    script = Script(watch_streams=[[{"type": "MODIFIED", "object": pod(rv="30")}], after_delete])
    log = tmp_path / "calls.log"
    with fake_apiserver(script) as url:
        fake_tools.install(tmp_path / "bin", log, url, [{"id": "abc123", "state": "CONTAINER_EXITED"}])
        env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "harness",
                "probe",
                "--version",
                "1.27.3",
                *cli_args,
                "--probe",
                probe,
                "--run-dir",
                str(run_dir or tmp_path / "runs"),
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    return proc, log, script


@dataclass(frozen=True)
class StandInRun:
    """One `make probe` on the stand-ins: what it printed, the kind/docker calls, the API server's script."""

    proc: subprocess.CompletedProcess[str]
    log: Path
    script: Any

    @property
    def run_dir(self) -> Path:
        """Its run directory, as it reported it."""
        (line,) = {line for line in self.proc.stdout.splitlines() if line.startswith(RUN_RECORDS)}
        return Path(line.removeprefix(RUN_RECORDS))

    def check_passed(self) -> None:
        assert self.proc.returncode == 0, self.proc.stdout[-3000:] + self.proc.stderr[-2000:]
        assert "1 passed" in self.proc.stdout


RUN_RECORDS = "run records, recordings and evidence: "


@pytest.fixture(scope="module")
def stand_in_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, StandInRun]:
    """`make probe` on stand-ins twice at once (each spends most of its time waiting on its probe), sharing one
    runs/ directory: a plain one and one with --keep-cluster, each one probe at a time (--parallel 1: auto is the
    default; tests/test_make_probe_parallel.py has the run with --parallel 2, a unit of its own under pytest-xdist,
    so it runs beside these rather than after them)."""
    from concurrent.futures import ThreadPoolExecutor

    base = tmp_path_factory.mktemp("stand-in-runs")
    one_at_a_time = ["--parallel", "1"]
    runs = {"plain": (base / "plain", one_at_a_time), "keep": (base / "keep", [*one_at_a_time, "--keep-cluster"])}
    with ThreadPoolExecutor(max_workers=len(runs)) as pool:
        started = {
            name: pool.submit(probe_with_stand_ins, where, *args, run_dir=base / "shared-runs")
            for name, (where, args) in runs.items()
        }
        return {name: StandInRun(*future.result()) for name, future in started.items()}


def test_make_probe_creates_probes_and_deletes_its_own_kind_cluster(stand_in_runs: dict[str, StandInRun]) -> None:
    """The kind path end to end on stand-ins: the cluster is created with the pinned image and a private
    kubeconfig, the node's containers are read through docker exec, the probe passes, its finalizer is
    removed, and the cluster is deleted at the end."""
    from tests import fake_tools

    run = stand_in_runs["plain"]
    run.check_passed()
    kind_calls = [c for c in fake_tools.calls(run.log) if c[0] != "docker"]
    create = next(c for c in kind_calls if c[:2] == ["create", "cluster"])
    name = create[create.index("--name") + 1]
    assert name.startswith("plp-1-27-")
    assert create[create.index("--image") + 1].endswith(
        "@sha256:3966ac761ae0136263ffdb6cfd4db23ef8a83cba8a463690e98317add2c9ba72"
    )
    run_dir = run.run_dir
    assert create[create.index("--kubeconfig") + 1] == str(run_dir / "kubeconfig")  # private, never ~/.kube/config
    assert kind_calls[-1][:4] == ["delete", "cluster", "--name", name]
    assert ["docker", "exec", "kind-control-plane", "crictl", "ps", "-a", "-o", "json"] in fake_tools.calls(run.log)
    patches = [b for m, _, _, b in run.script.requests if m == "PATCH"]
    assert patches and patches[0][1][1]["value"] == []  # the suite's finalizer removed
    record = json.loads(next((run_dir / "probes").iterdir()).read_text())
    assert record["provenance"]["node_image"].startswith("kindest/node:v1.27.3@sha256:")
    assert record["provenance"]["kind_version"] == "v0.20.0"
    assert {v["claim"]: v["status"] for v in record["verdicts"]}["container-stopped-on-node"] == "pass"
    provenance = json.loads((run_dir / "run.json").read_text())
    (preloaded,) = provenance["preloaded"].values()  # the stand-in docker has no local images
    assert preloaded == "not in local Docker: the node pulls it"
    cleaned = provenance["cleaned"]
    assert cleaned["cluster_deleted"] is True and cleaned["finalizers_removed"] == 1
    assert len(cleaned["namespaces_deleted"]) == 1 and cleaned["namespaces_left"] == []


def test_keep_cluster_keeps_it_and_says_where_its_kubeconfig_is(stand_in_runs: dict[str, StandInRun]) -> None:
    from tests import fake_tools

    run = stand_in_runs["keep"]
    run.check_passed()
    assert not [c for c in fake_tools.calls(run.log) if c[:2] == ["delete", "cluster"]]
    assert "kept kind cluster plp-1-27-" in run.proc.stdout
    assert json.loads((run.run_dir / "run.json").read_text())["cluster_kept"] is True


def test_two_runs_at_once_use_their_own_clusters_run_directories_and_namespaces(
    stand_in_runs: dict[str, StandInRun],
) -> None:
    """Two `make probe` at the same moment, sharing runs/: stand-ins as above, one set per run (each its own
    API server stand-in and kind/docker log). Each creates its own uniquely named cluster and deletes only that
    one (the plain run), or none (the run that keeps its cluster)."""
    from tests import fake_tools

    names = []
    for run, deletes_its_own in ((stand_in_runs["plain"], True), (stand_in_runs["keep"], False)):
        run.check_passed()
        kind_calls = [c for c in fake_tools.calls(run.log) if c[0] != "docker"]
        create = next(c for c in kind_calls if c[:2] == ["create", "cluster"])
        deletes = [c for c in kind_calls if c[:2] == ["delete", "cluster"]]
        name = create[create.index("--name") + 1]
        assert [d[d.index("--name") + 1] for d in deletes] == [name] * deletes_its_own  # never the other's
        names.append(name)
    assert len(set(names)) == 2
    run_dirs = sorted(stand_in_runs["plain"].run_dir.parent.iterdir())
    assert run_dirs == sorted({stand_in_runs["plain"].run_dir, stand_in_runs["keep"].run_dir})
    namespaces = {json.loads((d / "run.json").read_text())["cleaned"]["namespaces_deleted"][0] for d in run_dirs}
    assert len(namespaces) == 2
