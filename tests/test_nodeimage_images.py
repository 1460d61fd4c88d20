"""Images for kind nodes (harness/nodeimage/) offline: archive structure, names per kubeadm's list, reuse, errors.

Nothing here runs Go, debootstrap, gcc or containerd: the binaries are a few bytes, the etcd/CoreDNS builds,
the Debian tools layer and the pause compile are stand-ins. The live check (`ctr images import` of every
archive, `ctr run` of etcd, CoreDNS and kube-proxy) is described in harness/nodeimage/images.py.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from harness.gobuild.kubernetes import Build
from harness.nodeimage import addons
from harness.nodeimage import images as node
from harness.nodeimage.addons import Addon, AddonBuildError
from harness.nodeimage.oci_images import (
    FileEntry,
    directory_tar,
    file_layer,
    layer_tar,
    memory_layer,
    write_oci_archive,
)

KUBEADM_LIST = [
    "registry.k8s.io/kube-apiserver:v1.27.3",
    "registry.k8s.io/kube-controller-manager:v1.27.3",
    "registry.k8s.io/kube-scheduler:v1.27.3",
    "registry.k8s.io/kube-proxy:v1.27.3",
    "registry.k8s.io/pause:3.9",
    "registry.k8s.io/etcd:3.5.7-0",
    "registry.k8s.io/coredns/coredns:v1.10.1",
]
COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy")


def _members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def _blob(files: dict[str, bytes], digest: str) -> bytes:
    return files[f"blobs/sha256/{digest.split(':', 1)[1]}"]


def _image(archive: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], list[dict[str, tarfile.TarInfo]]]:
    """(index, manifest, config, the members of each layer by name) of an archive, checking every digest."""
    files = _members(archive)
    index = json.loads(files["index.json"])
    digests = {entry["digest"] for entry in index["manifests"]}
    assert len(digests) == 1  # every name points to the same manifest
    manifest_bytes = _blob(files, digests.pop())
    manifest = json.loads(manifest_bytes)
    config_bytes = _blob(files, manifest["config"]["digest"])
    assert f"sha256:{hashlib.sha256(config_bytes).hexdigest()}" == manifest["config"]["digest"]
    config = json.loads(config_bytes)
    layers = []
    for descriptor, diff_id in zip(manifest["layers"], config["rootfs"]["diff_ids"], strict=True):
        blob = _blob(files, descriptor["digest"])
        assert f"sha256:{hashlib.sha256(blob).hexdigest()}" == descriptor["digest"]
        assert descriptor["size"] == len(blob)
        tar = gzip.decompress(blob) if descriptor["mediaType"].endswith("+gzip") else blob
        assert f"sha256:{hashlib.sha256(tar).hexdigest()}" == diff_id
        with tarfile.open(fileobj=io.BytesIO(tar)) as opened:
            layers.append({m.name: m for m in opened.getmembers()})
    return index, manifest, config, layers


def test_a_multi_layer_archive_names_every_image_and_is_reproducible(tmp_path: Path) -> None:
    base = tmp_path / "base.tar"
    base.write_bytes(layer_tar([FileEntry("usr"), FileEntry("usr/sbin"), FileEntry("usr/sbin/tool", b"x")]))
    layers = [file_layer(base, tmp_path / "blobs"), memory_layer(layer_tar([FileEntry("app", b"binary")]))]
    names = ["registry.k8s.io/a:1", "docker.io/library/a@sha256:" + "0" * 64]
    first, second = io.BytesIO(), io.BytesIO()
    digest = write_oci_archive(first, names, layers, {"Env": ["PATH=/bin"]})
    assert write_oci_archive(second, names, layers, {"Env": ["PATH=/bin"]}) == digest
    assert first.getvalue() == second.getvalue()
    archive = tmp_path / "a.oci.tar"
    archive.write_bytes(first.getvalue())
    index, manifest, config, contents = _image(archive)
    assert [e["annotations"]["io.containerd.image.name"] for e in index["manifests"]] == names
    assert [e["platform"] for e in index["manifests"]] == [{"architecture": "amd64", "os": "linux"}] * 2
    assert [layer["mediaType"] for layer in manifest["layers"]] == [
        "application/vnd.oci.image.layer.v1.tar+gzip",
        "application/vnd.oci.image.layer.v1.tar",
    ]
    assert config["config"] == {"Env": ["PATH=/bin"]}
    assert "usr/sbin/tool" in contents[0] and "app" in contents[1]
    # the same tar gives the same blob
    assert file_layer(base, tmp_path / "blobs") == layers[0]


def test_a_root_file_system_becomes_a_sorted_reproducible_layer(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "dev").mkdir()
    (root / "dev" / "null-ish").write_text("device nodes are never in a layer")
    (root / "usr" / "bin" / "b").write_text("b")
    (root / "usr" / "bin" / "a").write_text("a")
    (root / "usr" / "bin" / "a-link").hardlink_to(root / "usr" / "bin" / "a")
    (root / "bin").symlink_to("usr/bin")
    directory_tar(root, tmp_path / "one.tar", skip=("dev",))
    directory_tar(root, tmp_path / "two.tar", skip=("dev",))
    assert (tmp_path / "one.tar").read_bytes() == (tmp_path / "two.tar").read_bytes()
    with tarfile.open(tmp_path / "one.tar") as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert "dev" in members and "dev/null-ish" not in members
    assert members["bin"].issym() and members["bin"].linkname == "usr/bin"
    assert members["usr/bin/a-link"].islnk() and members["usr/bin/a-link"].linkname == "usr/bin/a"
    assert {m.mtime for m in members.values()} == {0}


class Stubs:
    """Stand-ins for the slow sources, counting their calls."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.calls: list[str] = []
        busybox = tmp / "busybox"
        busybox.write_text("#!/bin/sh\necho bin/busybox; echo bin/sh\n")
        busybox.chmod(0o755)
        source = tmp / "kubernetes" / "build" / "pause" / "linux"
        source.mkdir(parents=True)
        (source / "pause.c").write_text("int main(void) { return 0; }\n")
        base = tmp / "proxy-base.tar"
        base.write_bytes(
            layer_tar([FileEntry("usr"), FileEntry("usr/sbin"), FileEntry("usr/sbin/iptables-wrapper", b"#!/bin/sh\n")])
        )
        self.base = node.ProxyBase(base, {"how": "debootstrap (stand-in)", "tar_sha256": "sha256:base"})
        self.busybox = busybox

    def addon(self, name: str, version: str) -> Addon:
        directory = self.tmp / f"{name}-{version}"
        directory.mkdir(exist_ok=True)
        (directory / name).write_bytes(f"{name} {version}".encode())
        return Addon(name, version, directory, {"how": f"{name} stand-in", "toolchain": "go0"})

    def etcd(self, tag: str) -> Addon:
        self.calls.append(f"etcd {tag}")
        return self.addon("etcd", addons.etcd_module_version(tag))

    def coredns(self, tag: str) -> Addon:
        self.calls.append(f"coredns {tag}")
        return self.addon("coredns", addons.coredns_module_version(tag))

    def proxy_base(self) -> node.ProxyBase:
        self.calls.append("proxy base")
        return self.base

    def pause(self, pause_c: Path, scratch: Path, tag: str) -> bytes:
        self.calls.append(f"pause {tag}")
        return layer_tar([FileEntry("pause", b"pause " + tag.encode())])

    def sources(self) -> node.Sources:
        return node.Sources(
            etcd=self.etcd,
            coredns=self.coredns,
            proxy_base=self.proxy_base,
            kubernetes_source=lambda version: self.tmp / "kubernetes",
            pause=self.pause,
            busybox=self.busybox,
        )


