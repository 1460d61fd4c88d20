"""Which Go toolchain builds a release: the one upstream names in the tag, and the build's policy for it
(GO_TOOLCHAIN), checked against what the Go module proxy serves; and the one Go release the suite's own small
tools (crictl, etcd, CoreDNS) are built with.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from harness.base.versions import VersionError
from harness.gobuild.go import BuildError, run_go

# The Go release of cri-api v0.27's era (its go.mod says go 1.20), which builds plp-crictl, etcd and CoreDNS for
# node images; cached under .tools/go/ by the Kubernetes builds, and fetched through the module proxy by a host
# Go of 1.21+. (Upstream built etcd 3.5.7 with go1.17.13 and CoreDNS with go1.19/1.18, neither of which
# GOTOOLCHAIN can fetch as a module.)
SUITE_TOOLCHAIN = "go1.20.14"


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
    import yaml  # imported only here: every command reads GO_TOOLCHAIN (toolchain_policy), few read this file

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
    result = run_go(["list", "-m", "-versions", "golang.org/toolchain"], {**env, "GOFLAGS": ""}, cwd, timeout=120)
    found = set(re.findall(r"v0\.0\.1-go(\d+\.\d+\.\d+)\.linux-amd64\b", result.stdout))
    return sorted(found, key=lambda v: tuple(int(p) for p in v.split(".")))


def go_release_key(version: str) -> tuple[int, int, int]:
    """'go1.27.4', '1.27.0', '1.27' or '1.27rc1' -> (1, 27, 4), (1, 27, 0), (1, 27, 0), (1, 27, -1): for ordering."""
    found = re.match(r"(?:go)?(\d+)\.(\d+)(?:\.(\d+)|(rc|beta)\d*)?", version.strip())
    if not found:
        raise BuildError(f"not a Go release: {version!r}")
    return int(found[1]), int(found[2]), -1 if found[4] else int(found[3] or 0)


def go_mod_requirement(go_mod: str) -> tuple[str | None, str | None]:
    """(the `go` line's release, the `toolchain` line's go1.X.Y) of a go.mod's text; None where it has none."""
    go_line = re.search(r"^go[ \t]+(\S+)[ \t]*(?://.*)?$", go_mod, re.M)
    toolchain_line = re.search(r"^toolchain[ \t]+(go\S+)[ \t]*(?://.*)?$", go_mod, re.M)
    return (go_line[1] if go_line else None), (toolchain_line[1] if toolchain_line else None)


def lookup_toolchain(go_mod: str, running: str, env: Mapping[str, str], cwd: Path) -> str | None:
    """The Go a module look-up (a download of its source) runs with, from the module's go.mod: None when the
    running Go (`go1.26.8`) is as new as its `go` line, else its `toolchain` line when that is new enough, else
    the newest patch the proxy serves of the `go` line's minor (as the go command itself picks when it switches;
    also the toolchain a build of a Kubernetes tag takes by default), else that release itself.

    Seen: k8s.io/kubernetes@v1.38.0-beta.0 says `go 1.27.0`; with the host's go1.26.8 and GOTOOLCHAIN=local (the
    default of Go's own go.env on this machine) its download failed with "requires go >= 1.27.0"."""
    needed, named = go_mod_requirement(go_mod)
    if needed is None or go_release_key(running) >= go_release_key(needed):
        return None
    if named is not None and go_release_key(named) >= go_release_key(needed):
        return named
    minor = ".".join(needed.split(".")[:2]).split("rc")[0]
    patches = [v for v in served_toolchains(env, cwd) if v.startswith(f"{minor}.")]
    newer = [v for v in patches if go_release_key(v) >= go_release_key(needed)]
    if newer:
        return f"go{newer[-1]}"
    return f"go{needed}" if needed.count(".") == 2 else f"go{needed}.0"


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
        probe = run_go(["version"], {**env, "GOTOOLCHAIN": f"go{candidate}"}, cwd, timeout=300)
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
