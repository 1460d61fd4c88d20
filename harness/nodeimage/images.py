"""The container images kubeadm needs inside a kind node, made here as OCI archives for `ctr images import`.

For every name `kubeadm config images list --kubernetes-version vX` prints, one archive (an OCI image layout
in a tar; every name of the image is an entry of its index.json, so one import creates them all). The names
stay exactly kubeadm's: its static pods and add-ons, containerd's sandbox image and the kubelet's
`--pod-infra-container-image` (kubeadm sets it to its pause image) name them so, and nothing is pulled.
kubeadm's registry (`DefaultImageRepository`, cmd/kubeadm/app/apis/kubeadm/v1beta2|v1beta3/defaults.go) is
`registry.k8s.io` from v1.25.0-alpha.1 (k/k#109938) and from the patches that took the move (v1.22.17:
k/k#113388; v1.23.15: k/k#113393; v1.24.9: k/k#113395; the kubelet's default pause image moved in the same
patches: k/k#114339, k/k#114340, k/k#114341), and `k8s.gcr.io` on every earlier release: all of 1.21, 1.22.0-1.22.16,
1.23.0-1.23.14, 1.24.0-1.24.8. Under either, CoreDNS is `coredns/coredns` (kubeadm adds `coredns/` under its
default registry, from 1.21).

- kube-apiserver, kube-controller-manager, kube-scheduler: the static binary of the suite's build at
  `/usr/local/bin/<name>` (kubeadm's static pods run the command by name: phases/controlplane/manifests.go),
  `Env PATH`, `/tmp` 1777. No ENTRYPOINT: kubeadm gives the command.
- etcd: `/usr/local/bin/etcd` built from `go.etcd.io/etcd/server/v3` (3.4: `go.etcd.io/etcd`;
  harness/nodeimage/addons.py); kubeadm runs `etcd ...` with httpGet probes on :2381, data in the hostPath
  /var/lib/etcd (phases/etcd/local.go).
- CoreDNS: `/coredns`, `ENTRYPOINT ["/coredns"]` (kubeadm's Deployment gives only args: phases/addons/dns).
- pause: compiled from the tag's `build/pause/linux/pause.c` (harness/nodeimage/oci_images.py), `USER 65535:65535`.
- kube-proxy: two layers: a Debian bookworm tools layer (debootstrap minbase + iptables, conntrack, iproute2;
  cached under `.tools/addons/kube-proxy-base-<hash>/`) and `/usr/local/bin/kube-proxy` (kubeadm's DaemonSet
  runs that path, privileged: phases/addons/proxy/manifests.go). Debian's default iptables alternative is
  nft; the layer replaces `iptables{,-save,-restore}` and `ip6tables*` with a wrapper that, on first use,
  points them at the backend the node's rules are in (kube's hint chains first, then the rule count), as
  kubernetes-sigs/iptables-wrappers does for the upstream image. The node is Debian bookworm too (nft).
- the probes' image: Debian busybox-static under the names the manifests pin alpine by (as the local cluster
  does), so a node can have it preloaded.

Archives land in `.tools/node-images/images/<version>/` with `images.json` (names, digest, what each was
made from, the inputs' digests); an archive whose inputs did not change is reused. Layers are gzip'ed
reproducibly, except the small in-memory ones.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.base.paths import TOOLS
from harness.gobuild.go import BuildError, go_environment
from harness.gobuild.kubernetes import Build
from harness.gobuild.modules import download_module
from harness.nodeimage.addons import Addon, AddonBuildError, build_coredns, build_etcd
from harness.nodeimage.oci_images import (
    BUSYBOX,
    LOCAL_PROBE_IMAGE,
    PROBE_IMAGE_NAMES,
    FileEntry,
    ImageError,
    Layer,
    busybox_layer,
    directory_tar,
    file_layer,
    layer_tar,
    memory_layer,
    pause_layer,
    write_oci_archive,
)

# The registries kubeadm names its images under (the module docstring says which releases use which).
REGISTRIES = ("registry.k8s.io/", "k8s.gcr.io/")
COREDNS_REPOSITORIES = ("coredns/coredns", "coredns")  # "coredns" under a registry of one's own, and before 1.21
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CONTROL_PLANE = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
PROXY_BASE_PACKAGES = ("iptables", "conntrack", "iproute2")
IPTABLES_NAMES = ("iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore")
# Bumped when the tools layer's recipe changes, so a cached layer of the old recipe is not reused.
PROXY_BASE_RECIPE = 1
# Content Debian needs for package management but an image never uses (dpkg's database stays: it says
# which package versions are in the layer).
PROXY_BASE_TRIM = (
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "usr/share/lintian",
    "var/cache/apt",
    "var/lib/apt/lists",
    "var/log",
)
IPTABLES_WRAPPER = """#!/bin/sh
# The suite's kube-proxy image (harness/nodeimage/images.py): use the iptables backend the node's rules are in,
# as kubernetes-sigs/iptables-wrappers does. The first call decides and relinks; later calls run the binary.
set -eu
hint='^:(KUBE-IPTABLES-HINT|KUBE-KUBELET-CANARY)'
saved() { b=$1; shift; { "iptables-$b-save" "$@" || true; "ip6tables-$b-save" "$@" || true; } 2>/dev/null; }
if saved nft -t mangle | grep -qE "$hint"; then
  mode=nft