def _build(tmp: Path, version: str = "v1.27.3") -> Build:
    directory = tmp / version
    (directory / "bin").mkdir(parents=True)
    for component in COMPONENTS:
        (directory / "bin" / component).write_bytes(f"{component} {version}".encode())
    return Build(version, directory, {"toolchain": "go1.20.14", "how": "stand-in"})


def test_every_name_kubeadm_lists_gets_an_archive_with_the_binary_where_kubeadm_runs_it(tmp_path: Path) -> None:
    stubs = Stubs(tmp_path)
    archives = node.node_images(_build(tmp_path), KUBEADM_LIST, tmp_path / "out", stubs.sources())
    names = [name for archive in archives for name in archive.names]
    assert names[: len(KUBEADM_LIST)] == KUBEADM_LIST
    assert (
        "docker.io/library/alpine:3.18.4@sha256:eece025e432126ce23f223450a0326fbebde39cdf496a85d8c016293fc851978"
        in names
    )
    by_name = {archive.names[0]: archive for archive in archives}
    for component in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        _, _, config, layers = _image(by_name[f"registry.k8s.io/{component}:v1.27.3"].path)
        assert len(layers) == 1
        binary = layers[0][f"usr/local/bin/{component}"]
        assert binary.mode == 0o755 and layers[0]["tmp"].mode == 0o1777
        assert config["config"]["Env"][0].startswith("PATH=") and "Entrypoint" not in config["config"]
    _, _, config, layers = _image(by_name["registry.k8s.io/kube-proxy:v1.27.3"].path)
    assert [sorted(layer) for layer in layers] == [
        ["usr", "usr/sbin", "usr/sbin/iptables-wrapper"],  # the shared tools layer first
        ["tmp", "usr", "usr/local", "usr/local/bin", "usr/local/bin/kube-proxy"],
    ]
    _, _, _, layers = _image(by_name["registry.k8s.io/etcd:3.5.7-0"].path)
    assert "usr/local/bin/etcd" in layers[0] and "var/lib/etcd" in layers[0]
    _, _, config, layers = _image(by_name["registry.k8s.io/coredns/coredns:v1.10.1"].path)
    assert config["config"]["Entrypoint"] == ["/coredns"] and "coredns" in layers[0]
    _, _, config, layers = _image(by_name["registry.k8s.io/pause:3.9"].path)
    assert config["config"] == {"Entrypoint": ["/pause"], "User": "65535:65535"} and "pause" in layers[0]
    assert sorted(stubs.calls) == ["coredns v1.10.1", "etcd 3.5.7-0", "pause 3.9", "proxy base"]
    record = json.loads((tmp_path / "out" / "images.json").read_text())
    assert [entry["names"] for entry in record["images"]] == [list(a.names) for a in archives]
    assert [entry["digest"] for entry in record["images"]] == [a.digest for a in archives]
    assert "etcd stand-in" in by_name["registry.k8s.io/etcd:3.5.7-0"].source


