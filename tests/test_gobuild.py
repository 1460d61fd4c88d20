"""The Go builds (harness/gobuild/) offline: a release's module wiring and staging twins, the toolchain it is built
with, the generated file tags before 1.24 lack, and what a build records.

Nothing here builds Kubernetes: `go` and openapi-gen are stood in for where a test needs them (each says so).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.base.versions import Release, VersionError
from harness.gobuild import go as go_command
from harness.gobuild import kubernetes as kube_build
from harness.gobuild import modules, openapi, openapi_build, staging, standins
from harness.gobuild import toolchain as go_toolchain

GO_MOD = """module k8s.io/kubernetes

go 1.20

require (
\tk8s.io/api v0.0.0
\tk8s.io/client-go v0.0.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/client-go => ./staging/src/k8s.io/client-go
\tgithub.com/example/pinned => github.com/example/fork v1.2.3
)
"""


def test_every_staging_module_is_replaced_by_its_published_twin_and_other_pins_carry_over() -> None:
    assert staging.replacements(GO_MOD, "v0.27.3") == [
        "k8s.io/api=k8s.io/api@v0.27.3",
        "k8s.io/client-go=k8s.io/client-go@v0.27.3",
        "github.com/example/pinned=github.com/example/fork@v1.2.3",
    ]


def test_a_twin_in_the_module_cache_is_replaced_by_its_directory() -> None:
    """Built from a directory, a staging module is v0.0.0 to the compiler on every patch: its unchanged packages
    keep their build-cache keys (which name the module's version under -trimpath) from one patch to the next."""
    twin = "./modules/k8s.io/api"
    assert staging.replacements(GO_MOD, "v0.27.3", {"k8s.io/api": twin})[:2] == [
        f"k8s.io/api={twin}",
        "k8s.io/client-go=k8s.io/client-go@v0.27.3",
    ]


def test_the_main_module_takes_the_tags_go_and_godebug_lines() -> None:
    assert staging.main_module_directives(GO_MOD) == "go 1.20\n"
    tagged = "module k8s.io/kubernetes\n\ngo 1.23.0\n\ngodebug default=go1.23\n\nrequire x v1\n"
    assert staging.main_module_directives(tagged) == "go 1.23.0\ngodebug default=go1.23\n"


def test_the_version_is_stamped_into_both_version_packages() -> None:
    flags = kube_build.ldflags(Release.parse("v1.27.3"), "25b4e431", "2026-11-23T00:00:00Z")
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        assert f"-X {package}.gitVersion=v1.27.3" in flags
        assert f"-X {package}.gitMinor=27" in flags
        assert f"-X {package}.gitCommit=25b4e431" in flags


@pytest.mark.parametrize(
    ("version", "said"),
    [("1.27", "give a full Kubernetes release"), ("v1.27", "give a full"), ("latest", "not a Kubernetes version")],
)
def test_a_build_needs_one_release(version: str, said: str) -> None:
    with pytest.raises(VersionError, match=said):
        kube_build.release_text(Release.parse(version))


def test_release_text_keeps_pre_releases() -> None:
    assert kube_build.release_text(Release.parse("1.27.0-rc.0")) == "v1.27.0-rc.0"
    assert kube_build.release_text(Release.parse("v1.26.6")) == "v1.26.6"


def test_the_upstream_go_release_comes_from_go_version_or_the_cross_image(tmp_path: Path) -> None:
    (tmp_path / ".go-version").write_text("1.20.5\n")
    assert go_toolchain.upstream_go_version(tmp_path) == "1.20.5"
    (tmp_path / ".go-version").unlink()
    (tmp_path / "build" / "build-image" / "cross").mkdir(parents=True)
    (tmp_path / "build" / "build-image" / "cross" / "VERSION").write_text("v1.26.0-go1.19.10-bullseye.0\n")
    assert go_toolchain.upstream_go_version(tmp_path) == "1.19.10"


def _stand_in_go(served: set[str], listed: set[str] | None = None) -> Any:
    """Stands in for `go version` under GOTOOLCHAIN (answers only for the toolchains in `served`) and for
    `go list -m -versions golang.org/toolchain` (lists `listed`, by default what is served)."""

    def go(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 0) -> subprocess.CompletedProcess[str]:
        if args[:2] == ["list", "-m"]:
            shown = served if listed is None else listed
            versions = " ".join(f"v0.0.1-go{v}.linux-amd64 v0.0.1-go{v}.darwin-arm64" for v in sorted(shown))
            return subprocess.CompletedProcess(args, 0, f"golang.org/toolchain {versions}\n", "")
        wanted = env["GOTOOLCHAIN"]
        if wanted.removeprefix("go") in served:
            return subprocess.CompletedProcess(args, 0, f"go version {wanted} linux/amd64\n", "")
        return subprocess.CompletedProcess(args, 1, "", f"go: download {wanted}: 403 Forbidden")

    return go


def test_upstreams_exact_go_is_used_when_served(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(go_toolchain, "run_go", _stand_in_go({"1.20.5", "1.20.14"}))
    assert go_toolchain.choose_toolchain("1.20.5", {}, tmp_path, "exact") == ("go1.20.5", "upstream's")


def test_otherwise_the_newest_patch_of_that_go_minor(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(go_toolchain, "run_go", _stand_in_go({"1.20.13", "1.20.14"}))
    toolchain, why = go_toolchain.choose_toolchain("1.20.5", {}, tmp_path, "exact")
    assert toolchain == "go1.20.14"
    assert "go1.20.5: not served" in why


def test_by_default_the_newest_patch_of_the_tags_go_minor_so_a_minors_patches_share_a_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Two patches whose tags name go1.20.8 and go1.20.11 both build with go1.20.14 (not go1.21.x), and say why."""
    monkeypatch.setattr(go_toolchain, "run_go", _stand_in_go({"1.20.8", "1.20.11", "1.20.14", "1.21.13"}))
    for upstream in ("1.20.8", "1.20.11"):
        toolchain, why = go_toolchain.choose_toolchain(upstream, {}, tmp_path, "minor")
        assert toolchain == "go1.20.14"
        assert f"upstream's go{upstream}" in why and "GO_TOOLCHAIN=exact" in why
    assert go_toolchain.choose_toolchain("1.20.14", {}, tmp_path, "minor") == ("go1.20.14", "upstream's")


def test_a_listed_toolchain_that_does_not_run_falls_back_to_the_next(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(go_toolchain, "run_go", _stand_in_go({"1.20.13"}, listed={"1.20.13", "1.20.14"}))
    assert go_toolchain.choose_toolchain("1.20.5", {}, tmp_path, "minor")[0] == "go1.20.13"


def test_no_toolchain_of_that_minor_is_an_error_with_the_proxys_answer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(go_toolchain, "run_go", _stand_in_go(set()))
    with pytest.raises(go_command.BuildError, match=r"no go1\.20 toolchain .*403 Forbidden"):
        go_toolchain.choose_toolchain("1.20.5", {}, tmp_path, "exact")


@pytest.mark.parametrize("policy", ["", "minor", "exact", "EXACT"])
def test_the_toolchain_policy_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch, policy: str) -> None:
    monkeypatch.setenv(go_toolchain.TOOLCHAIN_VARIABLE, policy)
    assert go_toolchain.toolchain_policy() == (policy.lower() or "minor")


def test_an_unknown_toolchain_policy_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(go_toolchain.TOOLCHAIN_VARIABLE, "newest")
    with pytest.raises(VersionError, match="GO_TOOLCHAIN must be one of minor, exact"):
        go_toolchain.toolchain_policy()


def test_an_exact_toolchain_build_has_its_own_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert kube_build.build_directory(Release.parse("1.24.1"), tmp_path, "minor") == tmp_path / "kubernetes" / "v1.24.1"
    assert (
        kube_build.build_directory(Release.parse("1.24.1"), tmp_path, "exact")
        == tmp_path / "kubernetes" / "v1.24.1+exact-go"
    )


def test_an_existing_build_is_reused_without_go(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    directory = tmp_path / "kubernetes" / "v1.27.3"
    (directory / "bin").mkdir(parents=True)
    for component in kube_build.NODE_IMAGE_COMPONENTS:
        (directory / "bin" / component).write_text("")
    (directory / "build.json").write_text(json.dumps({"version": "v1.27.3", "toolchain": "go1.20.14"}))
    monkeypatch.setattr(kube_build, "check_go", lambda: pytest.fail("go must not be asked"))
    built = kube_build.build_kubernetes(Release.parse("1.27.3"), tools=tmp_path)
    assert built.record["toolchain"] == "go1.20.14"
    assert built.binary("kubelet") == directory / "bin" / "kubelet"


def test_no_go_on_path_is_said_plainly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(go_command.BuildError, match=r"needs Go 1\.21 or newer on PATH"):
        go_command.check_go()


def _served_from(served: set[tuple[str, str]], asked: list[list[tuple[str, str]]] | None = None) -> Any:
    def answer(pairs: list[tuple[str, str]]) -> set[tuple[str, str]]:
        if asked is not None:
            asked.append(pairs)
        return {pair for pair in pairs if pair in served}

    return answer


def test_refused_pre_release_twins_are_replaced_by_the_first_served_release_and_said() -> None:
    served = {
        ("k8s.io/api", "v0.27.0-rc.0"),
        ("k8s.io/kube-proxy", "v0.27.0"),
        ("k8s.io/cluster-bootstrap", "v0.27.1"),
    }
    modules = ["k8s.io/api", "k8s.io/kube-proxy", "k8s.io/cluster-bootstrap", "k8s.io/sample-cli-plugin"]
    versions, substitutions = staging.substitute_refused_twins(modules, "v0.27.0-rc.0", _served_from(served))
    assert substitutions == {"k8s.io/kube-proxy": "v0.27.0", "k8s.io/cluster-bootstrap": "v0.27.1"}
    # Served nowhere: left at the pre-release (go build fails loudly if a component imports it).
    assert versions == {
        "k8s.io/api": "v0.27.0-rc.0",
        "k8s.io/kube-proxy": "v0.27.0",
        "k8s.io/cluster-bootstrap": "v0.27.1",
        "k8s.io/sample-cli-plugin": "v0.27.0-rc.0",
    }


def test_a_release_whose_twins_are_all_served_is_asked_once_and_not_substituted() -> None:
    asked: list[list[tuple[str, str]]] = []
    served = {("k8s.io/api", "v0.27.3"), ("k8s.io/client-go", "v0.27.3")}
    versions, substitutions = staging.substitute_refused_twins(
        ["k8s.io/api", "k8s.io/client-go"], "v0.27.3", _served_from(served, asked)
    )
    assert (versions, substitutions) == ({"k8s.io/api": "v0.27.3", "k8s.io/client-go": "v0.27.3"}, {})
    assert asked == [[("k8s.io/api", "v0.27.3"), ("k8s.io/client-go", "v0.27.3")]]


def test_a_refused_release_twin_takes_the_nearest_patch_the_earlier_at_equal_distance() -> None:
    # As seen for v1.29.6: three twins refused at v0.29.6; v0.29.5 serves them. Here one module is served
    # only later (v0.25.17), one two patches earlier, one both one earlier and one later (earlier wins), one
    # three earlier and one later (the nearer, later one wins).
    served = {
        ("k8s.io/api", "v0.25.16"),
        ("k8s.io/kube-proxy", "v0.25.15"),
        ("k8s.io/kube-proxy", "v0.25.17"),
        ("k8s.io/cluster-bootstrap", "v0.25.14"),
        ("k8s.io/controller-manager", "v0.25.17"),
        ("k8s.io/kube-scheduler", "v0.25.13"),
        ("k8s.io/kube-scheduler", "v0.25.17"),
    }
    modules = ["k8s.io/api", "k8s.io/kube-proxy", "k8s.io/cluster-bootstrap", "k8s.io/controller-manager"]
    modules.append("k8s.io/kube-scheduler")
    versions, substitutions = staging.substitute_refused_twins(modules, "v0.25.16", _served_from(served))
    assert substitutions == {
        "k8s.io/kube-proxy": "v0.25.15",
        "k8s.io/cluster-bootstrap": "v0.25.14",
        "k8s.io/controller-manager": "v0.25.17",
        "k8s.io/kube-scheduler": "v0.25.17",
    }
    assert versions["k8s.io/api"] == "v0.25.16"


def test_the_served_check_reads_every_answer_of_one_batched_download(tmp_path: Path, monkeypatch: Any) -> None:
    stdout = (
        '{\n "Path": "k8s.io/api",\n "Version": "v0.29.6",\n "Dir": "/m/api"\n}\n'
        '{\n "Path": "k8s.io/endpointslice",\n "Version": "v0.29.6",\n "Error": "403 Forbidden"\n}\n'
    )
    seen: list[list[str]] = []

    def fake_go(args: list[str], env: Any, cwd: Path, timeout: float = 900) -> Any:
        seen.append(args)
        assert env["GONOSUMDB"] == "k8s.io"
        return subprocess.CompletedProcess(args, 1, stdout, "")

    monkeypatch.setattr(modules, "run_go", fake_go)
    pairs = [("k8s.io/api", "v0.29.6"), ("k8s.io/endpointslice", "v0.29.6")]
    assert modules.served_modules(pairs, {}, tmp_path) == {("k8s.io/api", "v0.29.6")}
    assert seen == [["mod", "download", "-json", "k8s.io/api@v0.29.6", "k8s.io/endpointslice@v0.29.6"]]


def test_the_build_environment_ignores_the_hosts_go_env_file_and_goflags(monkeypatch: Any) -> None:
    monkeypatch.setenv("GOFLAGS", "-buildvcs=false")  # what this machine's go env held; go1.16 refuses it
    env = go_command.go_environment(Path("/t"))
    assert env["GOFLAGS"] == "-mod=mod"
    assert env["GOENV"] == "off"
    assert env["GOMODCACHE"] == "/t/go/mod"


# Kubernetes 1.21-1.23: the tag lacks pkg/generated/openapi/zz_generated.openapi.go, which upstream's make
# generated; the build generates it with openapi-gen (harness/gobuild/openapi.py). Stand-in trees, no Go.

_MAKEFILE_GENERATED_FILES = (  # the lines of 1.21's build/root/Makefile.generated_files that are read
    "BOILERPLATE_FILENAME := vendor/k8s.io/code-generator/hack/boilerplate.go.txt\n"
    "KUBE_KNOWN_VIOLATION_FILENAME := api/api-rules/violation_exceptions.list\n"
    "KUBE_OPENAPI_TAG_FILES :=            $(filter-out vendor/k8s.io/code-generator/% "
    "vendor/k8s.io/sample-apiserver/%, $(ALL_K8S_TAG_FILES))\n"
    "KUBE_OPENAPI_OUTPUT_PKG := pkg/generated/openapi\n"
)
_TAGGED = "// +k8s:openapi-gen=true\n\npackage v1\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _stand_in_tag(root: Path, with_openapi: bool) -> Path:
    """A k8s.io/kubernetes module tree: tagged and untagged packages, and what the Makefile's find prunes."""
    source = root / "kubernetes@v1.21.14"
    go_mod = GO_MOD.replace(
        "\tk8s.io/api => ", "\tk8s.io/code-generator => ./staging/src/k8s.io/code-generator\n\tk8s.io/api => "
    )
    _write(source / "go.mod", go_mod)
    _write(source / "build" / "root" / "Makefile.generated_files", _MAKEFILE_GENERATED_FILES)
    _write(source / "build" / "build-image" / "cross" / "VERSION", "v1.21.0-go1.16.15-buster.0\n")
    _write(source / "api" / "api-rules" / "violation_exceptions.list", "API rule violation: names_match,x\n")
    _write(source / "pkg" / "apis" / "abac" / "v1beta1" / "types.go", "// +k8s:deepcopy-gen=package\n" + _TAGGED)
    _write(source / "pkg" / "apis" / "abac" / "v0" / "types.go", "// +k8s:openapi-gen=false\npackage v0\n")
    # Named in prose only, no `// +k8s:` line: grep's first filter (ALL_K8S_TAG_FILES) drops it.
    _write(source / "pkg" / "apis" / "prose" / "doc.go", "/* mentions +k8s:openapi-gen=true */\npackage prose\n")
    _write(source / "pkg" / "apis" / "untagged" / "types.go", "package untagged\n")
    _write(source / "vendor" / "k8s.io" / "x" / "types.go", _TAGGED)  # ./vendor is pruned
    _write(source / "_output" / "local" / "types.go", _TAGGED)  # so is every name starting with _ or .
    _write(source / ".hidden" / "types.go", _TAGGED)
    _write(source / "pkg" / "apis" / "abac" / "v1beta1" / "_skipped.go", _TAGGED)
    if with_openapi:
        _write(source / "pkg" / "generated" / "openapi" / "zz_generated.openapi.go", "package openapi\n")
    else:
        _write(source / "pkg" / "generated" / "openapi" / "doc.go", "package openapi\n")
    return source


def _stand_in_twins(root: Path) -> dict[str, Path]:
    api = root / "api@v0.21.14"
    _write(api / "core" / "v1" / "types.go", "// +k8s:openapi-gen=true\n\npackage v1\n")
    _write(api / "apps" / "v1" / "doc.go", "// +k8s:openapi-gen=true\n// +groupName=apps\npackage v1\n")
    client = root / "client-go@v0.21.14"
    _write(client / "pkg" / "version" / "doc.go", "// +k8s:openapi-gen=true\npackage version\n")
    generator = root / "code-generator@v0.21.14"  # filtered out by the Makefile's KUBE target
    _write(generator / "examples" / "apiserver" / "apis" / "example" / "v1" / "types.go", _TAGGED)
    _write(generator / "hack" / "boilerplate.go.txt", "/*\nCopyright The Kubernetes Authors.\n*/\n")
    return {"k8s.io/api": api, "k8s.io/client-go": client, "k8s.io/code-generator": generator}


def test_the_file_is_generated_only_when_the_tag_lacks_it(tmp_path: Path) -> None:
    assert openapi.lacks_openapi(_stand_in_tag(tmp_path / "old", with_openapi=False))
    assert not openapi.lacks_openapi(_stand_in_tag(tmp_path / "new", with_openapi=True))


def test_the_generator_settings_are_read_from_the_tags_makefile(tmp_path: Path) -> None:
    settings = openapi.makefile_settings(_stand_in_tag(tmp_path, with_openapi=False))
    assert settings.excluded == ("vendor/k8s.io/code-generator/", "vendor/k8s.io/sample-apiserver/")
    assert settings.output_package == "pkg/generated/openapi"
    assert settings.boilerplate == "vendor/k8s.io/code-generator/hack/boilerplate.go.txt"
    assert settings.known_violations == "api/api-rules/violation_exceptions.list"


def test_a_makefile_that_does_not_say_it_is_refused(tmp_path: Path) -> None:
    source = _stand_in_tag(tmp_path, with_openapi=False)
    _write(source / "build" / "root" / "Makefile.generated_files", "gen_openapi:\n")
    with pytest.raises(openapi.OpenAPIError, match="KUBE_OPENAPI_TAG_FILES"):
        openapi.makefile_settings(source)


def test_the_input_packages_are_the_tagged_dirs_the_makefile_finds_in_its_order(tmp_path: Path) -> None:
    source = _stand_in_tag(tmp_path, with_openapi=False)
    twins = _stand_in_twins(tmp_path)
    settings = openapi.makefile_settings(source)
    # C order of the Makefile's names: pkg/... before vendor/k8s.io/... (the staging dirs' names there);
    # code-generator's example left out by the filter-out; =false tags still given (openapi-gen decides).
    assert openapi.input_packages(source, twins, settings) == [
        "k8s.io/kubernetes/pkg/apis/abac/v0",
        "k8s.io/kubernetes/pkg/apis/abac/v1beta1",
        "k8s.io/api/apps/v1",
        "k8s.io/api/core/v1",
        "k8s.io/client-go/pkg/version",
    ]
    assert openapi.boilerplate_path(source, twins, settings) == twins["k8s.io/code-generator"] / (
        "hack/boilerplate.go.txt"
    )
    args = openapi.generator_args(["a/b", "c/d"], settings, Path("/h"), Path("/r"), Path("/out"))
    assert args[args.index("-i") + 1] == "a/b,c/d"
    assert args[args.index("-p") + 1] == "k8s.io/kubernetes/pkg/generated/openapi"
    assert args[args.index("-O") + 1] == "zz_generated.openapi"
    assert args[args.index("--output-base") + 1] == "/out"


def _stand_in_build(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, source: Path) -> list[list[str]]:
    """build_kubernetes with every go and openapi-gen run stood in for; returns the commands it ran."""
    twins = _stand_in_twins(tmp_path)
    commands: list[list[str]] = []
    monkeypatch.setattr(kube_build, "check_go", lambda: "go version go1.26.0 linux/amd64")
    module = {"Dir": str(source), "Sum": "h1:x", "Origin": {"Hash": "abc123"}}
    monkeypatch.setattr(kube_build, "resolve_module", lambda version, tools: module)
    monkeypatch.setattr(kube_build, "choose_toolchain", lambda *a: ("go1.16.15", "upstream's"))
    monkeypatch.setattr(kube_build, "served_modules", lambda pairs, env, cwd: set(pairs))
    for owner in (kube_build, openapi_build):
        monkeypatch.setattr(owner, "module_dirs", lambda pairs, env, cwd: {m: twins[m] for m, _ in pairs})
    monkeypatch.setattr(openapi_build, "module_version", lambda module, env, cwd: "v0.0.0-20211110012726-3cc51fd1e909")

    def run(command: list[str], cwd: Path, env: Any, out: Any, stop: Any = None) -> int:
        commands.append(command)
        if command[0].endswith("/openapi-gen"):
            base = Path(command[command.index("--output-base") + 1])
            _write(base / "k8s.io/kubernetes/pkg/generated/openapi/zz_generated.openapi.go", "package openapi\n")
            _write(Path(command[command.index("-r") + 1]), "API rule violation: names_match,x\n")
        elif command[:2] == ["go", "build"] and "bin/" in command:
            for package in command[command.index("bin/") + 1 :]:
                if package == "k8s.io/kubernetes/cmd/kubeadm" and os.environ.get("PLP_TEST_KUBEADM_FAILS"):
                    return 1
                _write(cwd / "bin" / package.rsplit("/", 1)[1], "")
        return 0

    monkeypatch.setattr(kube_build, "run_step", run)
    return commands


def test_a_local_build_has_the_local_components_and_a_node_image_adds_its_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A local cluster needs four components; kubectl, kubeadm and kube-proxy (288 more packages, three large
    links) are built only when a node image first asks for them, added to the release's build."""
    source = _stand_in_tag(tmp_path / "mod", with_openapi=True)
    commands = _stand_in_build(monkeypatch, tmp_path, source)
    tools = tmp_path / "tools"
    local = kube_build.build_kubernetes(Release.parse("1.24.17"), tools=tools, log_progress=False)
    assert local.record["components"] == list(kube_build.LOCAL_COMPONENTS)
    assert [c.rsplit("/", 1)[1] for c in commands[-1][commands[-1].index("bin/") + 1 :]] == list(
        kube_build.LOCAL_COMPONENTS
    )
    assert kube_build.existing_build(Release.parse("1.24.17"), tools, kube_build.NODE_IMAGE_COMPONENTS) is None
    # a failed addition keeps the build it was added to
    monkeypatch.setenv("PLP_TEST_KUBEADM_FAILS", "1")
    with pytest.raises(go_command.BuildError):
        kube_build.build_kubernetes(Release.parse("1.24.17"), tools=tools, log_progress=False, components=("kubeadm",))
    assert kube_build.existing_build(Release.parse("1.24.17"), tools) is not None
    assert not (local.directory / "bin" / "kubeadm").exists()
    monkeypatch.delenv("PLP_TEST_KUBEADM_FAILS")
    commands.clear()
    node = kube_build.build_kubernetes(
        Release.parse("1.24.17"), tools=tools, log_progress=False, components=kube_build.NODE_IMAGE_COMPONENTS
    )
    built = [c for c in commands if c[:2] == ["go", "build"]]
    added = ["kubectl", "kubeadm", "kube-proxy"]
    assert len(built) == 1 and built[0][-3:] == [f"k8s.io/kubernetes/cmd/{c}" for c in added]
    assert node.record["components"] == list(kube_build.NODE_IMAGE_COMPONENTS)
    assert node.record["built_at"] == local.record["built_at"]  # the first build's record, with the addition said
    assert [a["components"] for a in node.record["added"]] == [added]
    assert kube_build.existing_build(Release.parse("1.24.17"), tools, kube_build.NODE_IMAGE_COMPONENTS) is not None


def test_a_tag_without_the_file_is_built_from_a_copy_with_it_and_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    source = _stand_in_tag(tmp_path / "mod", with_openapi=False)
    commands = _stand_in_build(monkeypatch, tmp_path, source)
    built = kube_build.build_kubernetes(Release.parse("1.21.14"), tools=tmp_path / "tools", log_progress=False)
    src = built.directory / "src"
    assert (src / "pkg/generated/openapi/zz_generated.openapi.go").read_text() == "package openapi\n"
    assert (src / "pkg/apis/abac/v1beta1/types.go").read_text() == (
        source / "pkg/apis/abac/v1beta1/types.go"
    ).read_text()
    assert not (source / "pkg/generated/openapi/zz_generated.openapi.go").exists()  # the module cache untouched
    assert ["go", "mod", "edit", "-replace=k8s.io/kubernetes=./src"] in commands
    # Generated once the tag is required (pins kube-openapi/gengo as the tag does); the components built last.
    require = commands.index(
        [
            "go",
            "mod",
            "edit",
            "-require=k8s.io/kubernetes@v0.0.0",
            "-replace=k8s.io/kubernetes=./modules/k8s.io/kubernetes",
        ]
    )
    replace = commands.index(["go", "mod", "edit", "-replace=k8s.io/kubernetes=./src"])
    tool = next(i for i, c in enumerate(commands) if "k8s.io/kube-openapi/cmd/openapi-gen" in c)
    ran = next(i for i, c in enumerate(commands) if c[0].endswith("/openapi-gen"))
    assert require < replace < tool < ran < len(commands) - 1
    generator = next(c for c in commands if c[0].endswith("/openapi-gen"))
    assert generator[generator.index("-i") + 1].split(",")[0] == "k8s.io/kubernetes/pkg/apis/abac/v0"
    assert commands[-1][:2] == ["go", "build"] and "bin/" in commands[-1]
    assert built.record["generated"] == {
        "pkg/generated/openapi/zz_generated.openapi.go": "openapi-gen of k8s.io/kube-openapi@"
        "v0.0.0-20211110012726-3cc51fd1e909, 5 input packages; API rule violations the same as the tag's "
        "api/api-rules/violation_exceptions.list"
    }
    assert not (built.directory / "openapi-gen").exists()  # the scratch output is gone
    assert json.loads((built.directory / "build.json").read_text())["generated"] == built.record["generated"]


def test_a_tag_with_the_file_is_built_as_it_is(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    source = _stand_in_tag(tmp_path / "mod", with_openapi=True)
    commands = _stand_in_build(monkeypatch, tmp_path, source)
    built = kube_build.build_kubernetes(Release.parse("1.24.17"), tools=tmp_path / "tools", log_progress=False)
    assert built.record["generated"] == {}
    assert not (built.directory / "src").exists()
    assert not any("k8s.io/kubernetes=./src" in " ".join(c) for c in commands)
    assert not any(c[0].endswith("openapi-gen") or "k8s.io/kube-openapi/cmd/openapi-gen" in c for c in commands)


def test_the_go_release_of_a_tag_is_read_where_its_tree_names_it(tmp_path: Path) -> None:
    cross = tmp_path / "build" / "build-image" / "cross" / "VERSION"
    cross.parent.mkdir(parents=True)
    cross.write_text("v1.21.0-go1.16.15-buster.0\n")  # 1.21.14
    assert go_toolchain.upstream_go_version(tmp_path) == "1.16.15"
    cross.write_text("v1.16.6-1\n")  # 1.22.0: the cross image is tagged after Go alone
    with pytest.raises(go_command.BuildError, match="no 'golang: upstream version'"):
        go_toolchain.upstream_go_version(tmp_path)
    (tmp_path / "build" / "dependencies.yaml").write_text(
        'dependencies:\n  - name: "golang: upstream version"\n    version: 1.16.6\n'
    )
    assert go_toolchain.upstream_go_version(tmp_path) == "1.16.6"
    (tmp_path / ".go-version").write_text("1.20.5\n")  # 1.27 on
    assert go_toolchain.upstream_go_version(tmp_path) == "1.20.5"


def test_a_build_says_its_toolchain_and_what_it_reused() -> None:
    record = {
        "toolchain": "go1.20.14",
        "upstream_go": "go1.20.8",
        "duration_s": 97.6,
        "work": {"packages_in_build": 2540, "packages_compiled": 412, "packages_reused": 2128},
    }
    assert kube_build.build_summary(record) == (
        "built with go1.20.14 (upstream's go1.20.8) in 98 s: 412 of 2,540 packages compiled, 2,128 reused from "
        "the build cache"
    )
    assert kube_build.build_summary({"toolchain": "go1.18.2", "upstream_go": "go1.18.2", "duration_s": 5}) == (
        "built with go1.18.2 in 5 s"
    )


def test_a_builds_progress_estimates_its_packages_from_the_minors_last_build(tmp_path: Path) -> None:
    assert kube_build.packages_of_minor(tmp_path, "1.24") is None
    for version, count in (("v1.24.0", 2400), ("v1.25.0", 9999)):
        (tmp_path / "kubernetes" / version).mkdir(parents=True)
        record = {"work": {"packages_in_build": count}}
        (tmp_path / "kubernetes" / version / "build.json").write_text(json.dumps(record))
    assert kube_build.packages_of_minor(tmp_path, "1.24") == 2400


def test_a_twin_requires_its_staging_siblings_at_v0_0_0_as_in_the_staging_tree(tmp_path: Path) -> None:
    """The published twin's go.mod requires k8s.io/apimachinery at the patch's version, which the module graph would
    select and the compile cache key would name; its directory in the build says v0.0.0, and links the rest."""
    twin = tmp_path / "mod" / "k8s.io" / "api@v0.24.2"
    (twin / "core" / "v1").mkdir(parents=True)
    (twin / "core" / "v1" / "types.go").write_text("package v1\n")
    (twin / "go.mod").write_text(
        "module k8s.io/api\n\ngo 1.16\n\nrequire (\n\tgithub.com/gogo/protobuf v1.3.2\n"
        "\tk8s.io/apimachinery v0.24.2\n)\n\nrequire k8s.io/klog/v2 v2.60.1 // indirect\n"
    )
    source = tmp_path / "mod" / "k8s.io" / "kubernetes@v1.24.2"
    source.mkdir(parents=True)
    build = tmp_path / "build"
    links = modules.module_links(
        build, {"k8s.io/kubernetes": source, "k8s.io/api": twin}, staging=["k8s.io/api", "k8s.io/apimachinery"]
    )
    assert links == {"k8s.io/kubernetes": "./modules/k8s.io/kubernetes", "k8s.io/api": "./modules/k8s.io/api"}
    assert (build / "modules/k8s.io/kubernetes").resolve() == source
    written = (build / "modules/k8s.io/api/go.mod").read_text()
    assert "\tk8s.io/apimachinery v0.0.0\n" in written and "github.com/gogo/protobuf v1.3.2" in written
    assert "k8s.io/klog/v2 v2.60.1" in written  # not a staging module
    assert (build / "modules/k8s.io/api/core/v1/types.go").read_text() == "package v1\n"


def test_a_failed_build_names_its_error_lines_last_not_the_packages_go_printed_after_them(tmp_path: Path) -> None:
    """Seen on v1.29.0-alpha.1: `go build -v` went on naming packages after the compile error, so the log's last
    line was 'k8s.io/kubernetes/cmd/kubelet' and said nothing of why."""
    from harness.gobuild.not_built import failure_lines

    log = tmp_path / "build.log"
    error = "modules/k8s.io/kube-aggregator/pkg/x/aggregator.go:96:4: unknown field V3Config in struct literal"
    log.write_text("\n".join(["go: downloading k8s.io/api v0.29.0", error, *(f"k8s.io/pkg{n}" for n in range(30))]))
    said = failure_lines(log)
    assert said.splitlines()[-2:] == ["errors:", error]
    assert "k8s.io/pkg29" in said and "k8s.io/pkg5" not in said  # the last 20 lines, then the errors
    assert "go: downloading" not in said.split("errors:")[1]
    log.write_text("a\nb\n")
    assert failure_lines(log) == f"last lines of {log}:\na\nb"


def test_a_release_the_proxy_refuses_is_remembered_as_not_built_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen: v1.24.0-alpha.1 answered 403 before any build started; `make coverage PLAN=1` should not plan it."""
    from harness.gobuild import kubernetes, not_built

    def refused(module: str, version: str, env: object, cwd: object) -> dict[str, object]:
        raise go_command.BuildError(f"the Go module proxy does not serve {module}@{version}: 403 Forbidden")

    monkeypatch.setattr(kubernetes, "download_module", refused)
    with pytest.raises(go_command.BuildError):
        kubernetes.resolve_module(Release.parse("1.24.0-alpha.1"), tmp_path)
    (why,) = not_built.not_built_here(tmp_path).values()
    assert list(not_built.not_built_here(tmp_path)) == ["1.24.0-alpha.1"]
    assert why.endswith(": the Go module proxy does not serve k8s.io/kubernetes@v1.24.0-alpha.1: 403 Forbidden")


def test_the_compilers_collect_less_often_within_a_memory_limit_unless_told_otherwise() -> None:
    """GOGC=400 with a GOMEMLIMIT from go1.19 (older Go ignores the limit: Go's defaults); the caller's GOGC wins."""
    assert go_command.go_minor("go1.20.14") == (1, 20) == go_command.go_minor("1.20")
    assert go_command.go_minor("1.25.0") == (1, 25) and go_command.go_minor("local") is None
    gc = go_command.compiler_gc("go1.20.14", environ={})
    assert gc["GOGC"] == go_command.COMPILER_GOGC == "400"
    assert gc["GOMEMLIMIT"].endswith("MiB") and int(gc["GOMEMLIMIT"][:-3]) > 0
    assert go_command.compiler_gc("go1.26.11", environ={})["GOGC"] == "400"
    assert go_command.compiler_gc("go1.18.10", environ={}) == {}
    assert go_command.compiler_gc("go1.16.15", environ={}) == {}
    assert go_command.compiler_gc("go1.22.12", environ={"GOGC": "100"}) == {"GOGC": "100"}
    assert go_command.compiler_gc("go1.22.12", environ={"GOGC": "off", "GOMEMLIMIT": "2GiB"}) == {
        "GOGC": "off",
        "GOMEMLIMIT": "2GiB",
    }


# ----- A tag's module looked up with the Go it asks for; the proxy blamed only when it refused.

_TOOLCHAINS_LISTED = " ".join(f"v0.0.1-go1.27.{p}.linux-amd64" for p in range(5)) + " v0.0.1-go1.26.8.linux-amd64"


def _go_answering(go_mod: Path, download: str) -> tuple[list[tuple[list[str], str]], Any]:
    """A stand-in for run_go: the host Go is go1.26.8; `go list -m -json` names go_mod as the module's go.mod;
    `go mod download` answers `download`. Each call is kept with the GOTOOLCHAIN it ran with."""
    calls: list[tuple[list[str], str]] = []

    def go(args: list[str], env: Any, cwd: Path, timeout: float = 900) -> Any:
        calls.append((args, str(env.get("GOTOOLCHAIN", ""))))
        if args[:3] == ["list", "-m", "-versions"]:
            return subprocess.CompletedProcess(args, 0, f"golang.org/toolchain {_TOOLCHAINS_LISTED}\n", "")
        if args[:2] == ["list", "-m"]:
            module, version = args[-1].split("@")
            answer = {"Path": module, "Version": version, "GoMod": str(go_mod)}
            return subprocess.CompletedProcess(args, 0, json.dumps(answer), "")
        if args[:2] == ["env", "GOVERSION"]:
            return subprocess.CompletedProcess(args, 0, "go1.26.8\n", "")
        return subprocess.CompletedProcess(args, 1, download, "")

    return calls, go


@pytest.mark.parametrize(
    ("go_mod", "running", "toolchain"),
    [
        ("module m\n\ngo 1.27.0\n", "go1.26.8", "go1.27.4"),  # the newest patch of the minor it asks for
        ("module m\n\ngo 1.27.0\n\ntoolchain go1.27.2\n", "go1.26.8", "go1.27.2"),  # its own toolchain line
        ("module m\n\ngo 1.27\n", "go1.26.8", "go1.27.4"),
        ("module m\n\ngo 1.27.0\n", "go1.27.1", None),  # the running Go is new enough
        ("module m\n\ngo 1.20\n", "go1.26.8", None),
        ("module m\n", "go1.26.8", None),  # no go line: any Go
    ],
)
def test_a_module_is_looked_up_with_the_go_its_go_mod_asks_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, go_mod: str, running: str, toolchain: str | None
) -> None:
    monkeypatch.setattr(
        go_toolchain,
        "run_go",
        lambda args, env, cwd, timeout=900: subprocess.CompletedProcess(
            args, 0, f"golang.org/toolchain {_TOOLCHAINS_LISTED}\n", ""
        ),
    )
    assert go_toolchain.lookup_toolchain(go_mod, running, {}, tmp_path) == toolchain


def test_a_tags_download_runs_with_its_go_not_the_hosts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Seen: k8s.io/kubernetes@v1.38.0-beta.0 (go 1.27.0) fetched with the host's go1.26.8 and GOTOOLCHAIN=local
    failed with "requires go >= 1.27.0", and the radar said the proxy did not serve it."""
    go_mod = tmp_path / "v1.38.0-beta.0.mod"
    go_mod.write_text("module k8s.io/kubernetes\n\ngo 1.27.0\n")
    served = json.dumps({"Path": "k8s.io/kubernetes", "Version": "v1.38.0-beta.0", "Dir": "/m/k"})
    calls, go = _go_answering(go_mod, served)
    monkeypatch.setattr(modules, "run_go", go)
    monkeypatch.setattr(go_toolchain, "run_go", go)
    info = modules.download_module("k8s.io/kubernetes", "v1.38.0-beta.0", {"GOTOOLCHAIN": "local"}, tmp_path)
    assert info["Dir"] == "/m/k"
    (download,) = [toolchain for args, toolchain in calls if args[:2] == ["mod", "download"]]
    assert download == "go1.27.4"


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (
            "k8s.io/kubernetes@v1.99.0: reading https://proxy.golang.org/k8s.io/kubernetes/@v/v1.99.0.info: "
            "403 Forbidden\n\tserver response: This module version is not available.",
            "the Go module proxy refuses k8s.io/kubernetes@v1.99.0 (403 Forbidden: server response: This module "
            "version is not available.)",
        ),
        (
            "k8s.io/kubernetes@v1.99.0: requires go >= 1.99.0 (running go 1.26.8; GOTOOLCHAIN=local)",
            "k8s.io/kubernetes@v1.99.0 could not be looked up: k8s.io/kubernetes@v1.99.0: requires go >= 1.99.0 "
            "(running go 1.26.8; GOTOOLCHAIN=local)",
        ),
        (
            "dial tcp: lookup proxy.golang.org: no such host",
            "k8s.io/kubernetes@v1.99.0 could not be looked up: dial tcp: lookup proxy.golang.org: no such host",
        ),
    ],
)
def test_the_proxy_is_blamed_only_when_it_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, error: str, said: str
) -> None:
    go_mod = tmp_path / "old.mod"
    go_mod.write_text("module k8s.io/kubernetes\n\ngo 1.20\n")
    _, go = _go_answering(go_mod, json.dumps({"Path": "k8s.io/kubernetes", "Version": "v1.99.0", "Error": error}))
    monkeypatch.setattr(modules, "run_go", go)
    with pytest.raises(go_command.BuildError) as raised:
        modules.download_module("k8s.io/kubernetes", "v1.99.0", {}, tmp_path)
    assert str(raised.value) == said


# ----- A module the proxy refuses at every version: the stand-in written here, for the components it serves.

_REQUIRES_IPTABLES_WRAPPERS = """module k8s.io/kubernetes

go 1.27.0

require (
\tk8s.io/api v0.0.0
\tsigs.k8s.io/iptables-wrappers v1.0.0
)
"""
_REFUSED_ZIP = (
    "sigs.k8s.io/iptables-wrappers@v1.0.0: reading https://proxy.golang.org/sigs.k8s.io/iptables-wrappers/@v/"
    "v1.0.0.zip: 403 Forbidden\n\tserver response: This module version is not available."
)


def test_a_refused_module_with_a_stand_in_is_stood_in_for_the_components_it_was_written_for() -> None:
    refused = lambda pairs: {pair: _REFUSED_ZIP for pair in pairs}  # noqa: E731
    needed = standins.stand_ins_needed(_REQUIRES_IPTABLES_WRAPPERS, kube_build.LOCAL_COMPONENTS, refused)
    assert list(needed) == ["sigs.k8s.io/iptables-wrappers@v1.0.0"]
    assert "finds no iptables" in needed["sigs.k8s.io/iptables-wrappers@v1.0.0"].what
    # served one day: built as it is
    assert standins.stand_ins_needed(_REQUIRES_IPTABLES_WRAPPERS, kube_build.LOCAL_COMPONENTS, lambda p: {}) == {}
    # not required by the tag (1.37): not even asked about
    asked: list[Any] = []

    def ask(pairs: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
        asked.append(pairs)
        return {}

    assert standins.stand_ins_needed(GO_MOD, kube_build.LOCAL_COMPONENTS, ask) == {}
    assert asked == []


def test_kube_proxy_is_not_built_with_the_stand_in_and_another_failure_is_no_refusal() -> None:
    refused = lambda pairs: {pair: _REFUSED_ZIP for pair in pairs}  # noqa: E731
    with pytest.raises(go_command.BuildError, match=r"^kube-proxy cannot be built faithfully: the Go module proxy "):
        standins.stand_ins_needed(_REQUIRES_IPTABLES_WRAPPERS, kube_build.NODE_IMAGE_COMPONENTS, refused)
    offline = lambda pairs: {pair: "dial tcp: i/o timeout" for pair in pairs}  # noqa: E731
    with pytest.raises(go_command.BuildError, match="could not be looked up: dial tcp"):
        standins.stand_ins_needed(_REQUIRES_IPTABLES_WRAPPERS, kube_build.LOCAL_COMPONENTS, offline)


def test_a_build_of_a_tag_whose_module_is_refused_replaces_it_with_the_stand_in_and_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    source = _stand_in_tag(tmp_path / "mod", with_openapi=True)
    (source / "go.mod").write_text((source / "go.mod").read_text() + _REQUIRES_IPTABLES_WRAPPERS.split("go 1.27.0")[1])
    commands = _stand_in_build(monkeypatch, tmp_path, source)
    monkeypatch.setattr(kube_build, "download_errors", lambda pairs, env, cwd: {p: _REFUSED_ZIP for p in pairs})
    built = kube_build.build_kubernetes(Release.parse("1.24.17"), tools=tmp_path / "tools", log_progress=False)
    replace = ["go", "mod", "edit", "-replace=sigs.k8s.io/iptables-wrappers=./standins/iptables-wrappers"]
    assert replace in commands and commands.index(replace) < len(commands) - 1  # before the build
    placed = built.directory / "standins" / "iptables-wrappers"
    assert (placed / "go.mod").read_text().count("module sigs.k8s.io/iptables-wrappers") == 1
    assert (placed / "pkg" / "iptables" / "iptables.go").is_file()
    recorded = json.loads((built.directory / "build.json").read_text())["module_stand_ins"]
    assert list(recorded) == ["sigs.k8s.io/iptables-wrappers@v1.0.0"]
    assert "stand-in written here" in recorded["sigs.k8s.io/iptables-wrappers@v1.0.0"]
