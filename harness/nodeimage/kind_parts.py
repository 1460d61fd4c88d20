"""kind's own node components (containerd, runc, crictl, the CNI plugins) built here from their Go modules.

What a kind release puts into its node images is committed data (harness/kind_components.yaml, read in kind's
images/base at the commit its base image was built from). Each component is built once per version into
`.tools/kind-parts/<component>-<version>/` (the binaries, `build.json`, `build.log`), the way kind's base image
Dockerfile builds it, but from the module zip the Go module proxy serves (unpacked and built as the main module:
`go install` refuses their `exclude` directives) instead of a git clone:

- containerd: `containerd`, `ctr` (cgo, kind's build tags no_aufs no_zfs no_btrfs no_devmapper) and
  `containerd-shim-runc-v2` (cgo off, as containerd's Makefile builds it), version and revision stamped as
  its Makefile does;
- runc: cgo with libseccomp (Debian's libseccomp-dev, through pkg-config), `-buildmode=pie`, tags
  `seccomp urfave_cli_no_docs` (runc's Makefile defaults);
- crictl: `./cmd/crictl` of `sigs.k8s.io/cri-tools`, its version stamped;
- CNI plugins: host-local, loopback, ptp and portmap, the four kind ships.

Each with the Go that kind's .go-version names for that release (GOTOOLCHAIN=go<that>+auto: a module whose
go.mod asks for a newer Go gets it; where the proxy refuses that Go, the newest patch of its minor that it serves,
said). Where the proxy refuses the version kind pins, the nearest version it serves
is built and the substitution recorded; a version asked for explicitly (CONTAINERD=...) is built exactly or
refused. kindnetd (sigs.k8s.io/kind/images/kindnetd) and kind's storage provisioner are not served at all: a node
image names its substitute (the suite's ptp network; no provisioner).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from packaging.version import InvalidVersion, Version

from harness.base.errors import one_line
from harness.base.paths import TOOLS
from harness.gobuild.go import BuildError, go_environment, log_tail, logged_step, run_go
from harness.gobuild.toolchain import served_toolchains

DATA = Path(__file__).resolve().parents[1] / "kind_components.yaml"
PARTS = "kind-parts"
COMPONENTS = ("containerd", "runc", "crictl", "cni_plugins")
MODULES = {
    "containerd": "github.com/containerd/containerd",
    "runc": "github.com/opencontainers/runc",
    "crictl": "sigs.k8s.io/cri-tools",
    "cni_plugins": "github.com/containernetworking/plugins",
}
CNI_PLUGINS = {"host-local": "./plugins/ipam/host-local", "loopback": "./plugins/main/loopback",
               "ptp": "./plugins/main/ptp", "portmap": "./plugins/meta/portmap"}  # fmt: skip
CONTAINERD_TAGS = "no_aufs no_zfs no_btrfs no_devmapper"  # kind's BUILDTAGS
RUNC_TAGS = "seccomp urfave_cli_no_docs"  # runc's Makefile default BUILDTAGS
NICE = ("nice", "-n", "10")
# What the module proxy answered for kindnetd (tried for the pseudo-versions of kind v0.24.0's and v0.25.0's
# base commits, and for its version list): not served, so no image of the suite carries kind's kindnetd.
KINDNETD_MODULE = "sigs.k8s.io/kind/images/kindnetd"
KINDNETD_NOT_SERVED = f"{KINDNETD_MODULE} is not served by the Go module proxy (its list: 404; pseudo-versions: 403)"


class PartsError(RuntimeError):
    """A component could not be had: refused by the proxy, unknown, or its build failed (the message says which)."""


@dataclass(frozen=True)
class KindRelease:
    """What one kind release's node images carry, as its base image definition says."""

    kind: str
    definition: str
    base_image: str
    debian: str | None
    go: str
    containerd: str | None
    runc: str | None
    crictl: str | None
    cni_plugins: str | None
    pause: str | None
    containerd_config_version: int | None
    kindnetd: str
    storage_provisioner: str | None

    def wanted(self, component: str) -> str | None:
        return {"containerd": self.containerd, "runc": self.runc, "crictl": self.crictl,
                "cni_plugins": self.cni_plugins}[component]  # fmt: skip


@cache
def kind_releases(data: Path = DATA) -> dict[str, KindRelease]:
    """Every kind release whose base definition was read, by release ("v0.25.0")."""
    loaded = yaml.safe_load(data.read_text())
    fields = KindRelease.__dataclass_fields__
    return {entry["kind"]: KindRelease(**{key: entry.get(key) for key in fields}) for entry in loaded["releases"]}