# What kubeadm v1.21.14 lists (cmd/kubeadm/app/constants/constants.go there: pause 3.4.1, etcd 3.4.13-0, CoreDNS
# v1.8.0; DefaultImageRepository k8s.gcr.io, under which CoreDNS is coredns/coredns).
KUBEADM_LIST_1_21 = [
    "k8s.gcr.io/kube-apiserver:v1.21.14",
    "k8s.gcr.io/kube-controller-manager:v1.21.14",
    "k8s.gcr.io/kube-scheduler:v1.21.14",
    "k8s.gcr.io/kube-proxy:v1.21.14",
    "k8s.gcr.io/pause:3.4.1",
    "k8s.gcr.io/etcd:3.4.13-0",
    "k8s.gcr.io/coredns/coredns:v1.8.0",
]


def test_a_release_whose_kubeadm_names_k8s_gcr_io_gets_its_images_under_exactly_those_names(tmp_path: Path) -> None:
    stubs = Stubs(tmp_path)
    build = _build(tmp_path, "v1.21.14")
    archives = node.node_images(build, KUBEADM_LIST_1_21, tmp_path / "out", stubs.sources())
    assert [archive.names for archive in archives[:-1]] == [(name,) for name in KUBEADM_LIST_1_21]
    by_name = {archive.names[0]: archive for archive in archives}
    for name in KUBEADM_LIST_1_21:
        index, _, _, _ = _image(by_name[name].path)
        assert [e["annotations"]["io.containerd.image.name"] for e in index["manifests"]] == [name]
    assert by_name["k8s.gcr.io/kube-apiserver:v1.21.14"].path.name == "kube-apiserver_v1.21.14.oci.tar"
    assert by_name["k8s.gcr.io/coredns/coredns:v1.8.0"].path.name == "coredns_coredns_v1.8.0.oci.tar"
    _, _, config, layers = _image(by_name["k8s.gcr.io/coredns/coredns:v1.8.0"].path)
    assert config["config"]["Entrypoint"] == ["/coredns"] and "coredns" in layers[0]
    _, _, _, layers = _image(by_name["k8s.gcr.io/etcd:3.4.13-0"].path)
    assert layers[0]["usr/local/bin/etcd"].mode == 0o755
    assert sorted(stubs.calls) == ["coredns v1.8.0", "etcd 3.4.13-0", "pause 3.4.1", "proxy base"]