elif saved legacy -t mangle | grep -qE "$hint"; then
  mode=legacy
else
  nft=$(saved nft | grep -c '^-' || true)
  legacy=$(saved legacy | grep -c '^-' || true)
  if [ "${legacy:-0}" -gt "${nft:-0}" ]; then mode=legacy; else mode=nft; fi
fi
for name in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
  ln -sf "xtables-$mode-multi" "/usr/sbin/$name"
done
exec "$0" "$@"
"""


class NodeImageError(RuntimeError):
    """An image for the node could not be made; the message says which and why."""


@dataclass(frozen=True)
class ImageArchive:
    """One OCI archive for `ctr -n k8s.io images import`, the names it creates, and what it was made from."""

    path: Path
    names: tuple[str, ...]
    source: str
    digest: str  # the manifest digest every name points to


@dataclass(frozen=True)
class ProxyBase:
    """The Debian tools layer of the kube-proxy image: an uncompressed rootfs tar and its record."""

    tar: Path
    record: dict[str, Any]


def _kubernetes_source(version: str) -> Path:
    env = go_environment()
    try:
        return Path(download_module("k8s.io/kubernetes", version, env, TOOLS / "go")["Dir"])
    except BuildError as error:
        raise NodeImageError(str(error)) from None


@dataclass(frozen=True)
class Sources:
    """Where the images' content comes from; tests replace these with stand-ins."""

    etcd: Callable[[str], Addon] = build_etcd
    coredns: Callable[[str], Addon] = build_coredns
    proxy_base: Callable[[], ProxyBase] = field(default_factory=lambda: build_proxy_base)
    kubernetes_source: Callable[[str], Path] = _kubernetes_source
    pause: Callable[[Path, Path, str], bytes] = pause_layer  # (pause.c, scratch directory, tag) -> layer tar
    busybox: Path = BUSYBOX


@dataclass
class _Spec:
    filename: str
    names: tuple[str, ...]
    source: str
    inputs: dict[str, str]
    config: dict[str, object]
    layers: Callable[[Path], list[Layer]]  # given a scratch directory


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        while chunk := data.read(1 << 20):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def _unregistered(name: str) -> str:
    """'k8s.gcr.io/coredns/coredns:v1.8.0' -> 'coredns/coredns:v1.8.0': the name without kubeadm's registry."""
    for registry in REGISTRIES:
        if name.startswith(registry):
            return name.removeprefix(registry)
    registries = " or ".join(registry.rstrip("/") for registry in REGISTRIES)
    raise NodeImageError(f"kubeadm listed {name!r}: expected <registry>/<name>:<tag> with a registry of {registries}")


def _split(name: str) -> tuple[str, str]:
    """'registry.k8s.io/coredns/coredns:v1.10.1' -> ('coredns/coredns', 'v1.10.1'); k8s.gcr.io alike."""
    rest = _unregistered(name)
    if ":" not in rest:
        raise NodeImageError(f"kubeadm listed {name!r}: expected <registry>/<name>:<tag>, it has no tag")
    repository, tag = rest.rsplit(":", 1)
    return repository, tag


