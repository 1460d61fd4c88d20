"""etcd and CoreDNS, the two control-plane images kubeadm asks for that Kubernetes does not build, from Go modules.

Built once per version into `.tools/addons/<name>-<version>/` (the binary, `build.json`, `build.log`), with the
Go caches of harness/gobuild/, cgo off, `-trimpath -ldflags '-s -w'` like the upstream release builds.

- etcd: `go.etcd.io/etcd/server/v3` is the release's `etcd` binary (etcd 3.5's build.sh runs `go build` in
  `server/`), but its go.mod replaces the sibling modules with `../api`, `../client/v3`, ..., so it cannot be
  `go install`ed. A throw-away main module requires it and the siblings (api/v3, client/pkg/v3, client/v3,
  pkg/v3, raft/v3 at the same version, client/v2 at v2.305.<patch>) and builds the package by its path.
  The image tag kubeadm names (`3.5.7-0`) is the module version without its `-N` image revision.
  etcd 3.4 (kubeadm's `3.4.13-0`, Kubernetes 1.21) is one module, `go.etcd.io/etcd`, whose root package is the
  `etcd` binary; its go.mod lacks the `/v3` a v3 tag needs, so the proxy serves its tags under no version, only
  pseudo-versions of commits. ETCD34_COMMITS names, per release, a served commit whose `etcd` is the tag's (the
  tree's version/version.go is checked to say so); a throw-away main module requires it and builds the root.
- CoreDNS: `github.com/coredns/coredns@v1.10.1` lists `inet.af/netaddr` in its go.mod, which the module proxy
  refuses (403). Its only importer (dd-trace-go's `ip_default.go`) is `//go:build !go1.19`, so nothing built
  with Go >= 1.19 compiles it: a copy of the module with that go.mod line removed is built in place
  (`-mod=mod`). The removed lines are recorded in build.json.

Toolchain: go1.20.14 (cached here; upstream used go1.17.13 for etcd 3.5.7 and go1.19/1.18 for CoreDNS,
neither of which GOTOOLCHAIN can fetch as a module), or for a release whose go.mod names a newer Go (CoreDNS
v1.14.6: 1.25.0) the newest served patch of that Go minor. build.json says which one built what.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.base.paths import TOOLS
from harness.gobuild.go import (
    BuildError,
    build_cache_budget,
    go_environment,
    go_minor,
    log_tail,
    logged_step,
    trim_cache_to,
)
from harness.gobuild.modules import download_module
from harness.gobuild.toolchain import SUITE_TOOLCHAIN, choose_toolchain

TOOLCHAIN = SUITE_TOOLCHAIN
ETCD_MODULE = "go.etcd.io/etcd/server/v3"
ETCD34_MODULE = "go.etcd.io/etcd"
ETCD34_COMMITS = {
    # What Kubernetes 1.21's go.mod requires ("ae9734ed278b is the SHA for git tag v3.4.13"): dd1b699 is the tag
    # plus one commit, f44aaf8, which changes only integration tests (clientv3/integration/watch_test.go,
    # integration/cluster.go), none of which the etcd binary compiles. The proxy serves neither the tag nor ae9734e.
    "v3.4.13": "v0.5.0-alpha.5.0.20200910180754-dd1b699fc489",
}
# The sibling modules etcd's server module replaces with ../ paths: required here at the server's version, except
# client/v2 (3.5 only), tagged v2.305.N. Read from its go.mod: 3.5 has api, client/pkg, client/v2, client/v3, pkg
# and raft; 3.6 on drops client/v2 and raft (go.etcd.io/raft/v3 is a dependency of its own, at its own version).
_ETCD_SIBLING = re.compile(r"^[ \t]*(?:replace[ \t]+)?(go\.etcd\.io/etcd/\S+)[ \t]+=>[ \t]+\.\./", re.M)


def etcd_siblings(server_go_mod: str, version: str) -> list[tuple[str, str]]:
    """(module, version) of each sibling etcd's server go.mod maps to ../, as a build outside its tree needs them."""
    patch = version.rsplit(".", 1)[1]
    return [
        (module, f"v2.305.{patch}" if module.endswith("/client/v2") else version)
        for module in _ETCD_SIBLING.findall(server_go_mod)
    ]