def test_coredns_under_a_single_level_name_is_made_too(tmp_path: Path) -> None:
    """kubeadm before 1.21, and under an imageRepository of one's own, names CoreDNS `<registry>/coredns:<tag>`."""
    stubs = Stubs(tmp_path)
    archives = node.node_images(_build(tmp_path), ["k8s.gcr.io/coredns:1.7.0"], tmp_path / "out", stubs.sources())
    assert archives[0].names == ("k8s.gcr.io/coredns:1.7.0",) and stubs.calls == ["coredns 1.7.0"]


def test_archives_are_reused_until_an_input_changes(tmp_path: Path) -> None:
    stubs = Stubs(tmp_path)
    build = _build(tmp_path)
    first = node.node_images(build, KUBEADM_LIST, tmp_path / "out", stubs.sources())
    written = {a.path: a.path.stat().st_mtime_ns for a in first}
    stubs.calls.clear()
    again = node.node_images(build, KUBEADM_LIST, tmp_path / "out", stubs.sources())
    assert again == first
    assert {a.path: a.path.stat().st_mtime_ns for a in again} == written
    assert "pause 3.9" not in stubs.calls  # nothing compiled again
    build.binary("kube-scheduler").write_bytes(b"kube-scheduler rebuilt")
    changed = node.node_images(build, KUBEADM_LIST, tmp_path / "out", stubs.sources())
    rewritten = [a.names[0] for a in changed if a.path.stat().st_mtime_ns != written[a.path]]
    assert rewritten == ["registry.k8s.io/kube-scheduler:v1.27.3"]
    assert [a.digest for a in changed] != [a.digest for a in first]


def test_a_failed_addon_build_is_one_clear_error(tmp_path: Path) -> None:
    stubs = Stubs(tmp_path)

    def broken(tag: str) -> Addon:
        raise AddonBuildError("building etcd v3.5.7 failed (go build ...); last lines of build.log:\nno space")

    sources = node.Sources(**{**stubs.sources().__dict__, "etcd": broken})
    with pytest.raises(node.NodeImageError, match=r"building etcd v3\.5\.7 failed.*\n.*no space"):
        node.node_images(_build(tmp_path), KUBEADM_LIST, tmp_path / "out", sources)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("registry.k8s.io/kube-apiserver:v1.27.4", "but the build is v1.27.3"),
        ("registry.k8s.io/something-new:v1", "does not know how to make"),
        ("quay.io/kube-apiserver:v1.27.3", "with a registry of registry.k8s.io or k8s.gcr.io"),
        ("gcr.io/kube-apiserver:v1.27.3", "with a registry of registry.k8s.io or k8s.gcr.io"),
        ("registry.k8s.io/kube-apiserver", "it has no tag"),
    ],
)
def test_names_the_suite_cannot_make_are_refused(tmp_path: Path, name: str, message: str) -> None:
    with pytest.raises(node.NodeImageError, match=message):
        node.node_images(_build(tmp_path), [name], tmp_path / "out", Stubs(tmp_path).sources())


def test_a_missing_component_binary_is_named(tmp_path: Path) -> None:
    build = _build(tmp_path)
    build.binary("kube-proxy").unlink()
    with pytest.raises(node.NodeImageError, match="has no kube-proxy"):
        node.node_images(build, KUBEADM_LIST, tmp_path / "out", Stubs(tmp_path).sources())


@pytest.mark.parametrize(
    ("tag", "version"), [("3.5.7-0", "v3.5.7"), ("3.5.6-0", "v3.5.6"), ("3.5.9", "v3.5.9"), ("3.4.13-0", "v3.4.13")]
)
def test_etcd_image_tags_map_to_module_versions(tag: str, version: str) -> None:
    assert addons.etcd_module_version(tag) == version


def test_coredns_tags_map_to_module_versions() -> None:
    assert addons.coredns_module_version("v1.10.1") == "v1.10.1"
    assert addons.coredns_module_version("1.8.0") == "v1.8.0"
    with pytest.raises(AddonBuildError, match="unexpected CoreDNS image tag"):
        addons.coredns_module_version("latest")


