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
Makefile does (harness/gobuild/openapi.py) into a writable copy of the tag's source, `src/`, and
`replace k8s.io/kubernetes => ./src` builds from that copy: the tag plus this one file, said in build.json.

Everything lands in `.tools/` (ignored by git): the module and build caches under `.tools/go/`, the binaries,
`build.json` (toolchain, commit, duration) and `build.log` under `.tools/kubernetes/vX.Y.Z/`.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.base.paths import TOOLS
from harness.base.versions import KubeVersion, Release, VersionError
from harness.gobuild import openapi, openapi_build, progress
from harness.gobuild.go import (
    BuildError,
    BuildStopped,
    build_cache_budget,
    build_cache_name,
    check_go,
    compiler_gc,
    go_build_cache,
    go_environment,
    run_step,
    trim_build_caches,
    trim_cache_to,
)
from harness.gobuild.modules import (
    download_errors,
    download_module,
    listed_module_answers,
    lookup_failure,
    module_dirs,
    module_links,
    served_modules,
    served_versions,
)
from harness.gobuild.not_built import failure_lines, remember_not_built
from harness.gobuild.staging import (
    main_module_directives,
    replacements,
    required_staging_modules,
    staging_modules,
    substitute_refused_twins,
    twin_version,
)
from harness.gobuild.standins import place_stand_ins, stand_ins_needed
from harness.gobuild.toolchain import choose_toolchain, toolchain_policy, upstream_go_version

# What a local cluster runs; a kind node image also holds kubectl, kubeadm and kube-proxy, built when one is first
# asked for (a release's build grows by them). Those three add 288 of 2536 packages (cmd/kubectl 192, kubeadm 164,
# kube-proxy 27 of their own; `go list -deps` at v1.35.8) and three large links to every build.
LOCAL_COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet")
NODE_IMAGE_COMPONENTS = (*LOCAL_COMPONENTS, "kubectl", "kubeadm", "kube-proxy")
_STAMPED_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")


# The oldest release a build here can make (CLUSTER=local, node images from modules); kind runs older pinned images.
OLDEST_BUILT_HERE = KubeVersion.parse("1.21.0-alpha.0")


@dataclass(frozen=True)
class Build:
    """Binaries of one Kubernetes version, and how they were made."""

    version: str  # "v1.27.3"
    directory: Path
    record: dict[str, Any]

    def binary(self, component: str) -> Path:
        return self.directory / "bin" / component


def release_text(release: Release) -> str:
    """1.27.3 -> 'v1.27.3', the tag a build takes; a minor alone (a build needs one release) or a release older than
    this host builds is refused (VersionError)."""
    release.whole("build")
    if release.version < OLDEST_BUILT_HERE.version:
        raise VersionError(
            f"Kubernetes {release} cannot be built here: the oldest release built from Go modules is "
            f"{OLDEST_BUILT_HERE.minor} (the build reads the tag's Go release from build/build-image/cross/VERSION, "
            "which names it from 1.21 on; 1.19.16's does not); 1.19 and 1.20 run on their pinned kind images"
        )
    return release.tag


def packages_of_minor(tools: Path, minor: str) -> int | None:
    """How many packages the newest finished build of this minor had (an estimate for a build's progress)."""
    counts = []
    for record in (tools / "kubernetes").glob(f"v{minor}.*/build.json"):
        with contextlib.suppress(OSError, ValueError):
            work = json.loads(record.read_text()).get("work") or {}
            if isinstance(work.get("packages_in_build"), int):
                counts.append((record.stat().st_mtime, work["packages_in_build"]))
    return max(counts)[1] if counts else None


def twins_served_nowhere(release: Release, tools: Path = TOOLS) -> list[str]:
    """The staging modules a release requires that the proxy serves neither at the tag's twin version nor at any
    version the build would substitute (substitute_refused_twins): the release cannot be built here. Seen at
    v1.38.0-alpha.0: k8s.io/kube-proxy and k8s.io/cri-streaming (a new minor has no v0.38 release to take).
    Asks the proxy for the tag's go.mod and the twins' .info, downloading no source."""
    text = release_text(release)
    (answer,) = listed_module_answers([("k8s.io/kubernetes", text)], tools) or [{"Error": {"Err": "no answer"}}]
    if answer.get("Error") or not answer.get("GoMod"):
        error = answer.get("Error")
        raise BuildError(
            lookup_failure("k8s.io/kubernetes", text, str(error.get("Err") if isinstance(error, dict) else error))
        )
    go_mod = Path(answer["GoMod"]).read_text()
    staged = twin_version(text)
    modules = required_staging_modules(go_mod)
    served: set[tuple[str, str]] = set()

    def ask(pairs: list[tuple[str, str]]) -> set[tuple[str, str]]:
        served.update(served_versions(pairs, tools))
        return served & set(pairs)

    _, substitutions = substitute_refused_twins(modules, staged, ask)
    return sorted(m for m in modules if m not in substitutions and (m, staged) not in served)