COREDNS_MODULE = "github.com/coredns/coredns"
# go.mod lines of CoreDNS that name modules the proxy refuses and that no Go >= 1.19 build compiles.
COREDNS_DROPPED = ("inet.af/netaddr",)
NICE = ("nice", "-n", "10")


class AddonBuildError(RuntimeError):
    """An addon binary could not be built; the message says why (the proxy's answer or the log's last lines)."""


@dataclass(frozen=True)
class Addon:
    """One built addon binary and its record."""

    name: str  # "etcd" or "coredns"
    version: str  # the module version: "v3.5.7", "v1.10.1"
    directory: Path
    record: dict[str, Any]

    @property
    def binary(self) -> Path:
        return self.directory / self.name


def etcd_module_version(image_tag: str) -> str:
    """'3.5.7-0' (kubeadm's etcd image tag) -> 'v3.5.7'."""
    match = re.fullmatch(r"v?(3\.\d+\.\d+)(?:-\d+)?", image_tag)
    if not match:
        raise AddonBuildError(f"unexpected etcd image tag {image_tag!r} (expected e.g. 3.5.7-0)")
    return f"v{match[1]}"


def coredns_module_version(image_tag: str) -> str:
    """'v1.10.1' (kubeadm's CoreDNS image tag; '1.8.0' before 1.22 had no v) -> 'v1.10.1'."""
    match = re.fullmatch(r"v?(1\.\d+\.\d+)", image_tag)
    if not match:
        raise AddonBuildError(f"unexpected CoreDNS image tag {image_tag!r} (expected e.g. v1.10.1)")
    return f"v{match[1]}"


def addon_directory(name: str, version: str, tools: Path = TOOLS) -> Path:
    return tools / "addons" / f"{name}-{version}"


def existing_addon(name: str, version: str, tools: Path = TOOLS) -> Addon | None:
    directory = addon_directory(name, version, tools)
    record = directory / "build.json"
    if not record.is_file() or not (directory / name).is_file():
        return None
    return Addon(name, version, directory, json.loads(record.read_text()))


def _go_line(info: Mapping[str, Any]) -> str:
    """The `go` line of a downloaded module's go.mod ('1.25.0'), or '' when it has none or none was read."""
    with contextlib.suppress(OSError, KeyError, TypeError):
        found = re.search(r"^go[ \t]+(\d+\.\d+(?:\.\d+)?)[ \t]*$", Path(info["GoMod"]).read_text(), re.M)
        return found[1] if found else ""
    return ""


def addon_toolchain(go_line: str, env: Mapping[str, str], cwd: Path) -> str:
    """The Go that builds an addon: the suite's go1.20.14 while the module's go line allows it, else the newest
    served patch of the Go minor it names (seen: CoreDNS v1.14.6, for Kubernetes 1.37, says `go 1.25.0`, which
    go1.20 cannot even parse)."""
    wanted, suite = go_minor(go_line), go_minor(TOOLCHAIN)
    if wanted is None or suite is None or wanted <= suite:
        return TOOLCHAIN
    try:
        return choose_toolchain(go_line, env, cwd, "minor")[0]
    except BuildError as error:
        raise AddonBuildError(str(error)) from None


def _module(module: str, version: str, env: Mapping[str, str], cwd: Path) -> dict[str, Any]:
    try:
        return download_module(module, version, env, cwd)
    except BuildError as error:
        raise AddonBuildError(str(error)) from None


def _steps(name: str, version: str, steps: list[tuple[list[str], Path]], env: Mapping[str, str], log: Path) -> None:
    for command, cwd in steps:
        with log.open("a") as out:
            out.write("+ " + " ".join(command) + "\n")
        if logged_step(command, env, cwd, log) != 0:
            raise AddonBuildError(
                f"building {name} {version} failed ({' '.join(command[:4])} ...); last lines of {log}:\n{log_tail(log)}"
            )


def _built_once(
    name: str,
    module: str,
    version: str,
    tools: Path,
    image_tag: str,
    build: Callable[[_Workspace, str], Addon],
    module_version: str = "",
) -> Addon:
    """The addon built before, else `build` in a fresh workspace for it (its module at `module_version`, else
    `version`)."""
    return existing_addon(name, version, tools) or build(
        _Workspace.begin(name, version, module, tools, module_version), image_tag
    )


