"""A release carries its canonical spelling (harness/base/versions.py `Release.spelled`), and what is handed between a
front door and the processes it starts (make matrix -> each version's make probe -> its pytest processes, the
runnable as JSON) holds the release by that spelling beside the node image that carries the runtime: no process reads
a node image's tag as a version it hands on, so a runtime suffix (plp-node:v1.27.16-kind.v0.25.0) never passes for
part of one.

Seen live before: make matrix VERSIONS="1.27.16:kind 1.27.16:containerd=2.3.4" stopped every worker with "not a
Kubernetes version: '1.27.16-kind.v0.25.0'" (the image's tag read into the release, written into the runnable, and
refused when the workers read it back). Stood in here: Docker, kind, the node image builds and the clusters; real:
the matrix's entries and plan, make probe's door (resolve, prepare, the runnable handed on) and the worker's reading
of it down to its cluster's provider.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.axis import matrix
from harness.axis.pinned import pinned_minors
from harness.axis.releases import published_releases
from harness.base import paths
from harness.base.run import Run
from harness.base.versions import KubeVersion, Release, VersionError
from harness.clusters.kind import axis as kind_axis
from harness.clusters.kind import clusters as kind_clusters
from harness.clusters.kind import images
from harness.clusters.kind.images import NodeImage
from harness.clusters.kind.provider import KindProvider
from harness.clusters.kinds import Runnable
from harness.clusters.registry import kind_named
from harness.doors import cli
from harness.doors.commands import version_axis
from harness.nodeimage import tags
from tests.test_release_read_once import counted, started

KIND_COMPONENTS = "plp-node:v1.27.16-kind.v0.25.0"
ON_CONTAINERD_2_3_4 = "plp-node:v1.27.16-kind.v0.25.0-containerd.v2.3.4"


@pytest.mark.parametrize(
    ("text", "spelled"),
    [
        ("1.27", "1.27"),
        ("v1.27", "1.27"),
        ("1.27.3", "1.27.3"),
        ("v1.27.3", "1.27.3"),
        ("v1.27.0-rc.0", "1.27.0-rc.0"),
        ("v1.27.3-eks-a5565ad", "1.27.3"),  # a vendor's suffix, as a server reports it
        ("v1.28.2+k3s1", "1.28.2"),
        ("v1.27.16-kind.v0.25.0", "1.27.16"),  # a node image's tag with the runtime it carries
        ("v1.27.16-kind.v0.25.0-containerd.v2.3.4", "1.27.16"),
        ("v1.31.0-alpha.1-kind.v0.25.0", "1.31.0-alpha.1"),
    ],
)
def test_a_release_spells_itself_as_kubernetes_does_whatever_text_it_was_read_from(text: str, spelled: str) -> None:
    release = Release(KubeVersion.parse(text))
    assert (release.spelled, str(release), release.bare, release.tag) == (spelled, spelled, spelled, f"v{spelled}")
    assert Release.spelled_as(spelled) == release
    assert release.names_a_patch == (spelled.count(".") >= 2)


def test_every_catalogued_release_and_pinned_minor_reads_back_from_its_spelling() -> None:
    for text in [*published_releases(), *pinned_minors()]:
        release = Release(KubeVersion.parse(text))
        assert release.spelled == text and Release.spelled_as(release.spelled) == release


def test_two_spellings_of_one_release_are_one_release() -> None:
    assert (
        Release.parse("v1.27.3") == Release.parse("1.27.3")
        and len({Release.parse("v1.27.3"), Release.parse("1.27.3")}) == 1
    )
    assert Release.parse("v1.27.3").kube.text == "v1.27.3"  # the text as given stays for what says it back
    assert Release.parse("1.27") != Release.parse("1.27.0")


@pytest.mark.parametrize(
    "text", ["1.27.16-kind.v0.25.0", "v1.27.16", "1.27.3-eks-1", "1.27.0rc0", "1.27.x", "", "plp-node:v1.27.16"]
)
def test_only_a_releases_own_spelling_reads_back(text: str) -> None:
    with pytest.raises(VersionError):
        Release.spelled_as(text)


@pytest.mark.parametrize("tag", [KIND_COMPONENTS, ON_CONTAINERD_2_3_4])
def test_a_runnable_resolved_from_a_runtimes_image_round_trips_its_release_and_image_apart(tag: str) -> None:
    """make probe IMAGE=<the image a runtime entry runs>: the runnable kind resolves names release 1.27.16 and the
    image, and the JSON its pytest processes read gives both back as they were."""
    kind = kind_named("kind")
    runnable = kind.resolve(kind.request(lambda name: {"--kind-image": tag, "--kind-bin": "kind"}.get(name)), print)
    handed = json.loads(runnable.to_json())
    assert handed["version"] == "1.27.16" and handed["facts"]["image"] == tag
    back = Runnable.from_json(runnable.to_json())
    assert back == runnable and back.version is not None and back.version.spelled == "1.27.16"


@pytest.fixture
def tag_readings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text read as a Kubernetes version (KubeVersion.parse: every reading goes through it)."""
    return counted(monkeypatch, "parse")


