"""A node image's set of kind's components: planned (every refusal before any build: the kind release, each
component's version the proxy serves, containerd's floor for the Kubernetes version, kind's containerd config),
then built (harness/nodeimage/kind_parts.py builds each component)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.base.paths import TOOLS
from harness.nodeimage.kind_parts import (
    COMPONENTS,
    PARTS,
    Go,
    KindRelease,
    Part,
    PartsError,
    Resolved,
    build_part,
    download,
    go_on_proxy,
    kind_release,
    normal,
    parts_environment,
    resolve,
    version_key,
)

FALLBACK = "debian"  # the named fallback: Debian's containerd and runc, the suite's crictl and ptp network
KIND_CONFIG_FILE = "images/base/files/etc/containerd/config.toml"
KIND_MODULE = "sigs.k8s.io/kind"


@dataclass(frozen=True)
class Plan:
    """The components one node image gets: kind's release, each component's resolved version, and its config."""

    release: KindRelease
    resolved: dict[str, Resolved]
    containerd_asked: str  # CONTAINERD=... (empty: kind's own)
    kind_config: str  # kind's containerd config.toml at that release, from the sigs.k8s.io/kind module

    @property
    def suffix(self) -> str:
        """The image tag's suffix: '-kind.v0.25.0', plus '-containerd.v2.1.4' on another containerd."""
        return tag_suffix(self.release.kind, self.resolved["containerd"].version if self.containerd_asked else "")


def tag_suffix(kind: str, containerd: str = "") -> str:
    """The tag suffix of a node image with kind `kind`'s components ('-kind.v0.25.0'), on another containerd when
    given ('-kind.v0.25.0-containerd.v2.1.4'): the one naming of such images, planned or built."""
    return f"-kind.{kind}" + (f"-containerd.{normal(containerd)}" if containerd else "")


def kind_containerd_config(release: str, tools: Path = TOOLS, go: Go = go_on_proxy) -> str:
    """kind's containerd config.toml at a release, read in the sigs.k8s.io/kind module the proxy serves."""
    env = parts_environment(tools)
    cwd = tools / PARTS
    cwd.mkdir(parents=True, exist_ok=True)
    info = download(KIND_MODULE, release, env, cwd, go)
    path = Path(info["Dir"]) / KIND_CONFIG_FILE if info else None
    if path is None or not path.is_file():
        raise PartsError(
            f"kind {release}: its {KIND_CONFIG_FILE} cannot be read ({KIND_MODULE}@{release} is not served)"
        )
    return path.read_text()


# The oldest containerd a kubelet works with, per Kubernetes range: from 1.26 the kubelet speaks only CRI v1
# (k/k#110618 removed v1alpha2), which containerd serves from 1.6.
RUNTIME_FLOORS = ((">=1.26.0-alpha.0", "v1.6.0", "the kubelet from 1.26 speaks only CRI v1 (k/k#110618)"),)


def runtime_too_old(kubernetes: Any, containerd: str) -> str:
    """Why a containerd is too old for a Kubernetes version (KubeVersion), or '' when it is not."""
    have = version_key(containerd)
    for bounds, floor, why in RUNTIME_FLOORS:
        floor_key = version_key(floor)
        if have is not None and floor_key is not None and kubernetes.satisfies(bounds) and have < floor_key:
            return f"containerd {containerd} is too old for Kubernetes {kubernetes.text}: {why}; give {floor} or newer"
    return ""


def check_containerd(kubernetes: Any, containerd: str) -> None:
    """Refuse (PartsError) a CONTAINERD that is not a version or is too old for `kubernetes`, offline, in no time."""
    if not containerd:
        return
    if version_key(normal(containerd)) is None:
        raise PartsError(f"CONTAINERD={containerd} is not a version (give e.g. 1.7.18 or 2.1.4)")
    if why := runtime_too_old(kubernetes, normal(containerd)):
        raise PartsError(why)


def plan(release: str, kubernetes: Any, containerd: str = "", tools: Path = TOOLS, go: Go = go_on_proxy) -> Plan:
    """Every component's version for a node image of kind `release` (CONTAINERD: another containerd), in seconds.

    Raises PartsError, before anything is built, for an unknown release, a refused CONTAINERD, or a runtime too
    old for `kubernetes`."""
    kind = kind_release(release)
    check_containerd(kubernetes, containerd)
    resolved = {}
    for component in COMPONENTS:
        wanted = normal(containerd) if component == "containerd" and containerd else kind.wanted(component)
        if wanted is None:
            continue  # kind v0.17/v0.18 name no runc version: the image says which runc it has instead
        resolved[component] = resolve(component, wanted, exact=bool(containerd) and component == "containerd",
                                      tools=tools, go=go)  # fmt: skip
    return Plan(kind, resolved, containerd, kind_containerd_config(release, tools, go))


def build_plan(parts_plan: Plan, tools: Path = TOOLS, say: Callable[[str], None] = print) -> dict[str, Part]:
    """Each planned component, built once (a cached build is reused)."""
    go = parts_plan.release.go
    return {name: build_part(resolved, go, tools, say) for name, resolved in parts_plan.resolved.items()}


def runtime_origin(parts_plan: Plan, parts: Mapping[str, Part]) -> dict[str, str]:
    """What an image record and a recording's origin say of the runtime: containerd, runc, cni, crictl and
    node_components (kind's published components, or which substitutes)."""
    kind = parts_plan.release

    def said(component: str) -> str:
        part = parts.get(component)
        if part is None:
            return f"none named by kind {kind.kind}"
        record = part.record
        go = next((word for word in str(record["toolchain"]).split() if word.startswith("go1")), "?")
        line = f"{record['version']} (built here from {record['module']} with {go})"
        if record.get("toolchain_note"):
            # the Go this part was first built for: this kind release's, or another's when the build is reused
            asked_go = str(record["toolchain_note"]).split()[0]
            if asked_go == f"go{kind.go}":
                line += f"; {asked_go} not served"
            else:
                line += f"; reused from a build for {asked_go} (not served); kind {kind.kind} names go{kind.go}"
        # what kind pins is this plan's: a part built once serves every kind release that resolves to it, and its
        # record keeps the pin of the release it was first built for
        planned = parts_plan.resolved.get(component)
        if planned is not None and planned.substitution:
            line += f"; kind {kind.kind} pins {planned.wanted}, not served"
        return line

    substitutes = []
    if parts_plan.containerd_asked:
        asked = parts["containerd"].record["version"]
        substitutes.append(f"containerd {asked} asked for (kind pins {kind.containerd})")
    substitutes += [
        f"{name} {parts[name].record['version']} for {planned.wanted}"
        for name, planned in parts_plan.resolved.items()
        if name in parts and planned.substitution and not (name == "containerd" and parts_plan.containerd_asked)
    ]
    substitutes.append(f"the suite's ptp network for {kind.kindnetd} (not served)")
    substitutes.append(f"no storage provisioner for {kind.storage_provisioner} (not served)")
    return {
        "containerd": said("containerd"),
        "runc": said("runc"),
        "crictl": said("crictl"),
        "cni": f"the suite's ptp DaemonSet with CNI plugins {said('cni_plugins')}; kind's kindnetd is not served",
        "node_components": f"kind {kind.kind}'s components built from Go modules, except: " + "; ".join(substitutes),
    }
