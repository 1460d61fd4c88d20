"""kind's components from Go modules (harness/nodeimage/kind_parts.py) and their place in a node image, offline:
the Go module proxy is stood in by a fake `go`, no build runs."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

from harness.base.errors import PrerequisiteMissing
from harness.base.process import Completed
from harness.base.versions import KubeVersion, Release
from harness.clusters.kind import node_images
from harness.clusters.kind.images import known_images
from harness.clusters.kind.provider import node_runtime
from harness.clusters.kinds import Runnable
from harness.gobuild.kubernetes import Build
from harness.nodeimage import containerd_config, kind_parts, kind_plan, node, tags
from harness.nodeimage.images import NodeImageError
from harness.nodeimage.kind_parts import Part, PartsError

if TYPE_CHECKING:
    from tests.conftest import NodeImageBuild


def test_every_kind_release_of_the_image_table_has_its_components_read() -> None:
    releases = kind_parts.kind_releases()
    table = {image.kind_release for image in known_images() if image.kind_release}
    assert table <= set(releases), f"not read: {sorted(table - set(releases))}"
    for release in releases.values():
        assert release.definition.startswith("images/base at ") and release.kindnetd.startswith("kindest/kindnetd:")
        assert release.containerd and release.crictl and release.cni_plugins and release.pause
    assert kind_parts.kind_release("v0.25.0").containerd == "v1.7.18"
    # the base image of v0.30.0 was built before the tag bumped containerd to v2.1.4: the base commit wins
    assert kind_parts.kind_release("v0.30.0").containerd == "v2.1.3"


def test_a_kind_release_whose_definition_was_not_read_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(PartsError, match=r"kind v0\.99\.0: its base image definition was not read .*v0\.25\.0"):
        kind_parts.kind_release("v0.99.0")


def test_containerd_2_is_its_v2_module() -> None:
    assert kind_parts.module_for("containerd", "v2.1.4") == "github.com/containerd/containerd/v2"
    assert kind_parts.module_for("containerd", "v1.7.18") == "github.com/containerd/containerd"
    assert kind_parts.module_for("runc", "v1.1.13") == "github.com/opencontainers/runc"


@pytest.mark.parametrize(
    ("wanted", "served", "nearest"),
    [
        ("v1.29.0", ["v1.34.0", "v1.37.0"], "v1.34.0"),
        ("v1.7.15", ["v1.6.36", "v1.7.13", "v1.7.18", "v2.1.4"], "v1.7.13"),
        ("v1.7.16", ["v1.7.13", "v1.7.19"], "v1.7.19"),
        ("v2.0.2", ["v1.7.35", "v2.1.4", "v2.4.2"], "v2.1.4"),
        ("v2.0.2", ["v1.7.35"], None),
        ("v1.5.0", ["v1.5.0-rc.2"], None),
    ],
)
def test_the_nearest_served_release_stays_in_the_major_and_prefers_the_minor(
    wanted: str, served: list[str], nearest: str | None
) -> None:
    assert kind_parts.nearest(wanted, served) == nearest


class FakeProxy:
    """`go mod download -json` and `go list -m -versions` answered from a table of served versions."""

    def __init__(self, tmp_path: Path, served: Mapping[str, list[str]], listed: Mapping[str, list[str]]) -> None:
        self.tmp_path, self.served, self.listed = tmp_path, served, listed
        self.calls: list[list[str]] = []

    def __call__(self, args: list[str], env: Mapping[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
        self.calls.append(args)
        if args[:2] == ["list", "-m"]:
            module = args[-1]
            return subprocess.CompletedProcess(args, 0, " ".join([module, *self.listed.get(module, [])]), "")
        module, version = args[-1].split("@")
        if version not in self.served.get(module, []):
            return subprocess.CompletedProcess(args, 1, json.dumps({"Error": "403 Forbidden"}), "")
        directory = self.tmp_path / "mod" / f"{module}@{version}"
        config = directory / kind_plan.KIND_CONFIG_FILE
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text('version = 2\nsandbox_image = "registry.k8s.io/pause:3.10"\n')
        return subprocess.CompletedProcess(args, 0, json.dumps({"Version": version, "Dir": str(directory)}), "")


SERVED = {
    "github.com/containerd/containerd": ["v1.7.18", "v1.6.36"],
    "github.com/containerd/containerd/v2": ["v2.1.4"],
    "github.com/opencontainers/runc": ["v1.1.13"],
    "sigs.k8s.io/cri-tools": ["v1.34.0"],
    "github.com/containernetworking/plugins": ["v1.5.1"],
    "sigs.k8s.io/kind": ["v0.25.0"],
}
LISTED = {"sigs.k8s.io/cri-tools": ["v1.34.0", "v1.37.0"], "github.com/containerd/containerd": ["v1.6.36"]}


def test_a_plan_builds_kinds_pins_and_names_a_substitution_where_the_proxy_refuses_one(tmp_path: Path) -> None:
    proxy = FakeProxy(tmp_path, {**SERVED, "sigs.k8s.io/cri-tools": ["v1.34.0"]}, LISTED)
    planned = kind_plan.plan("v0.25.0", KubeVersion.parse("1.27.16"), tools=tmp_path, go=proxy)
    versions = {name: resolved.version for name, resolved in planned.resolved.items()}
    assert versions == {"containerd": "v1.7.18", "runc": "v1.1.13", "crictl": "v1.34.0", "cni_plugins": "v1.5.1"}
    assert planned.resolved["crictl"].substitution.startswith("sigs.k8s.io/cri-tools@v1.30.0 is not served")
    assert planned.resolved["containerd"].substitution == ""
    assert planned.suffix == "-kind.v0.25.0"
    assert "pause:3.10" in planned.kind_config


def test_another_containerd_is_built_exactly_or_refused_before_any_build(tmp_path: Path) -> None:
    proxy = FakeProxy(tmp_path, SERVED, LISTED)
    planned = kind_plan.plan("v0.25.0", KubeVersion.parse("1.27.16"), "2.1.4", tools=tmp_path, go=proxy)
    assert planned.resolved["containerd"].module == "github.com/containerd/containerd/v2"
    assert planned.suffix == "-kind.v0.25.0-containerd.v2.1.4"
    with pytest.raises(PartsError, match=r"^containerd v1\.7\.99: the Go module proxy does not serve .* v1\.6\.36"):
        kind_plan.plan("v0.25.0", KubeVersion.parse("1.27.16"), "1.7.99", tools=tmp_path, go=proxy)
    with pytest.raises(PartsError, match=r"containerd v1\.5\.18 is too old for Kubernetes 1\.27\.16: .*k/k#110618"):
        kind_plan.plan("v0.25.0", KubeVersion.parse("1.27.16"), "1.5.18", tools=tmp_path, go=proxy)
    with pytest.raises(PartsError, match="is not a version"):
        kind_plan.plan("v0.25.0", KubeVersion.parse("1.27.16"), "latest", tools=tmp_path, go=proxy)
    assert not (tmp_path / kind_parts.PARTS).exists() or not any((tmp_path / kind_parts.PARTS).glob("*/build.json")), (
        "nothing built"
    )


def test_a_release_whose_containerd_config_cannot_be_read_is_refused(tmp_path: Path) -> None:
    proxy = FakeProxy(tmp_path, {**SERVED, "sigs.k8s.io/kind": []}, LISTED)
    with pytest.raises(PartsError, match=r"kind v0\.25\.0: its images/base/files/etc/containerd/config.toml cannot"):
        kind_plan.plan("v0.25.0", KubeVersion.parse("1.27.16"), tools=tmp_path, go=proxy)


KIND_CONFIG = """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = true
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  restrict_oom_score_adj = false
"""


def test_kinds_containerd_config_is_kept_but_for_oom_scores_and_the_old_cgroup_driver() -> None:
    new = containerd_config.kind_node_containerd_config(KIND_CONFIG, KubeVersion.parse("1.27.16"))
    old = containerd_config.kind_node_containerd_config(KIND_CONFIG, KubeVersion.parse("1.23.17"))
    assert "restrict_oom_score_adj = true" in new and "restrict_oom_score_adj = false" not in new
    assert "SystemdCgroup = true" in new and "SystemdCgroup = false" in old
    assert containerd_config.kind_sandbox_image(new) == "registry.k8s.io/pause:3.10"
    with pytest.raises(NodeImageError, match="restrict_oom_score_adj"):
        containerd_config.kind_node_containerd_config("version = 2\n", KubeVersion.parse("1.27.16"))


def _part(tmp_path: Path, component: str, version: str, binaries: list[str], **record: str) -> Part:
    directory = tmp_path / "parts" / f"{component}-{version}"
    (directory / "bin").mkdir(parents=True)
    for name in binaries:
        (directory / "bin" / name).write_text(name)
    wanted = record.pop("wanted", version)
    full = {"component": component, "module": kind_parts.module_for(component, version), "version": version,
            "wanted": wanted, "toolchain": "go version go1.22.9 linux/amd64", **record}  # fmt: skip
    return Part(directory, full)


def test_the_node_gets_kinds_components_where_kinds_base_image_puts_them(tmp_path: Path) -> None:
    rootfs = tmp_path / "rootfs"
    (rootfs / "usr/bin").mkdir(parents=True)
    (tmp_path / "build/bin").mkdir(parents=True)
    for name in ("kubeadm", "kubelet", "kubectl"):
        (tmp_path / "build/bin" / name).write_text("")
    parts = {
        "containerd": _part(tmp_path, "containerd", "v1.7.18", ["containerd", "ctr", "containerd-shim-runc-v2"]),
        "runc": _part(tmp_path, "runc", "v1.1.13", ["runc"]),
        "crictl": _part(tmp_path, "crictl", "v1.30.0", ["crictl"]),
        "cni_plugins": _part(tmp_path, "cni_plugins", "v1.5.1", ["ptp", "host-local", "loopback", "portmap"]),
    }
    spec = json.dumps({"process": {"args": [], "rlimits": []}})
    build = Build("v1.27.16", tmp_path / "build", {})
    node.install_node(rootfs, build, None, [], KubeVersion.parse("1.27.16"), lambda argv: spec, parts, KIND_CONFIG)
    assert (rootfs / "usr/local/bin/containerd").read_text() == "containerd"
    assert (rootfs / "usr/local/sbin/runc").read_text() == "runc"
    assert (rootfs / "usr/local/bin/crictl").read_text() == "crictl"
    assert sorted(p.name for p in (rootfs / "opt/cni/bin").iterdir()) == ["host-local", "loopback", "portmap", "ptp"]
    assert "ExecStart=/usr/local/bin/containerd\n" in (rootfs / "etc/systemd/system/containerd.service").read_text()
    assert "restrict_oom_score_adj = true" in (rootfs / "etc/containerd/config.toml").read_text()


def _kind_v0_25_parts(tmp_path: Path, crictl_recorded_pin: str) -> tuple[kind_plan.Plan, dict[str, Part]]:
    """kind v0.25.0's plan for v1.27.16 and its built parts, crictl v1.34.0 substituted; its record keeping the pin
    `crictl_recorded_pin` (the plan's own, or another kind release's when the build is reused)."""
    proxy = FakeProxy(tmp_path, SERVED, LISTED)
    planned = kind_plan.plan("v0.25.0", KubeVersion.parse("1.27.16"), tools=tmp_path, go=proxy)
    parts = {
        "containerd": _part(tmp_path, "containerd", "v1.7.18", []),
        "runc": _part(tmp_path, "runc", "v1.1.13", []),
        "crictl": _part(tmp_path, "crictl", "v1.34.0", [], wanted=crictl_recorded_pin, substitution="not served"),
        "cni_plugins": _part(tmp_path, "cni_plugins", "v1.5.1", []),
    }
    return planned, parts


def test_the_runtime_origin_names_each_version_and_every_substitute(tmp_path: Path) -> None:
    planned, parts = _kind_v0_25_parts(tmp_path, crictl_recorded_pin="v1.30.0")
    said = kind_plan.runtime_origin(planned, parts)
    assert said["containerd"] == "v1.7.18 (built here from github.com/containerd/containerd with go1.22.9)"
    assert said["crictl"].endswith("; kind v0.25.0 pins v1.30.0, not served")
    assert "crictl v1.34.0 for v1.30.0" in said["node_components"]
    assert "ptp network for kindest/kindnetd:v20241108-5c6d2daf" in said["node_components"]
    assert said["cni"].startswith("the suite's ptp DaemonSet with CNI plugins v1.5.1")


def test_a_recordings_runtime_comes_from_the_image_record_or_the_kind_release_that_published_it(
    tmp_path: Path,
) -> None:
    record = {"containerd": "v1.7.18 (built here)", "runc": "v1.1.13", "cni": "ptp", "crictl": "v1.30.0",
              "node_components": "kind v0.25.0's components", "kind_release": "v0.25.0"}  # fmt: skip
    (tmp_path / "plp-node-v1.27.16-kind.v0.25.0.json").write_text(json.dumps(record))
    built = node_runtime("plp-node-shutdown:v1.27.16-abc", "plp-node:v1.27.16-kind.v0.25.0", "v0.25.0", tmp_path)
    assert built["containerd"] == "v1.7.18 (built here)" and "kind_release" not in built
    published = node_runtime("kindest/node:v1.27.16@sha256:" + "0" * 64, "kindest/node:v1.27.16", "v0.25.0", tmp_path)
    assert published["containerd"].startswith("v1.7.18 (as kind v0.25.0's base image definition names it)")
    assert published["node_components"] == "kind v0.25.0's published node image (kindest/base:v20241108-5c6d2daf)"
    assert node_runtime("kindest/node:v1.27.16", "kindest/node:v1.27.16", "v0.99.0", tmp_path) == {
        "node_components": "kind v0.99.0's published image (its components were not read)"
    }


def test_the_data_file_parses_as_committed() -> None:
    loaded = yaml.safe_load(kind_parts.DATA.read_text())
    assert [entry["kind"] for entry in loaded["releases"]][:2] == ["v0.17.0", "v0.18.0"]


# ----- make probe VERSION=1.27 when the pinned kindest/node cannot be pulled

PINNED = "kindest/node:v1.27.16@sha256:2d21a61643eafc439905e18705b8186f3296384750a835ad7a005dceb9546d20"


def _runnable() -> Runnable:
    return Runnable("kind", Release.parse("v1.27.16"), {"image": PINNED, "kind_release": "v0.25.0", "kind_bin": "kind"})


NO_REGISTRY = "Error response from daemon: Get https://registry-1.docker.io/v2/: dial tcp: no such host"


def _docker(answers: dict[str, int], calls: list[list[str]]) -> Callable[[Sequence[str], float], Completed]:
    def run(argv: Sequence[str], timeout: float) -> Completed:
        calls.append(list(argv))
        code = answers[argv[1] if argv[1] != "image" else "inspect"]
        said = (
            ""
            if code == 0
            else "Error response from daemon: Get https://registry-1.docker.io/v2/: dial tcp: no such host"
        )
        return Completed(tuple(argv), code, "", said)

    return run


def test_a_pinned_image_that_is_here_or_pulls_is_run_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(node_images, "run_command", _docker({"inspect": 1, "pull": 0}, calls))
    assert node_images.pinned_image_or_equal(_runnable(), print) == ""
    assert [c[:2] for c in calls] == [["docker", "image"], ["docker", "pull"]]


def test_an_image_that_cannot_be_pulled_is_built_from_modules_said_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(node_images, "run_command", _docker({"inspect": 1, "pull": 1}, calls))
    monkeypatch.setattr(tags, "node_image_record", lambda tag: tmp_path / "never-built.json")
    planned = kind_plan.plan(
        "v0.25.0", KubeVersion.parse("1.27.16"), tools=tmp_path, go=FakeProxy(tmp_path, SERVED, LISTED)
    )
    monkeypatch.setattr(node_images, "plan_parts", lambda version, kind: planned)
    monkeypatch.setattr(node_images, "equal_build_minutes", lambda version, plan: (17, "this machine's builds"))
    built: list[tuple[str, str, str]] = []

    def make(release: Release, source: str, say: Callable[[str], None], parts: str, kind: str) -> str:
        built.append((str(release), source, kind))
        return "plp-node:v1.27.16-kind.v0.25.0"

    monkeypatch.setattr(node_images, "make_node_image", make)
    said: list[str] = []
    assert node_images.pinned_image_or_equal(_runnable(), said.append) == "plp-node:v1.27.16-kind.v0.25.0"
    assert built == [("1.27.16", "modules", "v0.25.0")]
    assert said == [
        "kindest/node:v1.27.16 cannot be pulled (Error response from daemon: Get https://registry-1.docker.io/v2/:"
        " dial tcp: no such host): building its equal with kind v0.25.0's components from Go modules (about 17 min,"
        " from this machine's builds), then running it"
    ]


def test_an_equal_built_earlier_is_said_to_be_run_not_built(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def docker(argv: Sequence[str], timeout: float) -> Completed:
        here = argv[1] == "image" and argv[3] == "plp-node:v1.27.16-kind.v0.25.0"
        return Completed(tuple(argv), 0 if here else 1, "", "" if here else NO_REGISTRY)

    record = tmp_path / "plp-node-v1.27.16-kind.v0.25.0.json"
    record.write_text("{}")
    monkeypatch.setattr(node_images, "run_command", docker)
    monkeypatch.setattr(tags, "node_image_record", lambda tag: tmp_path / f"{tag.replace(':', '-')}.json")
    planned = kind_plan.plan(
        "v0.25.0", KubeVersion.parse("1.27.16"), tools=tmp_path, go=FakeProxy(tmp_path, SERVED, LISTED)
    )
    monkeypatch.setattr(node_images, "plan_parts", lambda version, kind: planned)
    monkeypatch.setattr(node_images, "make_node_image", lambda *args, **kwargs: "plp-node:v1.27.16-kind.v0.25.0")
    said: list[str] = []
    assert node_images.pinned_image_or_equal(_runnable(), said.append) == "plp-node:v1.27.16-kind.v0.25.0"
    assert said == [
        f"kindest/node:v1.27.16 cannot be pulled ({NO_REGISTRY}): running its equal with kind v0.25.0's components,"
        " plp-node:v1.27.16-kind.v0.25.0, built here earlier"
    ]


def test_when_neither_pull_nor_build_can_work_one_line_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_images, "run_command", _docker({"inspect": 1, "pull": 1}, []))

    def refused(version: str, kind: str) -> kind_plan.Plan:
        raise PrerequisiteMissing("building a node image from Go modules needs: root (debootstrap and chroot)")

    monkeypatch.setattr(node_images, "plan_parts", refused)
    with pytest.raises(PrerequisiteMissing) as caught:
        node_images.pinned_image_or_equal(_runnable(), print)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("kindest/node:v1.27.16 cannot be pulled (") and message.endswith(
        "and its equal cannot be built here: building a node image from Go modules needs: root (debootstrap and chroot)"
    )


def test_an_image_of_ones_own_is_never_pulled(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(node_images, "run_command", _docker({"inspect": 1, "pull": 1}, calls))
    own = Runnable(
        "kind", Release.parse("v1.27.16"), {"image": "plp-node:v1.27.16-kind.v0.25.0", "kind_release": "v0.25.0"}
    )
    assert node_images.pinned_image_or_equal(own, print) == "" and calls == []


def test_an_image_with_an_older_kinds_components_is_run_by_the_kind_its_kubernetes_needs() -> None:
    assert node.runner_kind("v0.25.0", KubeVersion.parse("1.27.16")) == "v0.25.0"
    assert node.runner_kind("v0.25.0", KubeVersion.parse("1.37.2")) == "v0.33.0"  # kubeadm 1.37 refuses v1beta3
    assert node.runner_kind("v0.20.0", KubeVersion.parse("1.22.4")) == "v0.20.0"
    assert node.runner_kind("", KubeVersion.parse("1.37.2")) == "v0.33.0"


def test_versions_are_stamped_into_the_module_path_the_go_mod_declares() -> None:
    declared = kind_parts.declared_module(
        "module github.com/kubernetes-sigs/cri-tools\n\ngo 1.22\n", "sigs.k8s.io/cri-tools"
    )
    assert declared == "github.com/kubernetes-sigs/cri-tools"
    assert kind_parts.declared_module("go 1.22\n", "sigs.k8s.io/cri-tools") == "sigs.k8s.io/cri-tools"
    [(_, crictl)] = kind_parts._steps("crictl", "v1.30.0", declared, "")
    assert "-X github.com/kubernetes-sigs/cri-tools/pkg/version.Version=v1.30.0" in " ".join(crictl)


def _recorded(tools: Path, relative: str, seconds: float) -> None:
    (tools / relative).mkdir(parents=True)
    (tools / relative / "build.json").write_text(json.dumps({"duration_s": seconds}))


def test_the_build_estimate_rests_on_this_machines_own_builds_and_says_when_it_guesses(tmp_path: Path) -> None:
    planned = kind_plan.plan(
        "v0.25.0", KubeVersion.parse("1.27.16"), tools=tmp_path, go=FakeProxy(tmp_path, SERVED, LISTED)
    )
    guessed = node_images.equal_build_minutes(Release.parse("1.27.16"), planned, tools=tmp_path)
    first = node_images.FIRST_GUESS_S
    assert guessed == (round(sum(first.values()) / 60), "a first guess for kubernetes, addons, assembly, "
                       "containerd, runc, crictl, cni_plugins")  # fmt: skip
    _recorded(tmp_path, "kubernetes/v1.30.0", 100.0)
    _recorded(tmp_path, "kubernetes/v1.31.0", 300.0)
    _recorded(tmp_path, "addons/etcd-v3.5.12", 60.0)
    for component in ("containerd", "runc", "crictl", "cni_plugins"):
        _recorded(tmp_path, f"kind-parts/{component}-v0.0.1", 30.0)
    minutes, basis = node_images.equal_build_minutes(Release.parse("1.27.16"), planned, tools=tmp_path)
    assert (minutes, basis) == (round((200 + 60 + 4 * 30 + first["assembly"]) / 60), "a first guess for assembly")
    (tmp_path / "node-images").mkdir()
    (tmp_path / "node-images" / "plp-node-v1.30.0.json").write_text(json.dumps({"built_s": 50.0}))
    assert node_images.equal_build_minutes(Release.parse("1.27.16"), planned, tools=tmp_path) == (
        round((200 + 60 + 4 * 30 + 100) / 60),
        "this machine's earlier builds",
    )


def test_a_pinned_release_the_proxy_refuses_names_the_neighbour_that_builds_before_any_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """v1.30.13, kind v0.29.0's image for make probe VERSION=1.30, is refused by the module proxy (the release
    ledger): one line says so and names the newest other pinned 1.30 patch whose module is served, and nothing is
    planned or built."""
    monkeypatch.setattr(node_images, "run_command", _docker({"inspect": 1, "pull": 1}, []))
    monkeypatch.setattr(node_images, "plan_parts", lambda version, kind: pytest.fail("planned a refused release"))
    pinned = "kindest/node:v1.30.13@sha256:397209b3d947d154f6641f2d0ce8d473732bd91c87d9575ade99049aa33cd648"
    runnable = Runnable("kind", Release.parse("v1.30.13"), {"image": pinned, "kind_release": "v0.29.0"})
    with pytest.raises(PrerequisiteMissing) as caught:
        node_images.pinned_image_or_equal(runnable, pytest.fail)
    message = str(caught.value)
    assert "\n" not in message
    assert "the Go module proxy refuses k8s.io/kubernetes@v1.30.13 (403 Forbidden" in message
    assert message.endswith(
        "; make probe VERSION=1.30.10 runs kindest/node:v1.30.10 (kind v0.27.0), whose equal builds here"
    ), message


def _go_version_answers(served: set[str]) -> Callable[[Mapping[str, str], Path], subprocess.CompletedProcess[str]]:
    def go_version(env: Mapping[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
        wanted = env["GOTOOLCHAIN"].removesuffix("+auto").removeprefix("go")
        if wanted in served:
            return subprocess.CompletedProcess(["go", "version"], 0, f"go version go{wanted} linux/amd64\n", "")
        refusal = (
            f"go: download go{wanted}: golang.org/toolchain@v0.0.1-go{wanted}.linux-amd64: 403 Forbidden\n"
            "\tserver response: This module version is not available."
        )
        return subprocess.CompletedProcess(["go", "version"], 1, "", refusal)

    return go_version


def test_kinds_go_is_used_when_served(tmp_path: Path) -> None:
    found = kind_parts.build_toolchain("1.22.9", {}, tmp_path, _go_version_answers({"1.22.9"}), lambda env, cwd: [])
    assert found == ("go1.22.9+auto", "go version go1.22.9 linux/amd64", "")


def test_an_unserved_go_of_kinds_falls_back_to_the_newest_served_patch_of_its_minor_said(tmp_path: Path) -> None:
    """kind v0.22.0's .go-version names go1.20.13, which the module proxy refuses (seen live building containerd
    v1.7.13 for v1.24.17); it serves go1.20.14."""
    served = ["1.19.13", "1.20.4", "1.20.14", "1.21.13"]
    (tmp_path / "go.mod").write_text("module github.com/containerd/containerd\n\ngo 1.19\n")

    def listed(env: Mapping[str, str], cwd: Path) -> list[str]:
        # asked outside the component's module, whose graph `go list -m` would read (and fail on) there
        assert not any((d / "go.mod").exists() for d in [cwd, *cwd.parents])
        return served

    toolchain, line, note = kind_parts.build_toolchain(
        "1.20.13", {}, tmp_path, _go_version_answers(set(served)), listed
    )
    assert (toolchain, line) == ("go1.20.14+auto", "go version go1.20.14 linux/amd64")
    assert note.startswith("go1.20.13 (kind's) is not served (") and note.endswith(
        "built with go1.20.14, the newest go1.20"
    )
    assert "403 Forbidden" in note and "\n" not in note


def test_a_go_of_which_no_patch_is_served_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(kind_parts.PartsError) as caught:
        kind_parts.build_toolchain("1.20.13", {}, tmp_path, _go_version_answers(set()), lambda env, cwd: ["1.21.13"])
    assert str(caught.value).startswith("go1.20.13+auto could not be had: go: download go1.20.13")
    assert "\n" not in str(caught.value)


def test_a_component_that_cannot_be_built_ends_make_node_image_in_one_line_not_a_traceback(
    node_image_build_raising: NodeImageBuild, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seen live: make node-image VERSION=1.24.17 ended in a traceback when containerd's Go could not be had."""
    from harness.doors import cli

    node_image_build_raising(
        "v0.22.0", PartsError("go1.20.13+auto could not be had: go: download go1.20.13: 403 Forbidden")
    )
    assert cli.main(["node-image", "--version", "1.24.17", "--source", "modules"]) != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines() == ["error: go1.20.13+auto could not be had: go: download go1.20.13: 403 Forbidden"]