def _filename(name: str) -> str:
    return _unregistered(name).replace("/", "_").replace(":", "_") + ".oci.tar"


def _binary_layer(binary: Path, target: str, scratch: Path, extra: list[FileEntry]) -> Layer:
    """One gzip'ed layer with the binary at `target` (e.g. usr/local/bin/etcd), its parents, /tmp and `extra`."""
    parents = [p.as_posix() for p in reversed(Path(target).parents) if p.as_posix() != "."]
    entries = [FileEntry(p) for p in parents if p != "tmp"] + [FileEntry("tmp", mode=0o1777), *extra]
    entries.append(FileEntry(target, binary.read_bytes()))
    tar = scratch / (Path(target).name + ".tar")
    tar.write_bytes(layer_tar(entries))
    layer = file_layer(tar, scratch / "blobs")
    tar.unlink()
    return layer


def _specs(build: Build, kubeadm_list: list[str], sources: Sources) -> list[_Spec]:
    specs = []
    for name in kubeadm_list:
        repository, tag = _split(name)
        specs.append(_spec(build, name, repository, tag, sources))
    busybox = sources.busybox
    probe_names = (LOCAL_PROBE_IMAGE, *PROBE_IMAGE_NAMES)
    busybox_version = (
        subprocess.run(
            ["dpkg-query", "-W", "-f", "${Version}", "busybox-static"], capture_output=True, text=True, check=False
        ).stdout.strip()
        if shutil.which("dpkg-query")
        else ""
    )
    specs.append(
        _Spec(
            "probes_busybox.oci.tar",
            probe_names,
            f"Debian busybox-static {busybox_version or '(version unknown)'}: {busybox} and its applet links,"
            " named as the probes' manifests pin alpine",
            {"busybox": _sha256(busybox) if busybox.is_file() else "missing"},
            {"Env": [PATH_ENV], "Cmd": ["/bin/sh"]},
            lambda scratch: [memory_layer(_busybox(busybox))],
        )
    )
    return specs


def _spec(build: Build, name: str, repository: str, tag: str, sources: Sources) -> _Spec:
    filename = _filename(name)
    env: dict[str, object] = {"Env": [PATH_ENV]}
    if repository in CONTROL_PLANE or repository == "kube-proxy":
        if tag != build.version.replace("+", "_"):
            raise NodeImageError(f"kubeadm lists {name} but the build is {build.version}")
        binary = build.binary(repository)
        if not binary.is_file():
            raise NodeImageError(f"{binary} is missing: the Kubernetes build {build.version} has no {repository}")
        target = f"usr/local/bin/{repository}"
        inputs = {repository: _sha256(binary)}
        source = f"{repository} of the suite's build of k8s.io/kubernetes@{build.version}"
        source += f" ({build.record.get('toolchain', '?')}) at /{target}"
        tools: Path | None = None  # kube-proxy's image has the tools it runs (iptables ...) below its binary
        if repository not in CONTROL_PLANE:
            base = sources.proxy_base()
            tools = base.tar
            inputs["tools_layer"] = str(base.record.get("tar_sha256") or _sha256(base.tar))
            source += f"; tools layer: {base.record.get('how', base.tar)}"

        def layers(scratch: Path) -> list[Layer]:
            below = [file_layer(tools, scratch / "blobs")] if tools is not None else []
            return [*below, _binary_layer(binary, target, scratch, [])]

        return _Spec(filename, (name,), source, inputs, env, layers)
    if repository == "etcd":
        addon = _addon(sources.etcd, tag)
        return _Spec(
            filename,
            (name,),
            f"etcd {addon.version}: {addon.record.get('how', '')} ({addon.record.get('toolchain')})"
            " at /usr/local/bin/etcd",
            {"etcd": _sha256(addon.binary)},
            env,
            lambda scratch: [
                _binary_layer(
                    addon.binary,
                    "usr/local/bin/etcd",
                    scratch,
                    [FileEntry("var"), FileEntry("var/lib"), FileEntry("var/lib/etcd", mode=0o700)],
                )
            ],
        )
    if repository in COREDNS_REPOSITORIES:
        addon = _addon(sources.coredns, tag)
        return _Spec(
            filename,
            (name,),
            f"CoreDNS {addon.version}: {addon.record.get('how', '')} ({addon.record.get('toolchain')}) at /coredns",
            {"coredns": _sha256(addon.binary)},
            {**env, "Entrypoint": ["/coredns"], "ExposedPorts": {"53/tcp": {}, "53/udp": {}}},
            lambda scratch: [_binary_layer(addon.binary, "coredns", scratch, [])],
        )
    if repository == "pause":
        pause_c = sources.kubernetes_source(build.version) / "build" / "pause" / "linux" / "pause.c"
        if not pause_c.is_file():
            raise NodeImageError(f"{pause_c} is missing: cannot compile the pause image")

        def pause(scratch: Path) -> list[Layer]:
            try:
                return [memory_layer(sources.pause(pause_c, scratch, tag))]
            except ImageError as error:
                raise NodeImageError(str(error)) from None

        return _Spec(
            filename,
            (name,),
            f"pause.c of k8s.io/kubernetes@{build.version}, gcc -Os -Wall -Werror -static",
            {"pause.c": _sha256(pause_c), "gcc": _gcc_version()},
            {"Entrypoint": ["/pause"], "User": "65535:65535"},
            pause,
        )
    raise NodeImageError(f"kubeadm lists {name}, which the suite does not know how to make")