def ldflags(release: Release, commit: str, built_at: str) -> str:
    minor = str(release.version.minor)
    flags = ["-s", "-w"]
    for package in _STAMPED_PACKAGES:
        for key, value in (
            ("gitVersion", release.tag),
            ("gitMajor", "1"),
            ("gitMinor", minor),
            ("gitCommit", commit),
            ("gitTreeState", "clean"),
            ("buildDate", built_at),
        ):
            flags.append(f"-X {package}.{key}={value}")
    return " ".join(flags)


def build_directory(release: Release, tools: Path = TOOLS, policy: str | None = None) -> Path:
    """`.tools/kubernetes/vX.Y.Z/` (the default toolchain policy) or `vX.Y.Z+exact-go/` (GO_TOOLCHAIN=exact)."""
    text = release_text(release)
    return tools / "kubernetes" / (text if (policy or toolchain_policy()) == "minor" else f"{text}+exact-go")


def existing_build(release: Release, tools: Path = TOOLS, components: Sequence[str] = LOCAL_COMPONENTS) -> Build | None:
    """The finished build of a release with these components, or None (build.json is written last, by rename)."""
    directory = build_directory(release, tools)
    record = directory / "build.json"
    if not record.is_file() or not all((directory / "bin" / c).is_file() for c in components):
        return None
    return Build(release_text(release), directory, json.loads(record.read_text()))


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


def resolve_module(release: Release, tools: Path = TOOLS) -> dict[str, Any]:
    """Ask the proxy for k8s.io/kubernetes@release (seconds, cached after): a release it lacks is refused here."""
    text = release_text(release)
    (tools / "go").mkdir(parents=True, exist_ok=True)
    try:
        return download_module("k8s.io/kubernetes", text, go_environment(tools), tools / "go")
    except BuildError as err:  # refused (403) or unknown: remembered for `make coverage PLAN=1`, as a failed build is
        remember_not_built(release, str(err), tools)
        raise


