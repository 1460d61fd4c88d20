"""make matrix with a runtime after a version (VERSIONS="1.27.16 1.27.16:debian 1.27.16:containerd=2.3.4") and make
runtimes RUNS=<run directories>: one release on several runtimes, set side by side claim by claim.

Stood in: Docker, Go, the Go module proxy (tests/test_nodeimage_kind_parts.py's FakeProxy), node image builds and each
version's probe run (a child that writes what make probe writes). Real: the entries' reading, the image names, the
plan, the matrix's scheduling and records, and the replays of shipped recordings in the last test.
"""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.axis import matrix, runtimes
from harness.base import paths
from harness.base.inputs import BadInput
from harness.base.versions import Release
from harness.clusters.kind import axis as kind_axis
from harness.clusters.kind import node_images
from harness.doors import cli
from harness.doors.commands import runtimes as runtimes_command
from harness.doors.commands import version_axis
from harness.nodeimage import kind_plan, tags
from harness.nodeimage.node import built_tag
from tests.test_nodeimage_kind_parts import LISTED, SERVED, FakeProxy

V1_27_16 = Release.parse("1.27.16")
WITH_2_3_4 = {**SERVED, "github.com/containerd/containerd/v2": ["v2.1.4", "v2.3.4"]}


def test_each_runtime_names_the_image_make_node_image_builds_with_those_variables(tmp_path: Path) -> None:
    """The tag of a kind-components image comes from one naming (kind_plan.tag_suffix), planned or built: the tag an
    entry runs is the one a build from the plan of the same PARTS, CONTAINERD and KIND gets."""
    proxy = FakeProxy(tmp_path, WITH_2_3_4, LISTED)
    planned = kind_plan.plan("v0.25.0", V1_27_16.kube, "2.3.4", tools=tmp_path, go=proxy)
    built = built_tag("v1.27.16", planned.suffix)  # as build_node_images names what it built
    assert node_images.image_runtime("containerd=2.3.4").tag(V1_27_16) == built
    assert built == "plp-node:v1.27.16-kind.v0.25.0-containerd.v2.3.4"
    assert node_images.image_runtime("kind").tag(V1_27_16) == "plp-node:v1.27.16-kind.v0.25.0"
    assert node_images.image_runtime("kind=0.25.0").tag(V1_27_16) == "plp-node:v1.27.16-kind.v0.25.0"
    assert node_images.image_runtime("debian").tag(V1_27_16) == "plp-node:v1.27.16"
    assert node_images.image_runtime("parts=debian").tag(V1_27_16) == "plp-node:v1.27.16"
    spelled = {text: node_images.image_runtime(text).spelled for text in ("kind", "debian", "parts=kind")}
    assert spelled == {"kind": "kind", "debian": "debian", "parts=kind": "kind"}
    assert node_images.image_runtime(" containerd=2.3.4 , kind=0.27.0").spelled == "kind=v0.27.0,containerd=v2.3.4"


@pytest.mark.parametrize(
    ("runtime", "says"),
    [
        ("runc=1.1.12", "'runc=1.1.12' is not a runtime"),
        ("containerd", "'containerd' is not a runtime"),
        ("kind=", "'kind=' is not a runtime"),
        ("kind,debian", "parts is named twice"),
        ("parts=gentoo", "PARTS=gentoo"),
        ("debian,kind=v0.25.0", "do not apply with PARTS=debian"),
    ],
)
def test_a_runtime_make_node_image_would_not_build_is_refused_in_one_line(runtime: str, says: str) -> None:
    with pytest.raises(BadInput, match=says) as refused:
        node_images.image_runtime(runtime)
    assert "\n" not in str(refused.value)


class Stood:
    """What the stood-in Docker, Go, builds and probe runs were asked, in order."""

    def __init__(self) -> None:
        self.asked: list[tuple[Any, ...]] = []