@dataclass
class _Workspace:
    """An addon build under way: its folder, Go environment, log, start, and its module as downloaded."""

    name: str
    version: str
    module: str
    directory: Path
    env: dict[str, str]
    log: Path
    started: float
    info: dict[str, Any]

    @classmethod
    def begin(cls, name: str, version: str, module: str, tools: Path, module_version: str = "") -> _Workspace:
        """An empty log in the addon's folder, and its module downloaded (at `module_version`, else `version`)."""
        directory = addon_directory(name, version, tools)
        directory.mkdir(parents=True, exist_ok=True)
        env = {**go_environment(tools), "GOTOOLCHAIN": TOOLCHAIN}
        log = directory / "build.log"
        log.write_text("")
        started = time.monotonic()
        info = _module(module, module_version or version, env, directory)
        env["GOTOOLCHAIN"] = addon_toolchain(_go_line(info), env, directory)
        # the shared build cache (these and the suite's other small Go tools, with several toolchains) is bounded
        # as a Kubernetes build's is (seen: 6.8 GB after etcd and CoreDNS for 14 releases)
        trim_cache_to(Path(env["GOCACHE"]), int(build_cache_budget() * 1e9))
        return cls(name, version, module, directory, env, log, started, info)

    def finish(self, image_tag: str, ldflags: str, how: str, **particulars: Any) -> Addon:
        """Check the binary is there and write build.json: what was built, from what and how."""
        binary = self.directory / self.name
        if not binary.is_file():
            raise AddonBuildError(f"building {self.name} {self.version} left no binary at {binary}")
        record = {
            "name": self.name,
            "image_tag": image_tag,
            "module": self.module,
            "version": self.version,
            "module_version": self.info.get("Version", self.version),  # etcd 3.4's is a pseudo-version
            "sum": self.info.get("Sum"),
            "commit": _commit(self.info),
            **particulars,
            "toolchain": self.env["GOTOOLCHAIN"],
            "cgo": False,
            "ldflags": ldflags,
            "built_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "how": how,
            "duration_s": round(time.monotonic() - self.started, 1),
            "size_bytes": binary.stat().st_size,
        }
        (self.directory / "build.json").write_text(json.dumps(record, indent=1) + "\n")
        return Addon(self.name, self.version, self.directory, record)


def _commit(info: Mapping[str, Any]) -> str | None:
    """The commit the proxy reports (its .info often has no Origin), else a pseudo-version's revision."""
    commit = (info.get("Origin") or {}).get("Hash")
    if commit:
        return str(commit)
    pseudo = re.fullmatch(r"v\d+\.\d+\.\d+-(?:.*\.)?\d{14}-([0-9a-f]{12})", str(info.get("Version", "")))
    return pseudo[1] if pseudo else None


def _ldflags(info: Mapping[str, Any], variable: str) -> str:
    """-s -w, plus the commit in `variable` when it is known."""
    commit = _commit(info)
    return f"-s -w -X {variable}={commit[:10]}" if commit else "-s -w"


def build_etcd(image_tag: str, tools: Path = TOOLS) -> Addon:
    """etcd for kubeadm's image tag (e.g. '3.5.7-0'), built once: ETCD_MODULE, or ETCD34_MODULE for 3.4."""
    version = etcd_module_version(image_tag)
    if not version.startswith("v3.4."):
        return _built_once("etcd", ETCD_MODULE, version, tools, image_tag, _build_etcd)
    if version not in ETCD34_COMMITS:
        raise AddonBuildError(
            f"etcd {version}: the proxy serves etcd 3.4 only at pseudo-versions, and the suite knows one only for"
            f" {', '.join(ETCD34_COMMITS)} (add the commit of the tag, or one whose etcd binary is the tag's, to"
            " ETCD34_COMMITS in harness/nodeimage/addons.py)"
        )
    return _built_once("etcd", ETCD34_MODULE, version, tools, image_tag, _build_etcd34, ETCD34_COMMITS[version])