ETCD_3_5_REPLACES = (
    "module go.etcd.io/etcd/server/v3\n\nreplace (\n"
    + "".join(
        f"\tgo.etcd.io/etcd/{m} => ../{m.removesuffix('/v3')}\n"
        for m in ("api/v3", "client/v2", "client/v3", "raft/v3")
    )
    + ")\n"
)


def test_an_etcd_build_failure_carries_the_logs_last_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    commands: list[list[str]] = []

    def run(command: list[str], env: Any, cwd: Path, log: Path) -> int:
        commands.append(command)
        with log.open("a") as out:
            out.write("+ " + " ".join(command) + "\ncompile: something broke\n")
        return 1 if "build" in command else 0

    monkeypatch.setattr(addons, "logged_step", run)
    (tmp_path / "go.mod").write_text(ETCD_3_5_REPLACES)
    monkeypatch.setattr(addons, "download_module", lambda *a: {"Dir": str(tmp_path), "Sum": "h1:x"})
    with pytest.raises(AddonBuildError, match=r"building etcd v3\.5\.7 failed[\s\S]*something broke"):
        addons.build_etcd("3.5.7-0", tmp_path)
    requires = [c[-1] for c in commands if c[:3] == ["go", "mod", "edit"]]
    assert "-require=go.etcd.io/etcd/client/v2@v2.305.7" in requires
    assert "-require=go.etcd.io/etcd/raft/v3@v3.5.7" in requires
    assert addons.existing_addon("etcd", "v3.5.7", tmp_path) is None  # a failed build is not reused


def test_a_finished_addon_build_records_what_it_built_from_what_and_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run(command: list[str], env: Any, cwd: Path, log: Path) -> int:
        if "build" in command:  # the stand-in go build writes the binary
            (cwd / command[command.index("-o") + 1]).write_bytes(b"\x7fELF")
        return 0

    monkeypatch.setattr(addons, "logged_step", run)
    (tmp_path / "go.mod").write_text(ETCD_3_5_REPLACES)
    origin = {"Dir": str(tmp_path), "Sum": "h1:x", "Origin": {"Hash": "0123456789abcdef"}}
    monkeypatch.setattr(addons, "download_module", lambda *a: origin)
    built = addons.build_etcd("3.5.7-0", tmp_path)
    record = json.loads((built.directory / "build.json").read_text())
    assert record == built.record
    assert (record["name"], record["image_tag"], record["version"]) == ("etcd", "3.5.7-0", "v3.5.7")
    assert record["commit"] == "0123456789abcdef" and "GitSHA=0123456789" in record["ldflags"]
    assert record["siblings"]["go.etcd.io/etcd/client/v2"] == "v2.305.7" and record["size_bytes"] == 4
    assert addons.existing_addon("etcd", "v3.5.7", tmp_path) is not None  # reused from now on


ETCD_3_4_13 = "v0.5.0-alpha.5.0.20200910180754-dd1b699fc489"


def _etcd34_tree(tmp_path: Path, says: str) -> Path:
    tree = tmp_path / "go.etcd.io-etcd"
    (tree / "version").mkdir(parents=True)
    (tree / "version" / "version.go").write_text(
        f'package version\n\nvar (\n\tMinClusterVersion = "3.0.0"\n\tVersion           = "{says}"\n)\n'
    )
    return tree


