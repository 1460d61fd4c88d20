"""Modules the Go module proxy refuses at every version, and the minimal stand-ins written here that a build may use
instead: each written for the components whose use of it was read at the tag, none of the claims depending on it.

A stand-in is used only when the tag requires the module and the proxy refuses the version it requires (so a
version the proxy serves one day is built as it is), and never for a component that uses the module for real: a
build of one stops and says it cannot be built faithfully. build.json says each
stand-in used (`module_stand_ins`), and so do the run record and every recording's origin.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.gobuild.go import BuildError
from harness.gobuild.modules import lookup_failure, proxy_refused

STAND_IN_SOURCES = Path(__file__).resolve().parent / "standins"


@dataclass(frozen=True)
class StandIn:
    """A module written here in place of one the proxy refuses: where it is, and for which components."""

    module: str
    directory: str  # under harness/gobuild/standins/
    read_for: tuple[str, ...]  # the components whose use of it was read at the tag: none of the claims depends on it
    not_for: tuple[str, ...]  # components that use it for real: never built with the stand-in
    what: str  # what it does instead, in one line, for build.json and every recording's origin


STAND_INS = (
    # `go list -deps` at v1.38.0-beta.0: of every component the suite builds only the kubelet and kube-proxy import it.
    # The kubelet, in pkg/kubelet/kubelet_network_linux.go (initNetworkUtil), for the KUBE-IPTABLES-HINT and
    # KUBE-FIREWALL chains on the host (docs/local-provider.md says why no claim depends on them); kube-proxy's
    # proxiers program Services with it, so kube-proxy is never built with the stand-in.
    StandIn(
        "sigs.k8s.io/iptables-wrappers",
        "iptables-wrappers",
        ("kubelet",),
        ("kube-proxy",),
        "stand-in written here (harness/gobuild/standins/iptables-wrappers): finds no iptables, so the kubelet "
        "creates no KUBE-IPTABLES-HINT/KUBE-FIREWALL chains, as on a host without iptables",
    ),
)


def required_versions(go_mod: str) -> dict[str, str]:
    """Module -> version of every require line of a go.mod's text (in a block or not)."""
    found = re.findall(r"^[ \t]*(?:require[ \t]+)?([^\s()]+)[ \t]+(v\S+)(?:[ \t]*//.*)?$", go_mod, re.M)
    return {module: version for module, version in found if not module.startswith(("module", "go", "//"))}


def stand_ins_needed(
    go_mod: str,
    components: Sequence[str],
    download_errors: Callable[[list[tuple[str, str]]], dict[tuple[str, str], str]],
) -> dict[str, StandIn]:
    """{'module@version': its stand-in} for each stand-in module the tag requires at a version whose source the proxy
    refuses (403/404/410). `download_errors` answers for a batch why each could not be downloaded ("" when it
    was). Any other failure, or a component the stand-in was not written for, stops the build."""
    required = required_versions(go_mod)
    wanted = [(s, required[s.module]) for s in STAND_INS if s.module in required]
    if not wanted:
        return {}
    errors = download_errors([(s.module, version) for s, version in wanted])
    needed = {}
    for stand_in, version in wanted:
        error = errors.get((stand_in.module, version), "")
        if not error:
            continue
        if not proxy_refused(error):
            raise BuildError(lookup_failure(stand_in.module, version, error))
        real_use = [c for c in components if c in stand_in.not_for]
        if real_use:
            raise BuildError(
                f"{', '.join(real_use)} cannot be built faithfully: {lookup_failure(stand_in.module, version, error)}, "
                f"and the stand-in written here serves only {', '.join(stand_in.read_for)} "
                "(harness/gobuild/standins.py)"
            )
        needed[f"{stand_in.module}@{version}"] = stand_in
    return needed


def place_stand_ins(needed: dict[str, StandIn], build_directory: Path) -> dict[str, str]:
    """Copy each stand-in into the build directory (./standins/<name>); {module: './standins/<name>'} to replace."""
    out = {}
    for stand_in in needed.values():
        target = build_directory / "standins" / stand_in.directory
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(STAND_IN_SOURCES / stand_in.directory, target)
        out[stand_in.module] = f"./standins/{stand_in.directory}"
    return out