def _build_etcd(work: _Workspace, image_tag: str) -> Addon:
    directory, env, log, info, version = work.directory, work.env, work.log, work.info, work.version
    requires = etcd_siblings(Path(info.get("GoMod") or Path(info["Dir"]) / "go.mod").read_text(), version)
    (directory / "go.mod").write_text("module local/plp-etcd-build\n\ngo 1.17\n")
    (directory / "main.go").write_text("package main\n")  # the module needs a package of its own
    ldflags = _ldflags(info, "go.etcd.io/etcd/api/v3/version.GitSHA")
    steps: list[tuple[list[str], Path]] = [
        (["go", "mod", "edit", f"-require={m}@{v}"], directory) for m, v in [(ETCD_MODULE, version), *requires]
    ]
    steps.append(([*NICE, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", "etcd", ETCD_MODULE], directory))
    _steps("etcd", version, steps, env, log)
    how = (
        f"go build of {ETCD_MODULE}@{version} from a throw-away main module requiring it and its siblings"
        " (its go.mod replaces them with ../ paths, so go install cannot build it) (harness/nodeimage/addons.py)"
    )
    return work.finish(image_tag, ldflags, how, siblings=dict(requires))


def _build_etcd34(work: _Workspace, image_tag: str) -> Addon:
    directory, env, log, info, version = work.directory, work.env, work.log, work.info, work.version
    version_go = Path(info["Dir"]) / "version" / "version.go"
    says = re.search(r'\bVersion\s*=\s*"([^"]+)"', version_go.read_text()) if version_go.is_file() else None
    if says is None or f"v{says[1]}" != version:
        raise AddonBuildError(
            f"{ETCD34_MODULE}@{info.get('Version')} is not etcd {version}: its version/version.go says"
            f" {says[1] if says else 'nothing'}"
        )
    (directory / "go.mod").write_text("module local/plp-etcd-build\n\ngo 1.17\n")
    (directory / "main.go").write_text("package main\n")  # the module needs a package of its own
    ldflags = _ldflags(info, "go.etcd.io/etcd/version.GitSHA")
    steps: list[tuple[list[str], Path]] = [
        (["go", "mod", "edit", f"-require={ETCD34_MODULE}@{info['Version']}"], directory),
        ([*NICE, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", "etcd", ETCD34_MODULE], directory),
    ]
    _steps("etcd", version, steps, env, log)
    how = (
        f"go build of {ETCD34_MODULE}@{info['Version']} (etcd {version}: the proxy serves etcd 3.4 at no tag; see"
        " ETCD34_COMMITS) from a throw-away main module requiring it (harness/nodeimage/addons.py)"
    )
    return work.finish(image_tag, ldflags, how)


def build_coredns(image_tag: str, tools: Path = TOOLS) -> Addon:
    """CoreDNS for kubeadm's image tag (e.g. 'v1.10.1'), built once from a copy of its module."""
    return _built_once("coredns", COREDNS_MODULE, coredns_module_version(image_tag), tools, image_tag, _build_coredns)


def _build_coredns(work: _Workspace, image_tag: str) -> Addon:
    source = work.directory / "src"
    directory, env, log, info, version = work.directory, work.env, work.log, work.info, work.version
    if source.exists():
        _make_writable(source)
        shutil.rmtree(source)
    shutil.copytree(Path(info["Dir"]), source)
    _make_writable(source)
    go_mod = source / "go.mod"
    kept: list[str] = []
    dropped: list[str] = []
    for line in go_mod.read_text().splitlines(keepends=True):
        (dropped if line.split() and line.split()[0] in COREDNS_DROPPED else kept).append(line)
    go_mod.write_text("".join(kept))
    with log.open("a") as out:
        out.write("".join(f"+ removed from go.mod: {line.strip()}\n" for line in dropped))
    ldflags = _ldflags(info, "github.com/coredns/coredns/coremain.GitCommit")
    command = [
        *NICE,
        "go",
        "build",
        "-mod=mod",
        "-trimpath",
        "-ldflags",
        ldflags,
        "-o",
        str(directory / "coredns"),
        ".",
    ]
    _steps("coredns", version, [(command, source)], env, log)
    _make_writable(source)
    shutil.rmtree(source)  # third-party source: only the binary and the record stay
    how = (
        f"go build -mod=mod in a copy of {COREDNS_MODULE}@{version}"
        + (
            " whose go.mod lost the lines the proxy refuses and Go >= 1.19 never compiles"
            if dropped
            else " (its go.mod as published)"
        )
        + " (harness/nodeimage/addons.py)"
    )
    return work.finish(image_tag, ldflags, how, go_mod_lines_removed=[line.strip() for line in dropped])


def _make_writable(tree: Path) -> None:
    """The module cache is read-only; a copy of it must be made writable to edit or delete it."""
    for path in [tree, *tree.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