@pytest.fixture
def stood_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Stood:
    """A host with Docker and Go, where plp-node:v1.27.16 (Debian's runtime) was built earlier and nothing else: node
    image records under tmp_path, builds and probe runs noted and stood in."""
    stood = Stood()
    records = tmp_path / "node-images"
    records.mkdir()
    monkeypatch.setattr(tags, "node_image_record", lambda tag: records / f"{tag.replace(':', '-')}.json")
    (records / "plp-node-v1.27.16.json").write_text("{}")
    for name in ("check_docker", "check_engine"):
        monkeypatch.setattr(kind_axis, name, lambda: None)
    monkeypatch.setattr(version_axis, "check_go", lambda: "go version go1.24.13 (stood in)")
    monkeypatch.setattr(
        node_images,
        "plan",
        functools.partial(kind_plan.plan, tools=tmp_path, go=FakeProxy(tmp_path, WITH_2_3_4, LISTED)),
    )

    def make_node_image(release: Release, source: str, say: Callable[[str], None], **chosen: str) -> str:
        raise AssertionError("the matrix builds a node image in this process, where it could not stop it")

    def build_in_a_child(argv: list[str], out: object, stop: object, cleanup_s: float) -> int:
        """make node-image in a child process, as the matrix starts it: the image it builds, recorded."""
        assert argv[1:4] == ["-m", "harness", "node-image"] and stop is not None
        given = dict(zip(argv[4::2], argv[5::2], strict=True))
        chosen = {key: given.get(f"--{key}", "") for key in ("parts", "containerd", "kind")}
        stood.asked.append(("build", given["--version"], given["--source"], chosen))
        tag = node_images.ImageRuntime(**chosen).tag(Release.parse(given["--version"]))
        tags.node_image_record(tag).write_text("{}")
        return 0

    def probe_run(command: list[str], log: object = None) -> int:
        stood.asked.append(("probe", command[command.index("probe") + 1 : command.index("--run-dir")]))
        image = command[command.index("--image") + 1] if "--image" in command else "kindest/node:v1.27.16"
        run = Path(command[command.index("--run-dir") + 1]) / "20261206-000000-abcd"
        (run / "probes").mkdir(parents=True)
        (run / "recordings").mkdir()
        (run / "probes" / "p.json").write_text(json.dumps({"outcome": "passed"}))
        (run / "run.json").write_text(json.dumps({"server_version": {"gitVersion": "v1.27.16"}, "node_image": image}))
        containerd = "v2.3.4 (built here)" if "containerd" in image else "v1.7.18 (built here)"
        origin = {"node_image": image} if image == "plp-node:v1.27.16" else {"containerd": containerd}
        (run / "recordings" / "p.json").write_text(json.dumps({"probe": "p.py::test_p", "origin": origin}))
        return 0

    monkeypatch.setattr(kind_axis, "make_node_image", make_node_image)
    monkeypatch.setattr(kind_axis, "run_until_stopped", build_in_a_child)
    monkeypatch.setattr(matrix, "run_through_interrupt", probe_run)
    monkeypatch.setattr(matrix, "disk_gb", lambda tools: 1.5)  # (du over the real .tools/ takes seconds)
    monkeypatch.setattr(version_axis, "run_report_command", lambda args: stood.asked.append(("report", args.runs)))
    monkeypatch.setattr(version_axis, "runtimes_of_runs", lambda runs: stood.asked.append(("side by side", runs)))
    return stood