def test_etcd_3_4_is_built_from_the_one_module_at_the_served_commit_of_its_tag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands: list[list[str]] = []
    downloaded: list[tuple[str, str]] = []

    def run(command: list[str], env: Any, cwd: Path, log: Path) -> int:
        commands.append(command)
        if "build" in command:
            (cwd / command[command.index("-o") + 1]).write_bytes(b"\x7fELF")
        return 0

    def download(module: str, version: str, env: Any, cwd: Path) -> dict[str, Any]:
        downloaded.append((module, version))
        return {"Dir": str(_etcd34_tree(tmp_path, "3.4.13")), "Version": version, "Sum": "h1:z"}

    monkeypatch.setattr(addons, "logged_step", run)
    monkeypatch.setattr(addons, "download_module", download)
    built = addons.build_etcd("3.4.13-0", tmp_path / "tools")
    assert downloaded == [("go.etcd.io/etcd", ETCD_3_4_13)]
    assert commands[0] == ["go", "mod", "edit", f"-require=go.etcd.io/etcd@{ETCD_3_4_13}"]
    assert commands[1][-1] == "go.etcd.io/etcd" and "build" in commands[1]  # the module's root package: etcd
    assert len(commands) == 2  # no server/v3 siblings
    record = built.record
    assert (record["module"], record["version"], record["module_version"]) == (
        "go.etcd.io/etcd",
        "v3.4.13",
        ETCD_3_4_13,
    )
    assert record["commit"] == "dd1b699fc489" and "go.etcd.io/etcd/version.GitSHA=dd1b699fc4" in record["ldflags"]
    assert built.directory.name == "etcd-v3.4.13" and built.binary.is_file()


def test_an_etcd_3_4_tree_of_another_version_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(addons, "logged_step", lambda *a: pytest.fail("go must not build"))
    tree = _etcd34_tree(tmp_path, "3.4.14")
    monkeypatch.setattr(addons, "download_module", lambda *a: {"Dir": str(tree), "Version": ETCD_3_4_13})
    with pytest.raises(AddonBuildError, match=r"is not etcd v3\.4\.13: its version/version\.go says 3\.4\.14"):
        addons.build_etcd("3.4.13-0", tmp_path / "tools")


def test_an_etcd_3_4_release_without_a_known_commit_is_refused_before_any_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(addons, "download_module", lambda *a: pytest.fail("nothing to download"))
    with pytest.raises(AddonBuildError, match=r"etcd v3\.4\.9: .* only for v3\.4\.13 .*ETCD34_COMMITS"):
        addons.build_etcd("3.4.9-1", tmp_path / "tools")


def test_a_built_addon_is_reused_without_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = addons.addon_directory("coredns", "v1.10.1", tmp_path)
    directory.mkdir(parents=True)
    (directory / "coredns").write_bytes(b"\x7fELF")
    (directory / "build.json").write_text(json.dumps({"version": "v1.10.1", "duration_s": 1.0}))
    monkeypatch.setattr(addons, "logged_step", lambda *a: pytest.fail("go must not run"))
    built = addons.build_coredns("v1.10.1", tmp_path)
    assert built.binary == directory / "coredns" and built.record["duration_s"] == 1.0


def test_corednss_go_mod_loses_only_the_refused_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = tmp_path / "module"
    module.mkdir()
    (module / "go.mod").write_text(
        "module github.com/coredns/coredns\n\nrequire (\n\tgithub.com/miekg/dns v1.1.50\n"
        "\tinet.af/netaddr v0.0.0-20220617031823-097006376321 // indirect\n)\n"
    )
    module.chmod(0o555)
    seen: dict[str, str] = {}

    def run(command: list[str], env: Any, cwd: Path, log: Path) -> int:
        seen["go.mod"] = (cwd / "go.mod").read_text()
        Path(command[command.index("-o") + 1]).write_bytes(b"\x7fELF")
        return 0

    monkeypatch.setattr(addons, "logged_step", run)
    monkeypatch.setattr(addons, "download_module", lambda *a: {"Dir": str(module), "Sum": "h1:y"})
    built = addons.build_coredns("v1.10.1", tmp_path / "tools")
    assert "inet.af/netaddr" not in seen["go.mod"] and "github.com/miekg/dns v1.1.50" in seen["go.mod"]
    assert built.record["go_mod_lines_removed"] == ["inet.af/netaddr v0.0.0-20220617031823-097006376321 // indirect"]
    assert not (built.directory / "src").exists()  # no third-party source kept
    module.chmod(0o755)


def test_the_image_list_is_what_the_builds_kubeadm_prints(tmp_path: Path) -> None:
    build = _build(tmp_path)
    kubeadm = build.binary("kubeadm")
    kubeadm.write_text(
        '#!/bin/sh\n[ "$*" = "config images list --kubernetes-version v1.27.3" ] || exit 3\n'
        'printf "registry.k8s.io/kube-apiserver:v1.27.3\\nregistry.k8s.io/pause:3.9\\n"\n'
    )
    kubeadm.chmod(0o755)
    assert node.kubeadm_images(build) == ["registry.k8s.io/kube-apiserver:v1.27.3", "registry.k8s.io/pause:3.9"]
    kubeadm.write_text("#!/bin/sh\necho 'unknown flag' >&2\nexit 1\n")
    with pytest.raises(node.NodeImageError, match="unknown flag"):
        node.kubeadm_images(build)


