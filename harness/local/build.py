"""Kubernetes server binaries built from the `k8s.io/kubernetes` Go module, once per version.

No registry this suite can reach serves Kubernetes binaries, but every tag (pre-releases included) is a Go
module. `k8s.io/kubernetes` cannot be `go install`ed directly: its go.mod requires the staging modules
(`k8s.io/api`, `k8s.io/client-go`, ...) at v0.0.0 and maps them to `./staging/...`, and replace directives
of a dependency are ignored. So a throw-away main module under `.tools/kubernetes/vX.Y.Z/` requires
`k8s.io/kubernetes@vX.Y.Z` and replaces every staging module with its published `v0.Y.Z` twin (the same
source, tagged together), then builds the components with the Go toolchain the release names in
`.go-version` (`build/build-image/cross/VERSION` before 1.27), or the newest patch of that Go minor when
the proxy does not serve that exact one. `-ldflags -X` stamps the version the way `hack/lib/version.sh`
does, so `/version` reports the real gitVersion and commit. A tag before 1.24 lacks
`pkg/generated/openapi/zz_generated.openapi.go` (upstream's `make` generated it): it is generated the way that
Makefile does (harness/local/openapi.py) into a writable copy of the tag's source, `src/`, and
`replace k8s.io/kubernetes => ./src` builds from that copy: the tag plus this one file, said in build.json.

Everything lands in `.tools/` (ignored by git): the module and build caches under `.tools/go/`, the binaries,
`build.json` (toolchain, commit, duration) and `build.log` under `.tools/kubernetes/vX.Y.Z/`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import yaml

from harness import paths
from harness.local import build_watch, openapi
from harness.versions import KubeVersion, VersionError, check_supported

TOOLS = paths.TOOLS
# What a local cluster runs; a kind node image also holds kubectl, kubeadm and kube-proxy, built when one is first
# asked for (a release's build grows by them). Those three add 288 of 2536 packages (cmd/kubectl 192, kubeadm 164,
# kube-proxy 27 of their own; `go list -deps` at v1.35.8) and three large links to every build.
LOCAL_COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet")
NODE_IMAGE_COMPONENTS = (*LOCAL_COMPONENTS, "kubectl", "kubeadm", "kube-proxy")
_STAMPED_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
# A replace line of k8s.io/kubernetes's go.mod: `k8s.io/api => ./staging/src/k8s.io/api` (in a block or not).
_REPLACE = re.compile(r"^[ \t]*(?:replace[ \t]+)?(\S+)(?:[ \t]+v\S+)?[ \t]+=>[ \t]+(\S+)(?:[ \t]+(\S+))?[ \t]*$", re.M)


# The oldest release a build here can make (CLUSTER=local, node images from modules); kind runs older pinned images.
OLDEST_BUILT_HERE = KubeVersion.parse("1.21.0-alpha.0")


class BuildError(RuntimeError):
    """The binaries could not be built; the message says why (the proxy's answer, or the log's last lines)."""


class BuildStopped(BuildError):
    """A background build stopped because the command that asked for it was interrupted (make matrix)."""


@dataclass(frozen=True)
class Build:
    """Binaries of one Kubernetes version, and how they were made."""

    version: str  # "v1.27.3"
    directory: Path
    record: dict[str, Any]

    def binary(self, component: str) -> Path:
        return self.directory / "bin" / component


def go_environment(tools: Path = TOOLS, cache: str = "shared") -> dict[str, str]:
    """The build's own Go environment: caches inside .tools/ (shared by every build), cgo off as upstream builds.

    Nothing is taken from the host's `go env` file or a GOFLAGS of its own (a `-buildvcs=false` there, seen
    on this machine, is refused as an unknown flag by go1.16 and go1.17, which Kubernetes 1.21-1.23 need):
    GOENV=off, and every setting a toolchain from go1.16 on reads is given here. The proxy and checksum
    database stay the host's, as the host's Go reports them.
    """
    return {
        **os.environ,
        "GOENV": "off",
        "GOMODCACHE": str(tools / "go" / "mod"),
        "GOCACHE": str(go_build_cache(tools, cache)),
        "GOPATH": str(tools / "go" / "path"),
        "GOFLAGS": "-mod=mod",
        "GOWORK": "off",
        "CGO_ENABLED": "0",
        "GO111MODULE": "on",
        "GOPROXY": _host_go_setting("GOPROXY", "https://proxy.golang.org,direct"),
        "GOSUMDB": _host_go_setting("GOSUMDB", "sum.golang.org"),
    }


def go_build_cache(tools: Path, name: str) -> Path:
    """A Go build cache: one Go minor's Kubernetes builds (`build_cache_name`), or "shared" for the suite's small
    Go tools."""
    return tools / "go" / "cache" / name


@functools.cache
def _host_go_setting(name: str, default: str) -> str:
    """One of the host Go's settings (environment, go env file, GOROOT/go.env), or the default without Go."""
    if os.environ.get(name):
        return os.environ[name]
    go = shutil.which("go")
    if go is None:
        return default
    try:
        out = subprocess.run([go, "env", name], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:  # a go on PATH that cannot run: the same as none
        return default
    return out or default


def release_text(version: str) -> str:
    """'1.27.3' -> 'v1.27.3'; a minor alone is refused (a build needs one release)."""
    parsed = KubeVersion.requested(version)
    text = parsed.text if parsed.text.startswith("v") else f"v{parsed.text}"
    if text.count(".") < 2:
        raise VersionError(f"give a full Kubernetes release to build (e.g. 1.27.3 or 1.27.0-rc.0), not {version!r}")
    check_supported(parsed)
    if parsed.version < OLDEST_BUILT_HERE.version:
        raise VersionError(
            f"Kubernetes {version} cannot be built here: the oldest release built from Go modules is "
            f"{OLDEST_BUILT_HERE.minor} (the build reads the tag's Go release from build/build-image/cross/VERSION, "
            "which names it from 1.21 on; 1.19.16's does not); 1.19 and 1.20 run on their pinned kind images"
        )
    return text


def _go(args: list[str], env: Mapping[str, str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["go", *args], cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout, check=False
    )


def download_module(module: str, version: str, env: Mapping[str, str], cwd: Path) -> dict[str, Any]:
    """`go mod download -json module@version`: where the source is, and the VCS commit the proxy reports."""
    result = _go(["mod", "download", "-json", f"{module}@{version}"], env, cwd)
    try:
        info: dict[str, Any] = json.loads(result.stdout)
    except json.JSONDecodeError:
        info = {"Error": (result.stderr or result.stdout).strip()}
    if info.get("Error") or "Dir" not in info:
        raise BuildError(f"the Go module proxy does not serve {module}@{version}: {info.get('Error', result.stderr)}")
    return info


def upstream_go_version(source: Path) -> str:
    """The Go release upstream built this tag with: `.go-version` (1.27+), else the cross build image's name
    (`v1.21.0-go1.16.15-buster.0`), else the "golang: upstream version" of build/dependencies.yaml, which is
    what names it where the cross image is tagged after Go alone (`v1.16.6-1` at v1.22.0)."""
    dot = source / ".go-version"
    if dot.is_file():
        return dot.read_text().strip()
    cross = source / "build" / "build-image" / "cross" / "VERSION"
    match = re.search(r"go(\d+\.\d+(?:\.\d+)?)", cross.read_text()) if cross.is_file() else None
    if match:
        return match[1]
    dependencies = source / "build" / "dependencies.yaml"
    if dependencies.is_file():
        for entry in (yaml.safe_load(dependencies.read_text()) or {}).get("dependencies") or []:
            if entry.get("name") == "golang: upstream version" and entry.get("version"):
                return str(entry["version"])
    raise BuildError(
        f"cannot tell which Go release built {source.name}: no .go-version, no Go in the cross VERSION, "
        "no 'golang: upstream version' in build/dependencies.yaml"
    )


# How a build chooses its Go toolchain (the environment variable, set by `make ... GO_TOOLCHAIN=`):
#   minor  the newest patch the proxy serves of the Go minor the tag names (default): the patches of a Kubernetes
#          minor built with one Go minor then share one toolchain, so the build cache (keyed by the toolchain)
#          serves every package a patch did not change;
#   exact  the Go release the tag names (or the newest patch of its minor when the proxy does not serve it).
# build.json, the run record, every recording's origin and /version's goVersion say which ran.
TOOLCHAIN_VARIABLE = "PLP_GO_TOOLCHAIN"
TOOLCHAIN_POLICIES = ("minor", "exact")


def toolchain_policy() -> str:
    """The build's toolchain policy from the environment ("minor" when unset); anything else is refused."""
    policy = os.environ.get(TOOLCHAIN_VARIABLE, "").strip().lower() or "minor"
    if policy not in TOOLCHAIN_POLICIES:
        raise VersionError(
            f"GO_TOOLCHAIN must be one of {', '.join(TOOLCHAIN_POLICIES)} (minor: the newest patch of the tag's Go "
            f"minor, one build cache per Kubernetes minor; exact: the tag's own Go release), not {policy!r}"
        )
    return policy


def served_toolchains(env: Mapping[str, str], cwd: Path) -> list[str]:
    """Every Go release (go1.X.Y, no pre-releases) whose toolchain module the proxy lists for linux/amd64, oldest
    first: one request (`go list -m -versions golang.org/toolchain`). Empty when the proxy does not answer."""
    result = _go(["list", "-m", "-versions", "golang.org/toolchain"], {**env, "GOFLAGS": ""}, cwd, timeout=120)
    found = set(re.findall(r"v0\.0\.1-go(\d+\.\d+\.\d+)\.linux-amd64\b", result.stdout))
    return sorted(found, key=lambda v: tuple(int(p) for p in v.split(".")))


def choose_toolchain(upstream: str, env: Mapping[str, str], cwd: Path, policy: str = "exact") -> tuple[str, str]:
    """(GOTOOLCHAIN value, why). exact: upstream's Go when the proxy serves it, else the newest patch of its minor;
    minor: the newest patch of its minor."""
    minor = ".".join(upstream.split(".")[:2])
    listed = [v for v in served_toolchains(env, cwd) if v.startswith(f"{minor}.")]
    newest_first = list(reversed(listed)) or [f"{minor}.{patch}" for patch in range(30, -1, -1)]
    if policy == "minor":
        candidates = [*newest_first, *([upstream] if upstream not in newest_first else [])]
    else:
        candidates = [upstream, *(v for v in newest_first if v != upstream)]
    refused = []
    for candidate in candidates:
        probe = _go(["version"], {**env, "GOTOOLCHAIN": f"go{candidate}"}, cwd, timeout=300)
        if probe.returncode == 0 and f"go{candidate} " in probe.stdout:
            if candidate == upstream:
                why = "upstream's"
            elif policy == "minor":
                why = (
                    f"newest go{minor} patch (upstream's go{upstream}), so the patches of this minor share one "
                    "build cache; GO_TOOLCHAIN=exact builds with upstream's"
                )
            else:
                why = f"newest go{minor} served (go{upstream}: not served)"
            return f"go{candidate}", why
        if candidate == upstream:
            refused.append(probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else "refused")
    raise BuildError(f"no go{minor} toolchain is served by the Go module proxy (go{upstream}: {(refused or ['?'])[0]})")


def _replacements(
    kubernetes_go_mod: str, staged: Mapping[str, str] | str, directories: Mapping[str, str] | None = None
) -> list[str]:
    """`old=new` for every replace of k8s.io/kubernetes: staging dirs -> the published v0.Y.Z twins' directories in
    the module cache where `directories` has them (else `old@version`), other replaces as the tag pins them.

    `staged` is one version for every staging module, or a version per module (substitutions included).
    """
    out = []
    for old, new, pinned in _REPLACE.findall(kubernetes_go_mod):
        if new.startswith("./staging/"):
            version = staged if isinstance(staged, str) else staged[old]
            directory = (directories or {}).get(old)
            out.append(f"{old}={directory}" if directory is not None else f"{old}={old}@{version}")
        elif pinned:
            out.append(f"{old}={new}@{pinned}")
    return out


def packages_of_minor(tools: Path, minor: str) -> int | None:
    """How many packages the newest finished build of this minor had (an estimate for a build's progress)."""
    counts = []
    for record in (tools / "kubernetes").glob(f"v{minor}.*/build.json"):
        with contextlib.suppress(OSError, ValueError):
            work = json.loads(record.read_text()).get("work") or {}
            if isinstance(work.get("packages_in_build"), int):
                counts.append((record.stat().st_mtime, work["packages_in_build"]))
    return max(counts)[1] if counts else None


def module_links(directory: Path, modules: Mapping[str, Path], staging: Sequence[str] = ()) -> dict[str, str]:
    """`./modules/<module path>` in the build directory for each module's directory in the module cache, for
    `go mod edit -replace` (which takes an '@' in a directory's path for a version); {module: './modules/...'}.

    A module in `staging` (a published twin) gets a directory of its own holding its go.mod with every staging
    sibling required at v0.0.0, as in k8s.io/kubernetes's staging tree, and a link to each of its other entries:
    the twins' published go.mod files require their siblings at the patch's version (k8s.io/apimachinery
    v0.24.2), which the module graph would select, and the compile cache's key names that version. Any other
    module (k8s.io/kubernetes itself) is one link to its directory.
    """
    links = directory / "modules"
    shutil.rmtree(links, ignore_errors=True)
    siblings = re.compile(r"^(\s*(?:require\s+)?(?:" + "|".join(map(re.escape, staging)) + r"))\s+v\S+", re.M)
    out = {}
    for module, target in modules.items():
        link = links / module
        link.parent.mkdir(parents=True, exist_ok=True)
        if module in staging and (target / "go.mod").is_file():
            link.mkdir()
            for entry in target.iterdir():
                if entry.name != "go.mod":
                    (link / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
            (link / "go.mod").write_text(siblings.sub(r"\1 v0.0.0", (target / "go.mod").read_text()))
        else:
            link.symlink_to(target, target_is_directory=True)
        out[module] = f"./modules/{module}"
    return out


def main_module_directives(kubernetes_go_mod: str) -> str:
    """The `go` line and any `godebug` lines or block of k8s.io/kubernetes's go.mod, for the build's main module."""
    go_line = re.search(r"^go[ \t]+(\S+)[ \t]*$", kubernetes_go_mod, re.M)
    lines = [f"go {go_line[1] if go_line else '1.16'}"]
    lines += [m[0] for m in re.finditer(r"^godebug[ \t]+\([^)]*\)|^godebug[ \t]+\S+=\S+", kubernetes_go_mod, re.M)]
    return "\n".join(lines) + "\n"


def staging_modules(kubernetes_go_mod: str) -> list[str]:
    """The staging modules k8s.io/kubernetes maps to ./staging/ (k8s.io/api, k8s.io/client-go, ...)."""
    return [old for old, new, _ in _REPLACE.findall(kubernetes_go_mod) if new.startswith("./staging/")]


def substitute_refused_twins(
    modules: list[str], staged: str, served: Callable[[list[tuple[str, str]]], set[tuple[str, str]]]
) -> tuple[dict[str, str], dict[str, str]]:
    """(version per staging module, substitutions) for a tag whose twins the proxy partly refuses.

    `served` answers for a batch of (module, version) pairs which ones the proxy serves. The proxy refuses
    some twins: pre-release ones (v0.27.0-rc.0: 14 of them, 403 "not available") and some releases
    (v0.25.16: controller-manager, kube-controller-manager, cluster-bootstrap, kube-proxy; v0.29.6:
    endpointslice, kube-controller-manager, legacy-cloud-providers). Such a module takes the nearest served
    version of the same minor: for a pre-release the first release (v0.27.0, v0.27.1, ...); for a release
    the nearest patch, the earlier of two at the same distance first. Each substitution is returned so
    build.json, the run record and every recording's origin say it: the build is then "k8s.io/kubernetes
    at the tag, these staging modules at these versions", never silently exact.
    """
    versions = {module: staged for module in modules}
    core = staged.split("-", 1)[0]  # v0.27.3
    minor, patch_text = core.rsplit(".", 1)
    patch = int(patch_text)
    if "-" in staged:
        candidates = [f"{minor}.{p}" for p in range(0, 16)]
    else:
        # Nearest first, the earlier of two at the same distance first: a twin further away is likelier to
        # differ in an API the tag's code calls (seen: controller-manager v0.25.6 for v1.25.9 does not compile
        # against apiserver v0.25.9, whose WithAuthentication changed in between).
        nearby = sorted(range(max(patch - 15, 0), patch + 16), key=lambda p: (abs(p - patch), p))
        candidates = [f"{minor}.{p}" for p in nearby if p != patch]
    served_at_tag = served([(module, staged) for module in modules])
    refused = [module for module in modules if (module, staged) not in served_at_tag]
    substitutions: dict[str, str] = {}
    for candidate in candidates:
        if not refused:
            break
        answered = served([(module, candidate) for module in refused])
        for module in list(refused):
            if (module, candidate) in answered:
                versions[module] = substitutions[module] = candidate
                refused.remove(module)
    # Served nowhere (k8s.io/sample-cli-plugin at most versions): left as it is. No component imports such
    # a module, and if one did, `go build` would fail loudly on it.
    return versions, substitutions


def _download_answers(pairs: list[tuple[str, str]], env: Mapping[str, str], cwd: Path) -> list[dict[str, Any]]:
    """Every answer of one `go mod download -json` for the whole batch (a refused version answers an Error)."""
    if not pairs:
        return []
    return _json_answers(["mod", "download", "-json", *(f"{m}@{v}" for m, v in pairs)], env, cwd)


def _json_answers(args: list[str], env: Mapping[str, str], cwd: Path) -> list[dict[str, Any]]:
    """The JSON objects one go command prints one after another (`go mod download -json`, `go list -m -json`)."""
    result = _go(args, env, cwd)
    answers = []
    decoder = json.JSONDecoder()
    text, position = result.stdout, 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            break
        try:
            info, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            break
        answers.append(info)
    return answers


def served_modules(pairs: list[tuple[str, str]], env: Mapping[str, str], cwd: Path) -> set[tuple[str, str]]:
    """Which of these module versions the proxy serves: one `go mod download -json` for the whole batch.

    The checksum database is not asked here (GONOSUMDB=k8s.io): this only tells what can be downloaded; the
    build itself verifies checksums and says when it has to go without them.
    """
    answers = _download_answers(pairs, {**env, "GONOSUMDB": "k8s.io"}, cwd)
    return {(str(a["Path"]), str(a["Version"])) for a in answers if not a.get("Error") and "Dir" in a}


def module_dirs(pairs: list[tuple[str, str]], env: Mapping[str, str], cwd: Path) -> dict[str, Path]:
    """Where each of these module versions is in the module cache (downloaded if it is not yet)."""
    answers = _download_answers(pairs, {**env, "GONOSUMDB": "k8s.io"}, cwd)
    return {str(a["Path"]): Path(a["Dir"]) for a in answers if not a.get("Error") and "Dir" in a}


# ----- What the proxy serves, asked without downloading sources (`go list -m`: a version's .info and .mod only).


def listed_module_answers(pairs: list[tuple[str, str]], tools: Path = TOOLS) -> list[dict[str, Any]]:
    """One `go list -m -e -json module@version ...` for the whole batch: each answer has its Version, and an Error
    when the proxy does not serve it (403 "not available"), or its GoMod (the go.mod file in the module cache)."""
    if not pairs:
        return []
    (tools / "go").mkdir(parents=True, exist_ok=True)
    env = {**go_environment(tools), "GOFLAGS": "", "GONOSUMDB": "k8s.io"}
    return _json_answers(["list", "-m", "-e", "-json", *(f"{m}@{v}" for m, v in pairs)], env, tools / "go")


def served_versions(pairs: list[tuple[str, str]], tools: Path = TOOLS) -> set[tuple[str, str]]:
    """Which of these module versions the proxy serves (their .info; nothing else is downloaded)."""
    answers = listed_module_answers(pairs, tools)
    return {(str(a["Path"]), str(a["Version"])) for a in answers if not a.get("Error") and a.get("Version")}


def listed_kubernetes_versions(tools: Path = TOOLS) -> list[str]:
    """The k8s.io/kubernetes versions the proxy lists (`go list -m -versions`). The list can lack versions it
    serves (seen: no pre-release listed, v1.38.0-alpha.0 served), so ask for those by name (served_versions)."""
    (tools / "go").mkdir(parents=True, exist_ok=True)
    env = {**go_environment(tools), "GOFLAGS": ""}
    result = _go(["list", "-m", "-versions", "k8s.io/kubernetes"], env, tools / "go", timeout=120)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no answer"])[-1]
        raise BuildError(f"the Go module proxy does not list k8s.io/kubernetes: {last}")
    return [word for word in result.stdout.split()[1:] if word.startswith("v1.")]


def required_staging_modules(kubernetes_go_mod: str) -> list[str]:
    """The staging modules k8s.io/kubernetes requires (not only maps to ./staging/): go loads each one's go.mod, so a
    build needs every one of them served at some version (k8s.io/sample-cli-plugin is only mapped, never required)."""
    required = set(re.findall(r"^[ \t]*(?:require[ \t]+)?(k8s\.io/\S+)[ \t]+v0\.0\.0\b", kubernetes_go_mod, re.M))
    return [module for module in staging_modules(kubernetes_go_mod) if module in required]


def twins_served_nowhere(version: str, tools: Path = TOOLS) -> list[str]:
    """The staging modules a release requires that the proxy serves neither at the tag's twin version nor at any
    version the build would substitute (substitute_refused_twins): the release cannot be built here. Seen at
    v1.38.0-alpha.0: k8s.io/kube-proxy and k8s.io/cri-streaming (a new minor has no v0.38 release to take).
    Asks the proxy for the tag's go.mod and the twins' .info, downloading no source."""
    text = release_text(version)
    (answer,) = listed_module_answers([("k8s.io/kubernetes", text)], tools) or [{"Error": {"Err": "no answer"}}]
    if answer.get("Error") or not answer.get("GoMod"):
        raise BuildError(f"the Go module proxy does not serve k8s.io/kubernetes@{text}: {answer.get('Error')}")
    go_mod = Path(answer["GoMod"]).read_text()
    parsed = KubeVersion.parse(text)
    staged = f"v0.{parsed.version.minor}.{parsed.version.micro}" + (text[text.index("-") :] if "-" in text else "")
    modules = required_staging_modules(go_mod)
    served: set[tuple[str, str]] = set()

    def ask(pairs: list[tuple[str, str]]) -> set[tuple[str, str]]:
        served.update(served_versions(pairs, tools))
        return served & set(pairs)

    _, substitutions = substitute_refused_twins(modules, staged, ask)
    return sorted(m for m in modules if m not in substitutions and (m, staged) not in served)


def ldflags(version: str, commit: str, built_at: str) -> str:
    parsed = KubeVersion.parse(version)
    minor = str(parsed.version.minor)
    flags = ["-s", "-w"]
    for package in _STAMPED_PACKAGES:
        for key, value in (
            ("gitVersion", version),
            ("gitMajor", "1"),
            ("gitMinor", minor),
            ("gitCommit", commit),
            ("gitTreeState", "clean"),
            ("buildDate", built_at),
        ):
            flags.append(f"-X {package}.{key}={value}")
    return " ".join(flags)


def _run_logged(
    command: list[str], cwd: Path, env: Mapping[str, str], out: IO[str], stop: threading.Event | None = None
) -> int:
    """One build step (go, or a generator it built) with its output in build.log, in its own process group,
    which is killed whole when this process is interrupted or, for a build on a background thread (which no
    Ctrl-C reaches), when `stop` is set: then BuildStopped is raised. Its exit code."""
    process = subprocess.Popen(
        command, cwd=cwd, env=dict(env), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        while True:
            try:
                return process.wait(timeout=None if stop is None else 0.5)
            except subprocess.TimeoutExpired:
                if stop is not None and stop.is_set():
                    raise BuildStopped(f"stopped: {' '.join(command[:2])} was stopped with the command") from None
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise


def _generate_openapi(
    source: Path, directory: Path, versions: Mapping[str, str], env: Mapping[str, str], run: Callable[[list[str]], None]
) -> dict[str, str]:
    """zz_generated.openapi.go for a tag that lacks it, the way upstream's `make` made it; build from a copy.

    openapi-gen is built in the throw-away module, whose replace lines pin k8s.io/kube-openapi and k8s.io/gengo
    at the tag's versions, with the tag's toolchain, and run there in module mode over the input packages the
    tag's Makefile would give it (harness/local/openapi.py). Its output goes to a scratch dir, then into a
    writable copy of the tag's source, `src/`, which `replace k8s.io/kubernetes => ./src` makes the source the
    components are built from: the tag plus this one file. Its API rule report is compared with the tag's
    known violations, as the Makefile does (a difference is recorded, not fatal: the Makefile's check guards
    the API source, which a tag cannot change).
    """
    try:
        return _generate_openapi_steps(source, directory, versions, env, run)
    except openapi.OpenAPIError as error:
        raise BuildError(f"cannot generate {openapi.OPENAPI_FILE} as upstream did: {error}") from error


def _generate_openapi_steps(
    source: Path, directory: Path, versions: Mapping[str, str], env: Mapping[str, str], run: Callable[[list[str]], None]
) -> dict[str, str]:
    settings = openapi.makefile_settings(source)
    twins = module_dirs(sorted(versions.items()), env, directory)
    # A twin served nowhere (k8s.io/sample-cli-plugin at some tags) cannot be scanned; it is said in the
    # record, and the API rule comparison below shows whether the inputs still match upstream's.
    unscanned = sorted(set(versions) - set(twins))
    packages = openapi.input_packages(source, twins, settings)
    scratch = directory / "openapi-gen"
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir()
    openapi.writable_copy(source, directory / "src")
    run(["go", "mod", "edit", "-replace=k8s.io/kubernetes=./src"])
    run(["go", "build", "-o", str(scratch / "openapi-gen"), "k8s.io/kube-openapi/cmd/openapi-gen"])
    report = scratch / "violations.report"
    boilerplate = openapi.boilerplate_path(source, twins, settings)
    run([str(scratch / "openapi-gen"), *openapi.generator_args(packages, settings, boilerplate, report, scratch)])
    output = scratch / openapi.KUBERNETES / openapi.OPENAPI_FILE
    if not output.is_file():
        raise BuildError(f"openapi-gen wrote no {openapi.OPENAPI_FILE} (see {directory / 'build.log'})")
    shutil.copyfile(output, directory / "src" / openapi.OPENAPI_FILE)
    known = source / settings.known_violations if settings.known_violations else None
    if known is not None and known.is_file() and report.is_file():
        same = report.read_text() == known.read_text()
        check = f"API rule violations {'the same as' if same else 'DIFFER from'} the tag's {settings.known_violations}"
    else:
        check = "API rule violations not compared (no known-violations list in the tag)"
    if unscanned:
        check += f"; staging modules not served, not scanned: {', '.join(unscanned)}"
    generator = _module_version("k8s.io/kube-openapi", env, directory)
    shutil.rmtree(scratch)
    return {
        openapi.OPENAPI_FILE: f"openapi-gen of k8s.io/kube-openapi@{generator}, {len(packages)} input packages; {check}"
    }


def _module_version(module: str, env: Mapping[str, str], cwd: Path) -> str:
    """The version of a module the throw-away module builds with (its replacement's, when replaced)."""
    result = _go(["list", "-m", "-json", module], env, cwd)
    try:
        info = json.loads(result.stdout)
    except json.JSONDecodeError:
        return "unknown"
    return str((info.get("Replace") or {}).get("Version") or info.get("Version") or "unknown")


def build_directory(version: str, tools: Path = TOOLS, policy: str | None = None) -> Path:
    """`.tools/kubernetes/vX.Y.Z/` (the default toolchain policy) or `vX.Y.Z+exact-go/` (GO_TOOLCHAIN=exact)."""
    text = release_text(version)
    return tools / "kubernetes" / (text if (policy or toolchain_policy()) == "minor" else f"{text}+exact-go")


def existing_build(version: str, tools: Path = TOOLS, components: Sequence[str] = LOCAL_COMPONENTS) -> Build | None:
    """The finished build of a release with these components, or None (build.json is written last, by rename)."""
    directory = build_directory(version, tools)
    record = directory / "build.json"
    if not record.is_file() or not all((directory / "bin" / c).is_file() for c in components):
        return None
    return Build(release_text(version), directory, json.loads(record.read_text()))


def build_summary(record: Mapping[str, Any]) -> str:
    """'built with go1.20.14 (upstream's go1.20.8) in 98 s: 412 of 2,540 packages compiled, 2,128 reused'."""
    upstream = record.get("upstream_go")
    toolchain = str(record.get("toolchain", "?"))
    said = f"built with {toolchain}" + (f" (upstream's {upstream})" if upstream and upstream != toolchain else "")
    said += f" in {float(record.get('duration_s') or 0):.0f} s"
    work = record.get("work") or {}
    if "packages_in_build" in work:
        said += (
            f": {work['packages_compiled']:,} of {work['packages_in_build']:,} packages compiled, "
            f"{work['packages_reused']:,} reused from the build cache"
        )
    return said


def check_go() -> str:
    """The host's Go (any release that can switch toolchains, 1.21+); raises BuildError if there is none."""
    go = shutil.which("go")
    if go is None:
        raise BuildError("building Kubernetes needs Go 1.21 or newer on PATH (https://go.dev/dl/)")
    out = subprocess.run([go, "version"], capture_output=True, text=True, check=False).stdout.strip()
    match = re.search(r"go1\.(\d+)", out)
    if not match or int(match[1]) < 21:
        raise BuildError(f"building Kubernetes needs Go 1.21 or newer (toolchain switching); found: {out}")
    return out


def resolve_module(version: str, tools: Path = TOOLS) -> dict[str, Any]:
    """Ask the proxy for k8s.io/kubernetes@version (seconds, cached after): a version it lacks is refused here."""
    text = release_text(version)
    (tools / "go").mkdir(parents=True, exist_ok=True)
    return download_module("k8s.io/kubernetes", text, go_environment(tools), tools / "go")


def build_kubernetes(
    version: str,
    tools: Path = TOOLS,
    log_progress: bool = True,
    stop: threading.Event | None = None,
    components: Sequence[str] = LOCAL_COMPONENTS,
) -> Build:
    """Build (or reuse) these components of one release under .tools/kubernetes/vX.Y.Z/; a finished build of the
    release that lacks some of them gets just those added (its build.json says when).

    A build that does not finish (a failure, Ctrl-C, `stop` set for a build on a background thread: its next or
    running build step then ends) stops its go processes and leaves no binaries and no build.json, so no later
    run takes it for a finished one (a build being added to keeps its own binaries and record); the module and
    build caches stay (Go's own, safe to reuse).
    """
    found = existing_build(version, tools, components)
    if found is not None:
        return found
    directory = build_directory(version, tools)
    before = existing_build(version, tools, ())
    missing = [c for c in components if before is None or not before.binary(c).is_file()]
    try:
        return _build(version, tools, log_progress, stop, missing, before.record if before else None)
    except BaseException:
        if before is None:
            shutil.rmtree(directory / "bin", ignore_errors=True)
            (directory / "build.json").unlink(missing_ok=True)
        else:
            for component in missing:
                (directory / "bin" / component).unlink(missing_ok=True)
        raise


def build_cache_name(toolchain: str) -> str:
    """'go1.20.14' -> 'go1.20': builds share a Go build cache by the Go minor of their toolchain. Its keys name the
    toolchain and each module's version (v0.0.0 for k8s.io/kubernetes and its staging twins here), so the patches
    of a Kubernetes minor, and consecutive minors built with one Go minor, reuse every package that is the same."""
    return ".".join(toolchain.split(".")[:2])


def keep_one_build_cache(tools: Path, name: str) -> list[str]:
    """Before a build, remove the other Go build caches (never "shared"): the disk holds one Go minor's cache
    besides the modules, toolchains and binaries. Another Go minor's cache serves nothing (its keys name another
    toolchain), and a release is built once (its binaries stay). Seen: with bisections and single builds trimming
    nothing, `.tools/go` reached 47 GB with six caches (one 13 GB, from five patches on four Go releases) and left
    8 GB free. The names removed."""
    caches = tools / "go" / "cache"
    removed = (
        sorted(p.name for p in caches.iterdir() if p.is_dir() and p.name not in (name, "shared"))
        if caches.is_dir()
        else []
    )
    for old in removed:
        shutil.rmtree(caches / old, ignore_errors=True)
    return removed


def _build(
    version: str,
    tools: Path,
    log_progress: bool,
    stop: threading.Event | None,
    components: Sequence[str],
    before: dict[str, Any] | None,
) -> Build:
    check_go()
    text = release_text(version)
    env = go_environment(tools)
    policy = toolchain_policy()
    directory = build_directory(version, tools, policy)
    directory.mkdir(parents=True, exist_ok=True)
    module = resolve_module(version, tools)
    source = Path(module["Dir"])
    commit = str((module.get("Origin") or {}).get("Hash") or "unknown")
    upstream_go = upstream_go_version(source)
    toolchain, toolchain_note = choose_toolchain(upstream_go, env, directory, policy)
    cache = build_cache_name(toolchain)
    keep_one_build_cache(tools, cache)
    env = {**env, "GOTOOLCHAIN": toolchain, "GOCACHE": str(go_build_cache(tools, cache))}
    parsed = KubeVersion.parse(text)
    staged = f"v0.{parsed.version.minor}.{parsed.version.micro}" + (text[text.index("-") :] if "-" in text else "")
    kubernetes_go_mod = (source / "go.mod").read_text()
    # The go line (and godebug lines) of k8s.io/kubernetes's own go.mod: a main module's go line sets the
    # binaries' default GODEBUG settings (Go 1.21+), which upstream's builds take from that go.mod.
    directives = main_module_directives(kubernetes_go_mod)
    (directory / "go.mod").write_text(f"module local/plp-kubernetes-build\n\n{directives}")
    (directory / "main.go").write_text("package main\n")  # the module needs a package of its own
    log = directory / "build.log"
    checksum_db = "sum.golang.org (through the proxy)"
    started = time.monotonic()

    versions, substitutions = substitute_refused_twins(
        staging_modules(kubernetes_go_mod), staged, lambda pairs: served_modules(pairs, env, directory)
    )
    generated: dict[str, str] = {}
    with log.open("a" if before is not None else "w") as out:  # (an addition keeps the first build's log)

        def run(command: list[str]) -> None:
            """One step, logged; a checksum-database refusal retried once without it for k8s.io/*."""
            nonlocal env, checksum_db
            out.write("+ " + " ".join(command) + "\n")
            out.flush()
            done = _run_logged(command, directory, env, out, stop)
            if done != 0 and "verifying " in log.read_text() and "sumdb" in log.read_text():
                # The proxy's checksum database does not know some published staging tags (seen for
                # k8s.io/*@v0.26.6): build again without it for k8s.io/*, and say so in build.json.
                checksum_db = "off for k8s.io/* (the checksum database answered 404 for some staging modules)"
                env = {**env, "GONOSUMDB": "k8s.io"}
                out.write(f"+ retry with GONOSUMDB=k8s.io: {checksum_db}\n")
                out.flush()
                done = _run_logged(command, directory, env, out, stop)
            if done != 0:
                tail = "\n".join(log.read_text().splitlines()[-20:])
                what = " ".join(command[:2]) if command[0] == "go" else Path(command[0]).name
                raise BuildError(f"building Kubernetes {text} failed ({what}); last lines of {log}:\n{tail}")

        for module_path, substitute in sorted(substitutions.items()):
            out.write(f"+ {module_path}@{staged} is not served: {substitute} instead\n")
        # k8s.io/kubernetes and its staging twins are built from their directories in the module cache, as
        # v0.0.0 of their module paths: the compile cache's key names a module's version (with -trimpath), so a
        # package a patch did not change keeps its key from one patch of the minor to the next.
        # (Through links in ./modules/: a directory with an '@' in its path cannot be a replacement.)
        twins = module_links(
            directory,
            {"k8s.io/kubernetes": source, **module_dirs(sorted(versions.items()), env, directory)},
            staging=sorted(versions),
        )
        for replacement in _replacements(kubernetes_go_mod, versions, twins):
            run(["go", "mod", "edit", f"-replace={replacement}"])
        kubernetes = twins["k8s.io/kubernetes"]
        run(["go", "mod", "edit", "-require=k8s.io/kubernetes@v0.0.0", f"-replace=k8s.io/kubernetes={kubernetes}"])
        if openapi.lacks_openapi(source):
            generated = _generate_openapi(source, directory, versions, env, run)
        built_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        packages = [f"k8s.io/kubernetes/cmd/{c}" for c in components]
        if log_progress:
            print(f"building Kubernetes {text} ({', '.join(components)}) with {toolchain} (log: {log})", flush=True)
        trace = directory / "build-trace.json"
        out.flush()
        build_started_at = log.stat().st_size
        watch: contextlib.AbstractContextManager[object] = (
            build_watch.Progress(log, build_started_at, lambda: packages_of_minor(tools, parsed.minor))
            if log_progress
            else contextlib.nullcontext()
        )
        with watch:
            flags = ["-v", f"-debug-trace={trace}", "-trimpath", "-ldflags", ldflags(text, commit, built_at)]
            run(["go", "build", *flags, "-o", "bin/", *packages])
        with log.open(errors="replace") as read_back:
            read_back.seek(build_started_at)
            work = build_watch.trace_summary(trace, build_watch.compiled_packages(read_back.read()))
        trace.unlink(missing_ok=True)
    record = {
        "version": text,
        "commit": commit,
        "module_sum": module.get("Sum"),
        "toolchain": toolchain,
        "toolchain_policy": policy,
        "toolchain_note": toolchain_note,
        "upstream_go": f"go{upstream_go}",
        "staging_modules": staged,
        "staging_substitutions": substitutions,
        "generated": generated,
        "cgo": False,
        "checksum_database": checksum_db,
        "built_at": built_at,
        "duration_s": round(time.monotonic() - started, 1),
        # packages in the build, compiled, reused from the build cache; compile seconds summed; each link's
        "work": work,
        "host_go": check_go(),
        "components": list(components),
        "how": "go build of k8s.io/kubernetes@" + text + " from the Go module proxy (harness/local/build.py)",
    }
    if before is not None:  # components added to a finished build: its record, and when these were added
        added = {k: record[k] for k in ("built_at", "duration_s", "toolchain", "staging_substitutions", "work")}
        record = {
            **before,
            "components": [*before.get("components", []), *components],
            "added": [*before.get("added", []), {"components": list(components), **added}],
        }
    partial = directory / "build.json.partial"  # renamed when whole: existing_build() trusts build.json
    partial.write_text(json.dumps(record, indent=1) + "\n")
    partial.replace(directory / "build.json")
    return Build(text, directory, record)