def build_kubernetes(
    release: Release,
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
    found = existing_build(release, tools, components)
    if found is not None:
        return found
    directory = build_directory(release, tools)
    before = existing_build(release, tools, ())
    missing = [c for c in components if before is None or not before.binary(c).is_file()]
    try:
        built = _build(release, tools, log_progress, stop, missing, before.record if before else None)
        remember_not_built(release, None, tools)
        return built
    except BaseException as err:
        if isinstance(err, BuildError) and not isinstance(err, BuildStopped):
            remember_not_built(release, str(err), tools)
        if before is None:
            shutil.rmtree(directory / "bin", ignore_errors=True)
            (directory / "build.json").unlink(missing_ok=True)
        else:
            for component in missing:
                (directory / "bin" / component).unlink(missing_ok=True)
        raise


def _build(
    release: Release,
    tools: Path,
    log_progress: bool,
    stop: threading.Event | None,
    components: Sequence[str],
    before: dict[str, Any] | None,
) -> Build:
    check_go()
    text = release_text(release)
    env = go_environment(tools)
    policy = toolchain_policy()
    directory = build_directory(release, tools, policy)
    directory.mkdir(parents=True, exist_ok=True)
    module = resolve_module(release, tools)
    source = Path(module["Dir"])
    commit = str((module.get("Origin") or {}).get("Hash") or "unknown")
    upstream_go = upstream_go_version(source)
    toolchain, toolchain_note = choose_toolchain(upstream_go, env, directory, policy)
    cache = build_cache_name(toolchain)
    trim_build_caches(tools, cache)
    budget_gb = build_cache_budget()
    trimmed, cache_bytes = trim_cache_to(go_build_cache(tools, cache), int(budget_gb * 1e9))
    gc = compiler_gc(toolchain)
    env = {**env, "GOTOOLCHAIN": toolchain, "GOCACHE": str(go_build_cache(tools, cache)), **gc}
    parsed = release.kube
    staged = twin_version(text)
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
            done = run_step(command, directory, env, out, stop)
            if done != 0 and "verifying " in log.read_text() and "sumdb" in log.read_text():
                # The proxy's checksum database does not know some published staging tags (seen for
                # k8s.io/*@v0.26.6): build again without it for k8s.io/*, and say so in build.json.
                checksum_db = "off for k8s.io/* (the checksum database answered 404 for some staging modules)"
                env = {**env, "GONOSUMDB": "k8s.io"}
                out.write(f"+ retry with GONOSUMDB=k8s.io: {checksum_db}\n")
                out.flush()
                done = run_step(command, directory, env, out, stop)
            if done != 0:
                what = " ".join(command[:2]) if command[0] == "go" else Path(command[0]).name
                raise BuildError(f"building Kubernetes {text} failed ({what}); {failure_lines(log)}")

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
        for replacement in replacements(kubernetes_go_mod, versions, twins):
            run(["go", "mod", "edit", f"-replace={replacement}"])
        # A module the proxy refuses at every version, which the components use in no way a claim depends on:
        # built with the minimal stand-in written here (harness/gobuild/standins.py), said in build.json.
        needed = stand_ins_needed(kubernetes_go_mod, components, lambda pairs: download_errors(pairs, env, directory))
        for module_path, stand_in_directory in sorted(place_stand_ins(needed, directory).items()):
            out.write(f"+ {module_path} is refused by the Go module proxy: the stand-in written here instead\n")
            run(["go", "mod", "edit", f"-replace={module_path}={stand_in_directory}"])
        stand_ins = {pinned: stand_in.what for pinned, stand_in in sorted(needed.items())}
        kubernetes = twins["k8s.io/kubernetes"]
        run(["go", "mod", "edit", "-require=k8s.io/kubernetes@v0.0.0", f"-replace=k8s.io/kubernetes={kubernetes}"])
        if openapi.lacks_openapi(source):
            generated = openapi_build.generate_openapi(source, directory, versions, env, run)
        built_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        packages = [f"k8s.io/kubernetes/cmd/{c}" for c in components]
        if log_progress:
            print(f"building Kubernetes {text} ({', '.join(components)}) with {toolchain} (log: {log})", flush=True)
        trace = directory / "build-trace.json"
        out.flush()
        build_started_at = log.stat().st_size
        watch: contextlib.AbstractContextManager[object] = (
            progress.Progress(log, build_started_at, lambda: packages_of_minor(tools, parsed.minor))
            if log_progress
            else contextlib.nullcontext()
        )
        with watch:
            flags = ["-v", f"-debug-trace={trace}", "-trimpath", "-ldflags", ldflags(release, commit, built_at)]
            run(["go", "build", *flags, "-o", "bin/", *packages])
        with log.open(errors="replace") as read_back:
            read_back.seek(build_started_at)
            work = progress.trace_summary(trace, progress.compiled_packages(read_back.read()))
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
        # modules the proxy refuses at every version, built from the stand-ins written here (empty: none)
        "module_stand_ins": stand_ins,
        "generated": generated,
        "cgo": False,
        "compiler_gc": gc or "Go's defaults",  # go.py compiler_gc: speed only, the same binaries
        "checksum_database": checksum_db,
        "built_at": built_at,
        "duration_s": round(time.monotonic() - started, 1),
        # packages in the build, compiled, reused from the build cache; compile seconds summed; each link's
        "work": work,
        # the Go build cache it used (before the build, after its least recently used entries beyond the bound went)
        "build_cache": {
            "name": cache,
            "size_gb_before": round(cache_bytes / 1e9, 2),
            "trimmed_gb": round(trimmed / 1e9, 2),
            "bound_gb": budget_gb,
        },
        "host_go": check_go(),
        "components": list(components),
        "how": "go build of k8s.io/kubernetes@" + text + " from the Go module proxy (harness/gobuild/kubernetes.py)",
    }
    if before is not None:  # components added to a finished build: its record, and when these were added
        added = {
            k: record[k]
            for k in (
                "built_at",
                "duration_s",
                "toolchain",
                "staging_substitutions",
                "module_stand_ins",
                "work",
                "build_cache",
            )
        }
        record = {
            **before,
            "components": [*before.get("components", []), *components],
            "added": [*before.get("added", []), {"components": list(components), **added}],
        }
    partial = directory / "build.json.partial"  # renamed when whole: existing_build() trusts build.json
    partial.write_text(json.dumps(record, indent=1) + "\n")
    partial.replace(directory / "build.json")
    return Build(text, directory, record)