def test_an_addon_whose_go_mod_names_a_newer_go_builds_with_the_newest_patch_of_that_minor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen: CoreDNS v1.14.6 (Kubernetes 1.37's) says `go 1.25.0`, which go1.20.14 cannot parse."""
    asked: list[tuple[str, str]] = []

    def served(upstream: str, env: object, cwd: object, policy: str = "exact") -> tuple[str, str]:
        asked.append((upstream, policy))
        return "go1.25.9", "newest go1.25 patch"

    monkeypatch.setattr(addons, "choose_toolchain", served)
    go_mod = tmp_path / "go.mod"
    go_mod.write_text("module github.com/coredns/coredns\n\ngo 1.25.0\n\nrequire x v1\n")
    assert addons._go_line({"GoMod": str(go_mod)}) == "1.25.0"
    assert addons.addon_toolchain("1.25.0", {}, tmp_path) == "go1.25.9" and asked == [("1.25.0", "minor")]
    assert addons.addon_toolchain("1.20", {}, tmp_path) == addons.TOOLCHAIN == "go1.20.14"
    assert addons.addon_toolchain("1.17", {}, tmp_path) == "go1.20.14"
    assert addons._go_line({}) == "" and addons.addon_toolchain("", {}, tmp_path) == "go1.20.14"
    assert len(asked) == 1  # the suite's Go serves every go line it can parse: nothing more is asked


def test_etcds_siblings_are_read_from_its_server_go_mod_as_35_and_36_on_lay_them_out() -> None:
    """Seen: Kubernetes 1.37's etcd v3.7.0 has no raft/v3 or client/v2 sibling (403 when asked for at v3.7.0)."""
    v35 = "replace (\n\tgo.etcd.io/etcd/api/v3 => ../api\n\tgo.etcd.io/etcd/client/v2 => ../client/v2\n"
    v35 += "\tgo.etcd.io/etcd/raft/v3 => ../raft\n)\n\nreplace github.com/x/y => github.com/x/z v1\n"
    assert addons.etcd_siblings(v35, "v3.5.16") == [
        ("go.etcd.io/etcd/api/v3", "v3.5.16"),
        ("go.etcd.io/etcd/client/v2", "v2.305.16"),
        ("go.etcd.io/etcd/raft/v3", "v3.5.16"),
    ]
    v37 = "require go.etcd.io/raft/v3 v3.6.0\n\nreplace go.etcd.io/etcd/api/v3 => ../api\n"
    v37 += "replace go.etcd.io/etcd/pkg/v3 => ../pkg\n"
    assert addons.etcd_siblings(v37, "v3.7.0") == [
        ("go.etcd.io/etcd/api/v3", "v3.7.0"),
        ("go.etcd.io/etcd/pkg/v3", "v3.7.0"),
    ]


def test_a_recording_on_a_node_image_built_here_names_the_toolchain_inside_it(tmp_path: Path) -> None:
    """A kind recording's origin names its node image; for one built here from modules it also says how its
    Kubernetes was built (the minor toolchain, upstream's Go, substitutions), as a local recording does."""
    from harness.clusters.kind.provider import node_image_built_here
    from harness.nodeimage import tags

    build = {"version": "v1.23.8", "toolchain": "go1.17.13", "toolchain_policy": "minor", "upstream_go": "go1.17.11"}
    record = {"how": "from Go modules", "kind_release": "v0.20.0", "kubernetes_build": {**build, "work": {"x": 1}}}
    tags.node_image_record("plp-node-shutdown:v1.23.8-90f2108192a1", tmp_path).write_text(json.dumps(record))
    said = node_image_built_here("plp-node-shutdown:v1.23.8-90f2108192a1", tmp_path)
    assert said == {"how": "from Go modules", "kind_release": "v0.20.0", "kubernetes_build": build}
    assert node_image_built_here("kindest/node:v1.27.3@sha256:3966ac", tmp_path) is None  # pinned: none here