def test_a_matrix_runs_one_release_on_three_runtimes_each_on_the_image_make_node_image_builds(
    stood_in: Stood, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    versions = "1.27.16 1.27:debian 1.27.16:containerd=2.3.4"
    code = cli.main(["matrix", "--versions", versions, "--jobs", "1", "--run-dir", str(tmp_path / "runs")])
    out = capsys.readouterr().out
    assert code == 0, out
    (base,) = (tmp_path / "runs").glob("matrix-*")
    assert [a for a in stood_in.asked if a[0] != "probe"] == [
        ("build", "1.27.16", "modules", {"parts": "kind", "containerd": "2.3.4", "kind": ""}),  # only the missing one
        ("report", [str(base)]),
        ("side by side", [base]),
    ]
    assert sorted(a[1] for a in stood_in.asked if a[0] == "probe") == [
        ["--image", "plp-node:v1.27.16"],
        ["--image", "plp-node:v1.27.16-kind.v0.25.0-containerd.v2.3.4"],
        ["--version", "1.27.16"],
    ]
    assert "  1.27:debian -> v1.27.16:debian" in out and "builds ahead, while probes run" in out
    assert sorted(p.name for p in base.iterdir() if p.is_dir()) == [
        "1.27.16",
        "1.27.16-containerd-v2-3-4",
        "1.27.16-debian",
    ]
    record = json.loads((base / "matrix.json").read_text())
    assert [(v["version"], v["runtime"], v["status"]) for v in record["versions"]] == [
        ("1.27.16", "", "passed"),
        ("1.27.16:debian", "debian", "passed"),
        ("1.27.16:containerd=v2.3.4", "containerd=v2.3.4", "passed"),
    ]
    table = out[out.index("release ") :]
    assert "\nv1.27.16:containerd=v2.3.4 " in table and "\nv1.27.16:debian " in table
    groups = runtimes.run_recordings([base])
    assert sorted(groups) == ["1.27.16"]
    assert {runtime: len(found) for runtime, found in groups["1.27.16"].items()} == {
        runtimes.DEBIAN: 1,
        "containerd v1.7.18": 1,
        "containerd v2.3.4": 1,
    }


def test_a_matrix_of_one_runtime_per_release_is_not_set_side_by_side(stood_in: Stood, tmp_path: Path) -> None:
    assert cli.main(["matrix", "--versions", "1.27:debian", "--run-dir", str(tmp_path / "runs")]) == 0
    assert [a[0] for a in stood_in.asked] == ["probe", "report"]  # built earlier: nothing built


def test_a_containerd_the_proxy_refuses_is_refused_before_any_build_or_cluster(
    stood_in: Stood, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    versions = "1.27.16:debian 1.27.16:containerd=2.9.9"
    assert cli.main(["matrix", "--versions", versions, "--run-dir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    (line,) = err.splitlines()
    assert line.startswith("error: bad input: containerd v2.9.9: the Go module proxy does not serve ")
    assert "github.com/containerd/containerd/v2@v2.9.9" in line
    assert stood_in.asked == [] and not list((tmp_path / "runs").glob("matrix-*"))


def _run(root: Path, name: str, recordings: list[Path], server: str = "v1.27.16") -> Path:
    """A run directory as make probe writes one: its run.json and the recordings it wrote."""
    run = root / name / "20261206-000000-abcd"
    (run / "recordings").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"server_version": {"gitVersion": server}}))
    for path in recordings:
        shutil.copy(path, run / "recordings" / (path.name.split("--")[0].replace("_", "-") + ".json"))
    return run


def test_make_runtimes_runs_sets_the_runs_of_a_matrix_side_by_side_replaying_their_recordings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Real replays: shipped v1.27.16 recordings of one probe on three runtimes, placed as a matrix's runs."""
    shipped = paths.REPO / "probes" / "termination_order" / "recordings"
    by_runtime: dict[str, Path] = {}
    for path in sorted(shipped.glob("deletion_fields_from_the_spec--v1.27.16-live-kind*.json")):
        by_runtime.setdefault(runtimes.runtime_of(json.loads(path.read_text())["origin"]), path)
    assert len(by_runtime) == 3, by_runtime
    base = tmp_path / "matrix-20261206-000000-abcd"
    for number, path in enumerate(by_runtime.values()):
        _run(base, f"1.27.16-{number}", [path])
    _run(base, "1.26.15", [path], server="v1.26.15")  # another release, on one runtime: not compared
    (base / "1.28.15" / "20261206-000000-dcba").mkdir(parents=True)  # a cluster that never answered: no run.json

    code = runtimes_command.runtimes_of_runs([base], refuse_when_none=True)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "v1.27.16 on 3 runtimes (recordings of the runs under RUNS, replayed against today's rows):" in out
    pairs = [line for line in out.splitlines() if "claims observed by both; 0 differ" in line]
    assert len(pairs) == 3 and "v1.26.15" not in out
    assert all(int(line.split(": ")[1].split()[0]) > 0 for line in pairs)  # each pair compared some claims

    assert runtimes_command.runtimes_of_runs([base / "1.26.15"], refuse_when_none=True) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the runs under RUNS hold no release on two runtimes or more (v1.26.15: ")
    assert len(err.splitlines()) == 1


def test_make_runtimes_takes_runs_as_words_and_version_as_given() -> None:
    from harness.doors.make_variables import make_argv

    argv = make_argv("runtimes", {"RUNS": "runs/matrix-a runs/matrix-b"})
    assert argv == ["runtimes", "--version=", "--runs", "runs/matrix-a", "runs/matrix-b"]
    assert cli.parse_args(argv).runs == ["runs/matrix-a", "runs/matrix-b"]


def test_the_version_of_an_entry_is_read_as_make_probe_reads_it() -> None:
    axis = kind_axis.KindAxis(cli.parse_args(["matrix"])).on_runtime("debian")
    assert axis is not None
    assert [str(r) for r in axis.releases([Release.parse("1.27"), Release.parse("v1.27.3")])] == ["1.27.16", "1.27.3"]