def probe_door(monkeypatch: pytest.MonkeyPatch, argv: list[str], tmp_path: Path) -> str:
    """make probe's door on a stood-in host (Docker, kind): the runnable it hands its pytest (--cluster-spec)."""
    for check in ("check_docker", "check_engine"):
        monkeypatch.setattr(kind_clusters, check, lambda: None)
    monkeypatch.setattr(kind_clusters, "check_prerequisites", lambda kind_bin: "kind v0.25.0 go1.22 linux/amd64")
    monkeypatch.setattr(kind_clusters, "ensure_kind", lambda release: "kind")
    monkeypatch.setattr(kind_clusters, "engine_cgroup_version", lambda: 2)
    monkeypatch.setattr(images, "_kind_release_of", lambda reference: "v0.25.0")  # its record under .tools/
    command = started(monkeypatch, argv, tmp_path)
    return command[command.index("--cluster-spec") + 1]


def test_a_matrix_runtime_entry_reaches_its_workers_cluster_without_its_image_tag_read_as_a_version(
    tag_readings: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """make matrix VERSIONS="1.27.16:kind 1.27.16:containerd=2.3.4" (both images built earlier): each version's make
    probe reads its IMAGE's tag once, at its door, and hands on release 1.27.16 beside the image; a worker reads that
    back and makes its cluster's provider for release 1.27.16 on that image, reading no tag."""
    records = tmp_path / "node-images"
    records.mkdir()
    monkeypatch.setattr(tags, "node_image_record", lambda tag, directory=records: records / f"{tag}.json")
    for tag in (KIND_COMPONENTS, ON_CONTAINERD_2_3_4):
        tags.node_image_record(tag).write_text("{}")
    monkeypatch.setattr(kind_axis, "check_docker", lambda: None)
    monkeypatch.setattr(kind_axis, "check_engine", lambda: None)
    monkeypatch.setattr(version_axis, "check_go", lambda: "go1.22 (stood in)")
    monkeypatch.setattr(matrix, "disk_gb", lambda tools: 0.0)
    monkeypatch.setattr(version_axis, "runtimes_of_runs", lambda runs: None)
    probe_argvs: list[list[str]] = []

    def probe_run(command: list[str], log: object = None) -> int:
        probe_argvs.append(command[command.index("probe") : command.index("--run-dir")])
        return 0

    monkeypatch.setattr(matrix, "run_through_interrupt", probe_run)
    versions = "1.27.16:kind 1.27.16:containerd=2.3.4"
    assert cli.main(["matrix", "--versions", versions, "--jobs", "1", "--run-dir", str(tmp_path / "m")]) == 0
    assert sorted(argv[-1] for argv in probe_argvs) == [KIND_COMPONENTS, ON_CONTAINERD_2_3_4]
    for argv in probe_argvs:
        image = argv[-1]
        tag_readings.clear()
        spec = probe_door(monkeypatch, argv, tmp_path)
        assert [text for text in tag_readings if "kind." in text] == [image.split(":", 1)[1]]  # IMAGE, at its door
        handed = json.loads(spec)
        assert handed["version"] == "1.27.16" and handed["facts"]["image"] == image

        tag_readings.clear()
        runnable = Runnable.from_json(spec)  # what each pytest process (each PARALLEL worker too) does first
        notes: dict[str, Any] = {}
        run = Run.start(tmp_path / "worker")
        provider = kind_named("kind").provider(runnable, run, notes.update)
        assert isinstance(provider, KindProvider) and provider.cluster.image == image
        assert provider.name == paths.cluster_name("1.27", run.run_id)
        assert tag_readings == ["1.27.16"] and not any("kind." in text for text in tag_readings)


def test_a_worker_builds_its_node_image_from_the_release_it_was_handed() -> None:
    """The provider's image takes the runnable's release: a tag that does not spell the release is not consulted."""
    release = Release.spelled_as("1.27.16")
    image = NodeImage.running(f"{KIND_COMPONENTS}@sha256:{'a' * 64}", release, "v0.25.0")
    assert image.kubernetes == release.kube and image.digest == "sha256:" + "a" * 64
    assert NodeImage.running(KIND_COMPONENTS, release, None).digest is None