def kind_release(release: str, data: Path = DATA) -> KindRelease:
    """The components of a kind release; PartsError naming the releases known when its definition was not read."""
    known = kind_releases(data)
    if release not in known:
        raise PartsError(
            f"kind {release}: its base image definition was not read (harness/kind_components.yaml has "
            f"{', '.join(known)})"
        )
    return known[release]


def module_for(component: str, version: str) -> str:
    """The Go module of a component at a version: containerd 2.x is github.com/containerd/containerd/v2."""
    module = MODULES[component]
    major = re.match(r"v(\d+)\.", version)
    return f"{module}/v{major[1]}" if major and int(major[1]) >= 2 else module


def normal(version: str) -> str:
    """'2.1.4' or 'v2.1.4' -> 'v2.1.4'."""
    return version if version.startswith("v") else f"v{version}"


def version_key(version: str) -> Version | None:
    """A version text as a comparable Version (a leading v dropped); None when it is none."""
    with contextlib.suppress(InvalidVersion):
        return Version(version.lstrip("v"))
    return None


def nearest(wanted: str, served: list[str]) -> str | None:
    """The served release nearest to `wanted`: the same minor first (closest patch, the newer on a tie), then the
    closest minor of the same major; None when the proxy lists nothing of that major."""
    target = version_key(wanted)
    if target is None:
        return None
    candidates = []
    for version in served:
        key = version_key(version)
        if key is None or key.is_prerelease or key.major != target.major:
            continue
        candidates.append(((abs(key.minor - target.minor), abs(key.micro - target.micro), -key.micro), version))
    return min(candidates)[1] if candidates else None


Go = Callable[[list[str], Mapping[str, str], Path], subprocess.CompletedProcess[str]]