def test_a_cached_part_built_for_another_kind_release_is_said_with_this_releases_pin(tmp_path: Path) -> None:
    """Seen live: crictl v1.34.0, first built for kind v0.31.0 (which pins v1.33.0), was reused for kind v0.27.0
    and v0.22.0, and their origins said "kind v0.22.0 pins v1.33.0": the pin is the plan's, not the part's record."""
    planned, parts = _kind_v0_25_parts(tmp_path, crictl_recorded_pin="v1.33.0")
    assert planned.resolved["crictl"].wanted == "v1.30.0"
    said = kind_plan.runtime_origin(planned, parts)
    assert said["crictl"].endswith("; kind v0.25.0 pins v1.30.0, not served")
    assert "crictl v1.34.0 for v1.30.0" in said["node_components"] and "v1.33.0" not in str(said)


def test_a_cached_part_built_with_another_kind_releases_go_says_so() -> None:
    """Seen live: CNI plugins v1.3.0, first built for kind v0.22.0 with go1.20.14 because its go1.20.13 is not
    served, was reused for kind v0.20.0 (go1.20.4, served), and the origin said "go1.20.13 not served" as if kind
    v0.20.0 had asked for it."""
    note = "go1.20.13 (kind's) is not served (403): built with go1.20.14, the newest go1.20"
    for kind, go, said in (
        ("v0.22.0", "1.20.13", "v1.3.0 (built here from github.com/containernetworking/plugins with go1.20.14); "
         "go1.20.13 not served"),
        ("v0.20.0", "1.20.4", "v1.3.0 (built here from github.com/containernetworking/plugins with go1.20.14); "
         "reused from a build for go1.20.13 (not served); kind v0.20.0 names go1.20.4"),
    ):  # fmt: skip
        release = kind_parts.kind_release(kind)
        assert release.go == go
        cni = Part(Path("/nonexistent"), {"component": "cni_plugins", "version": "v1.3.0",
                   "module": "github.com/containernetworking/plugins", "wanted": "v1.3.0",
                   "toolchain": "go version go1.20.14 linux/amd64", "toolchain_note": note})  # fmt: skip
        planned = kind_plan.Plan(release, {}, "", "")
        assert kind_plan.runtime_origin(planned, {"cni_plugins": cni})["cni"] == (
            f"the suite's ptp DaemonSet with CNI plugins {said}; kind's kindnetd is not served"
        )
