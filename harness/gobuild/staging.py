"""k8s.io/kubernetes's go.mod: its staging modules (k8s.io/api, k8s.io/client-go, ...), mapped to ./staging/ at
v0.0.0, and their published v0.Y.Z twins that a build here requires instead, a refused twin substituted by the
nearest served version of its minor.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from harness.base.versions import KubeVersion

# A replace line of k8s.io/kubernetes's go.mod: `k8s.io/api => ./staging/src/k8s.io/api` (in a block or not).
_REPLACE = re.compile(r"^[ \t]*(?:replace[ \t]+)?(\S+)(?:[ \t]+v\S+)?[ \t]+=>[ \t]+(\S+)(?:[ \t]+(\S+))?[ \t]*$", re.M)


def twin_version(release: str) -> str:
    """The published twins' version of a release's staging modules: 'v1.27.3' -> 'v0.27.3', 'v1.27.0-rc.0' ->
    'v0.27.0-rc.0'."""
    parsed = KubeVersion.parse(release)
    pre = release[release.index("-") :] if "-" in release else ""
    return f"v0.{parsed.version.minor}.{parsed.version.micro}{pre}"


def replacements(
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


def required_staging_modules(kubernetes_go_mod: str) -> list[str]:
    """The staging modules k8s.io/kubernetes requires (not only maps to ./staging/): go loads each one's go.mod, so a
    build needs every one of them served at some version (k8s.io/sample-cli-plugin is only mapped, never required)."""
    required = set(re.findall(r"^[ \t]*(?:require[ \t]+)?(k8s\.io/\S+)[ \t]+v0\.0\.0\b", kubernetes_go_mod, re.M))
    return [module for module in staging_modules(kubernetes_go_mod) if module in required]