def go_on_proxy(args: list[str], env: Mapping[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The go command that asks the module proxy (tests stand a fake proxy in its place)."""
    return run_go(args, env, cwd)


def download(
    module: str, version: str, env: Mapping[str, str], cwd: Path, go: Go = go_on_proxy
) -> dict[str, Any] | None:
    """`go mod download -json`: the module's info, or None when the proxy refuses that version."""
    result = go(["mod", "download", "-json", f"{module}@{version}"], env, cwd)
    try:
        info: dict[str, Any] = json.loads(result.stdout)
    except json.JSONDecodeError:
        return None
    return None if info.get("Error") or "Dir" not in info else info


def served_versions(module: str, env: Mapping[str, str], cwd: Path, go: Go = go_on_proxy) -> list[str]:
    """The versions the proxy lists for a module (it may serve more than it lists)."""
    result = go(["list", "-m", "-versions", module], env, cwd)
    words = result.stdout.split()
    return words[1:] if words and words[0] == module else []


@dataclass(frozen=True)
class Resolved:
    """The version of a component that will be built, and why it is not the one asked for (empty when it is)."""

    component: str
    module: str
    wanted: str
    version: str
    substitution: str
    info: dict[str, Any]


def parts_environment(tools: Path = TOOLS) -> dict[str, str]:
    return {**go_environment(tools), "GOTOOLCHAIN": "local"}


def resolve(component: str, wanted: str, exact: bool, tools: Path = TOOLS, go: Go = go_on_proxy) -> Resolved:
    """The version to build: `wanted` when the proxy serves it, else (unless `exact`) the nearest served one.

    Raises PartsError, in seconds and before any build, naming what was asked and what is served."""
    wanted = normal(wanted)
    module = module_for(component, wanted)
    env = parts_environment(tools)
    cwd = tools / PARTS
    cwd.mkdir(parents=True, exist_ok=True)
    info = download(module, wanted, env, cwd, go)
    if info is not None:
        return Resolved(component, module, wanted, wanted, "", info)
    served = served_versions(module, env, cwd, go)
    listed = ", ".join(served[-8:]) or "none listed"
    if exact:
        raise PartsError(
            f"{component} {wanted}: the Go module proxy does not serve {module}@{wanted} (it lists {listed})"
        )
    substitute = nearest(wanted, served)
    info = download(module, substitute, env, cwd, go) if substitute else None
    if substitute is None or info is None:
        raise PartsError(f"{component} {wanted}: {module}@{wanted} is not served, nor any release near it ({listed})")
    why = f"{module}@{wanted} is not served by the Go module proxy; {substitute}, the nearest it serves, was built"
    return Resolved(component, module, wanted, substitute, why, info)


@dataclass(frozen=True)
class Part:
    """One built component: its folder (binaries in bin/) and build.json."""

    directory: Path
    record: dict[str, Any]

    def binary(self, name: str) -> Path:
        return self.directory / "bin" / name


def part_directory(component: str, version: str, tools: Path = TOOLS) -> Path:
    return tools / PARTS / f"{component}-{version}"


def existing_part(component: str, version: str, tools: Path = TOOLS) -> Part | None:
    directory = part_directory(component, version, tools)
    record = directory / "build.json"
    if not record.is_file():
        return None
    return Part(directory, json.loads(record.read_text()))


def _commit(info: Mapping[str, Any]) -> str:
    return str((info.get("Origin") or {}).get("Hash") or "")


def declared_module(go_mod: str, served_as: str) -> str:
    """The module path a go.mod declares, which -X needs: cri-tools v1.30.0 is served as sigs.k8s.io/cri-tools but
    declares github.com/kubernetes-sigs/cri-tools (seen: `crictl --version` said "unknown" when stamped by the
    served path)."""
    found = re.search(r"^module\s+(\S+)", go_mod, re.M)
    return found[1] if found else served_as


def _steps(component: str, version: str, module: str, commit: str) -> list[tuple[dict[str, str], list[str]]]:
    """The go build commands (extra environment, argv) of a component, as its upstream Makefile / kind build it;
    `module` is the path its go.mod declares."""
    out = "bin"
    if component == "containerd":
        package = module  # github.com/containerd/containerd or .../v2
        ldflags = (
            f"-s -w -X {package}/version.Version={version} -X {package}/version.Revision={commit}"
            f" -X {package}/version.Package=github.com/containerd/containerd"
        )
        cgo, static = {"CGO_ENABLED": "1"}, {"CGO_ENABLED": "0"}
        return [
            (cgo, ["go", "build", "-tags", CONTAINERD_TAGS, "-ldflags", ldflags, "-o", f"{out}/containerd",
                   "./cmd/containerd"]),
            (cgo, ["go", "build", "-tags", CONTAINERD_TAGS, "-ldflags", ldflags, "-o", f"{out}/ctr", "./cmd/ctr"]),
            (static, ["go", "build", "-tags", CONTAINERD_TAGS, "-ldflags", ldflags, "-o",
                      f"{out}/containerd-shim-runc-v2", "./cmd/containerd-shim-runc-v2"]),
        ]  # fmt: skip
    if component == "runc":
        ldflags = f"-X main.gitCommit={commit} -X main.version={version.lstrip('v')}"
        return [
            ({"CGO_ENABLED": "1"}, ["go", "build", "-trimpath", "-buildmode=pie", "-tags", RUNC_TAGS, "-ldflags",
                                    ldflags, "-o", f"{out}/runc", "."]),
        ]  # fmt: skip
    if component == "crictl":
        ldflags = f"-s -w -X {module}/pkg/version.Version={version}"
        return [({"CGO_ENABLED": "1"}, ["go", "build", "-trimpath", "-ldflags", ldflags, "-o", f"{out}/crictl",
                                         "./cmd/crictl"])]  # fmt: skip
    if component == "cni_plugins":
        ldflags = f"-s -w -X {module}/pkg/utils/buildversion.BuildVersion={version}"
        return [
            ({"CGO_ENABLED": "1"}, ["go", "build", "-trimpath", "-ldflags", ldflags, "-o", f"{out}/{name}", path])
            for name, path in CNI_PLUGINS.items()
        ]
    raise PartsError(f"unknown component {component!r} (known: {', '.join(COMPONENTS)})")


VERSION_COMMANDS = {"containerd": ["containerd", "--version"], "runc": ["runc", "--version"],
                    "crictl": ["crictl", "--version"]}  # fmt: skip


def _sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _make_writable(tree: Path) -> None:
    for path in [tree, *tree.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | stat.S_IWUSR)


def _go_version(env: Mapping[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["go", "version"], cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=600,
                          check=False)  # fmt: skip


def build_toolchain(
    go_version: str,
    env: Mapping[str, str],
    cwd: Path,
    go_version_of: Callable[[Mapping[str, str], Path], subprocess.CompletedProcess[str]] = _go_version,
    served: Callable[[Mapping[str, str], Path], list[str]] = served_toolchains,
) -> tuple[str, str, str]:
    """(GOTOOLCHAIN, the `go version` line it gives, a note or '') for a build with kind's Go (`go_version`, from
    its .go-version): that Go, or, where the module proxy does not serve it, the newest patch of its minor that it
    serves, said in the note (kind v0.22.0 names go1.20.13, which the proxy refuses; it serves go1.20.14).
    PartsError in one line when neither can be had."""
    toolchain = f"go{go_version}+auto" if go_version else "local"
    used = go_version_of({**env, "GOTOOLCHAIN": toolchain}, cwd)
    if used.returncode == 0:
        return toolchain, used.stdout.strip(), ""
    why = one_line(used.stderr.strip()[-300:] or "no answer")
    minor = ".".join(go_version.split(".")[:2])
    with tempfile.TemporaryDirectory() as outside:  # outside any module: in the component's, go list reads its graph
        listed = served(env, Path(outside))
    patches = [v for v in listed if ".".join(v.split(".")[:2]) == minor and v != go_version]
    if go_version and patches:
        nearest = f"go{patches[-1]}+auto"
        retried = go_version_of({**env, "GOTOOLCHAIN": nearest}, cwd)
        if retried.returncode == 0:
            note = f"go{go_version} (kind's) is not served ({why}): built with go{patches[-1]}, the newest go{minor}"
            return nearest, retried.stdout.strip(), note
    raise PartsError(f"{toolchain} could not be had: {why}")


def build_part(resolved: Resolved, go_version: str, tools: Path = TOOLS, say: Callable[[str], None] = print) -> Part:
    """The component at `resolved.version`, built now unless built before (a build.json marks a whole build).

    Built in a writable copy of the module (deleted after: only binaries and records stay), with
    GOTOOLCHAIN=go<go_version>+auto; a failed build leaves no build.json, so it is never reused."""
    if (part := existing_part(resolved.component, resolved.version, tools)) is not None:
        return part
    directory = part_directory(resolved.component, resolved.version, tools)
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    source, log = directory / "src", directory / "build.log"
    shutil.copytree(Path(resolved.info["Dir"]), source)
    _make_writable(source)
    env = {**go_environment(tools), "GOFLAGS": "-mod=mod -buildvcs=false"}
    started = time.monotonic()
    try:
        toolchain, go_line, toolchain_note = build_toolchain(go_version, env, source)
        env["GOTOOLCHAIN"] = toolchain
        if toolchain_note:
            say(f"{resolved.component} {resolved.version}: {toolchain_note}")
        say(f"building {resolved.component} {resolved.version} from {resolved.module} ({toolchain})")
        (directory / "bin").mkdir()
        declared = declared_module((source / "go.mod").read_text(), resolved.module)
        for extra, command in _steps(resolved.component, resolved.version, declared, _commit(resolved.info)):
            command = [*NICE, *command]
            command[command.index("-o") + 1] = str(directory / command[command.index("-o") + 1])
            with log.open("a") as out:
                out.write(f"+ {' '.join(f'{k}={v}' for k, v in extra.items())} {' '.join(command)}\n")
            if logged_step(command, {**env, **extra}, source, log) != 0:
                raise PartsError(
                    f"building {resolved.component} {resolved.version} failed; last lines of {log}:\n{log_tail(log)}"
                )
    except BaseException:
        shutil.rmtree(source, ignore_errors=True)
        shutil.rmtree(directory / "bin", ignore_errors=True)
        raise
    _make_writable(source)
    shutil.rmtree(source)  # third-party source: only the binaries and the record stay
    binaries = sorted((directory / "bin").iterdir())
    version_line = ""
    if resolved.component in VERSION_COMMANDS:
        name, *args = VERSION_COMMANDS[resolved.component]
        shown = subprocess.run([str(directory / "bin" / name), *args], capture_output=True, text=True, check=False)
        version_line = " ".join(shown.stdout.split())
    record = {
        "component": resolved.component,
        "module": resolved.module,
        "version": resolved.version,
        "wanted": resolved.wanted,
        "substitution": resolved.substitution,
        "sum": resolved.info.get("Sum"),
        "commit": _commit(resolved.info) or None,
        "toolchain": go_line,
        "gotoolchain": toolchain,
        **({"toolchain_note": toolchain_note} if toolchain_note else {}),
        "steps": [" ".join(f"{k}={v}" for k, v in extra.items()) + " go " + " ".join(c[1:])
                  for extra, c in _steps(resolved.component, resolved.version, declared, "<commit>")],
        "version_output": version_line,
        "binaries": {path.name: {"sha256": _sha256(path), "size_bytes": path.stat().st_size} for path in binaries},
        "built_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "duration_s": round(time.monotonic() - started, 1),
        "how": "go build in a copy of the module zip the Go module proxy serves (harness/nodeimage/kind_parts.py)",
    }  # fmt: skip
    (directory / "build.json").write_text(json.dumps(record, indent=1) + "\n")
    say(f"built {resolved.component} {resolved.version} in {record['duration_s']} s")
    return Part(directory, record)


def _main() -> None:
    """Build kind's components of one release: python -m harness.nodeimage.kind_parts v0.25.0 [component ...]."""
    import sys

    release = kind_release(sys.argv[1])
    for component in sys.argv[2:] or COMPONENTS:
        wanted = release.wanted(component)
        if wanted is None:
            print(f"{component}: kind {release.kind} names no version")
            continue
        part = build_part(resolve(component, wanted, exact=False), release.go)
        print(json.dumps({k: part.record[k] for k in ("component", "version", "substitution", "duration_s")}))


if __name__ == "__main__":
    try:
        _main()
    except (PartsError, BuildError) as error:
        raise SystemExit(str(error)) from None