def _busybox(busybox: Path) -> bytes:
    try:
        return busybox_layer(busybox)
    except ImageError as error:
        raise NodeImageError(str(error)) from None


def _addon(make: Callable[[str], Addon], tag: str) -> Addon:
    try:
        return make(tag)
    except AddonBuildError as error:
        raise NodeImageError(str(error)) from None


def _gcc_version() -> str:
    gcc = shutil.which("gcc")
    if gcc is None:
        return "missing"
    return subprocess.run([gcc, "--version"], capture_output=True, text=True, check=False).stdout.split("\n")[0]


def kubeadm_images(build: Build, timeout: float = 120) -> list[str]:
    """The images the build's kubeadm names for its version (`kubeadm config images list`, offline for a release)."""
    kubeadm = build.binary("kubeadm")
    if not kubeadm.is_file():
        raise NodeImageError(f"{kubeadm} is missing: the Kubernetes build {build.version} has no kubeadm")
    done = subprocess.run(
        [str(kubeadm), "config", "images", "list", "--kubernetes-version", build.version],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    names = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not names:
        raise NodeImageError(f"kubeadm config images list failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return names


def default_out(build: Build, tools: Path = TOOLS) -> Path:
    return tools / "node-images" / "images" / build.version


def node_images(
    build: Build, kubeadm_list: list[str], out: Path | None = None, sources: Sources | None = None
) -> list[ImageArchive]:
    """An archive for every image kubeadm lists, plus the probes' image; reused while their inputs are the same."""
    sources = sources or Sources()
    out = out or default_out(build)
    out.mkdir(parents=True, exist_ok=True)
    record_path = out / "images.json"
    previous: dict[str, Any] = json.loads(record_path.read_text()) if record_path.is_file() else {}
    known = {entry["file"]: entry for entry in previous.get("images", [])}
    archives, entries = [], []
    for spec in _specs(build, kubeadm_list, sources):
        path = out / spec.filename
        entry = known.get(spec.filename)
        reused = (
            entry is not None
            and path.is_file()
            and entry.get("inputs") == spec.inputs
            and tuple(entry.get("names", ())) == spec.names
        )
        if not reused:
            entry = _write(spec, path, out)
        assert entry is not None
        entries.append(entry)
        archives.append(ImageArchive(path, spec.names, spec.source, str(entry["digest"])))
        _save(record_path, build, entries, known)
    _save(record_path, build, entries, {})
    return archives


def _write(spec: _Spec, path: Path, out: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(dir=out, prefix=".scratch-") as scratch:
        layers = spec.layers(Path(scratch))
        partial = path.with_name(f".{path.name}.partial")
        with partial.open("wb") as archive:
            digest = write_oci_archive(archive, list(spec.names), layers, spec.config)
        partial.replace(path)
    return {
        "file": spec.filename,
        "names": list(spec.names),
        "digest": digest,
        "source": spec.source,
        "inputs": spec.inputs,
        "layers": [{"digest": layer.digest, "diff_id": layer.diff_id, "size": layer.size} for layer in layers],
        "size_bytes": path.stat().st_size,
    }


def _save(record_path: Path, build: Build, entries: list[dict[str, Any]], pending: dict[str, Any]) -> None:
    """images.json: the entries made so far (and, while working, the earlier ones not yet revisited)."""
    done = {entry["file"] for entry in entries}
    images = entries + [entry for name, entry in pending.items() if name not in done]
    record = {"kubernetes": build.version, "build": build.record.get("how"), "images": images}
    partial = record_path.with_name(record_path.name + ".partial")
    partial.write_text(json.dumps(record, indent=1) + "\n")
    partial.replace(record_path)


def proxy_base_key() -> str:
    recipe = {
        "suite": DEBIAN_SUITE,
        "mirror": DEBIAN_MIRROR,
        "variant": "minbase",
        "packages": PROXY_BASE_PACKAGES,
        "trim": PROXY_BASE_TRIM,
        "wrapper": IPTABLES_WRAPPER,
        "recipe": PROXY_BASE_RECIPE,
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]


def build_proxy_base(tools: Path = TOOLS) -> ProxyBase:
    """The kube-proxy image's Debian tools layer, made once with debootstrap (root, network to the mirror)."""
    directory = tools / "addons" / f"kube-proxy-base-{proxy_base_key()}"
    tar, record_path = directory / "rootfs.tar", directory / "build.json"
    if tar.is_file() and record_path.is_file():
        return ProxyBase(tar, json.loads(record_path.read_text()))
    if shutil.which("debootstrap") is None or os.geteuid() != 0:
        raise NodeImageError(
            "the kube-proxy image's tools layer needs debootstrap and root (apt-get install debootstrap)"
        )
    directory.mkdir(parents=True, exist_ok=True)
    rootfs, log = directory / "rootfs", directory / "build.log"
    if rootfs.exists():
        shutil.rmtree(rootfs)
    started = _now()
    command = [
        "nice", "-n", "10", "debootstrap", "--variant=minbase", "--include=" + ",".join(PROXY_BASE_PACKAGES),
        DEBIAN_SUITE, str(rootfs), DEBIAN_MIRROR,
    ]  # fmt: skip
    with log.open("w") as out:
        out.write("+ " + " ".join(command) + "\n")
        out.flush()
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False, timeout=1800)
    if done.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise NodeImageError(f"debootstrap of the kube-proxy tools layer failed; last lines of {log}:\n{tail}")
    packages = subprocess.run(
        ["dpkg-query", f"--admindir={rootfs / 'var/lib/dpkg'}", "-W", "-f", "${Package} ${Version}\n"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split("\n")
    alternatives = {name: os.readlink(rootfs / "etc/alternatives" / name) for name in ("iptables", "ip6tables")}
    for trimmed in PROXY_BASE_TRIM:
        target = rootfs / trimmed
        if target.is_dir():
            for child in target.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
    wrapper = rootfs / "usr/sbin/iptables-wrapper"
    wrapper.write_text(IPTABLES_WRAPPER)
    wrapper.chmod(0o755)
    for name in IPTABLES_NAMES:
        link = rootfs / "usr/sbin" / name
        link.unlink(missing_ok=True)
        link.symlink_to("iptables-wrapper")
    partial = directory / "rootfs.tar.partial"
    directory_tar(rootfs, partial, skip=("dev", "proc", "sys", "run", "tmp"))
    partial.replace(tar)
    shutil.rmtree(rootfs)
    record = {
        "how": f"debootstrap --variant=minbase --include={','.join(PROXY_BASE_PACKAGES)} {DEBIAN_SUITE}"
        f" ({DEBIAN_MIRROR}), docs/locales/apt lists removed, iptables wrapper (harness/nodeimage/images.py)",
        "packages": sorted(p for p in packages if p),
        "iptables_default_alternatives": alternatives,
        "iptables": "wrapper: the backend the node's rules are in (hint chains, then rule count); nft when none",
        "tar_sha256": _sha256(tar),
        "size_bytes": tar.stat().st_size,
        "duration_s": round(_now() - started, 1),
    }
    record_path.write_text(json.dumps(record, indent=1) + "\n")
    return ProxyBase(tar, record)


def _now() -> float:
    return time.monotonic()
