"""kind node images built here from Go modules and Debian packages, when no release can be downloaded.

kind's own builder (`kind build node-image --type release`) needs dl.k8s.io and a registry for its base
image; neither is reachable on machines that reach only the Go module proxy and Debian's mirror. This
builder makes an image that satisfies kind v0.20.0's node contract (read in its images/base and
pkg/build/nodeimage; kind v0.33.0, which runs the images from 1.37, asks nothing more) from:
- a Debian bookworm root file system (`debootstrap --variant=minbase`): systemd, containerd and runc,
  the CNI plugins, iptables, conntrack, trimmed the way kind trims its base image (no getty, udev, timers);
- the suite's own node files (harness/nodeimage/node-files/: entrypoint, systemd units, the pod network);
- Kubernetes' kubeadm, kubelet and kubectl built from `k8s.io/kubernetes@v<version>` (harness/gobuild/kubernetes.py),
  the suite's crictl (harness/nodeimage/crictl.py), and the images `kubeadm config images list` names, made
  locally (harness/nodeimage/images.py) and imported into the node's containerd store;
- containerd with `restrict_oom_score_adj` (hosts whose root lacks CAP_SYS_RESOURCE refuse negative OOM
  scores) and `SystemdCgroup` from 1.24 on, the driver kind gives the kubelet (SYSTEMD_CGROUP).
A second image, the same plus D-Bus and systemd-logind, is what the graceful-node-shutdown probes run on
(harness/nodeimage/shutdown.py finds it under the tag harness/nodeimage/tags.py gives it). Each image records what
went into it in `/kind/plp-node.json` and `.tools/node-images/<tag>.json` (kind_release: the kind that runs it).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from packaging.version import Version

from harness.base import paths
from harness.base.versions import KubeVersion, Release
from harness.gobuild.kubernetes import Build
from harness.nodeimage.base_rootfs import SUITE, Run, base_rootfs, discard, run
from harness.nodeimage.containerd_config import (
    SYSTEMD_CGROUP,
    containerd_config,
    kind_node_containerd_config,
    kind_sandbox_image,
)
from harness.nodeimage.images import ImageArchive, NodeImageError, kubeadm_images, node_images
from harness.nodeimage.kind_parts import KINDNETD_NOT_SERVED, Part
from harness.nodeimage.kind_plan import Plan, build_plan, runtime_origin
from harness.nodeimage.oci_images import BUSYBOX, LOCAL_PROBE_IMAGE
from harness.nodeimage.tags import NODE_IMAGE_WORK, NODE_IMAGES, node_image_record, node_image_tag, shutdown_image_tag

TOOLS = paths.TOOLS
WORK = NODE_IMAGE_WORK
RECORDS = NODE_IMAGES
FILES = Path(__file__).resolve().parent / "node-files"
KIND_RELEASE = "v0.20.0"  # the kind whose node contract these images follow, and that runs them
# From 1.37 another kind runs them: kubeadm 1.37 refuses the kubeadm.k8s.io/v1beta3 configuration kind v0.20.0
# writes (cmd/kubeadm/app/util/config/common.go at v1.37.2; seen live: "your configuration file uses an old API
# spec"); kind v0.33.0 writes v1beta4 from 1.36 on (pkg/cluster/internal/kubeadm/config.go at v0.33.0; v0.32.0
# is the first release that does) and asks nothing more of a node than v0.20.0 did (read in its
# providers/docker/provision.go, create actions and nodeutils: the same docker run flags, /kind files, ready
# line and containerd config version).
NEWER_KIND_RELEASES = ((">=1.37.0-alpha.0", "v0.33.0"),)


def kind_release_for(version: KubeVersion) -> str:
    """The kind that runs a node image of this Kubernetes version (recorded in the image as its kind_release)."""
    return next((kind for bounds, kind in NEWER_KIND_RELEASES if version.satisfies(bounds)), KIND_RELEASE)


def runner_kind(components_kind: str, version: KubeVersion) -> str:
    """The kind that runs an image with a kind release's components: that release, unless the Kubernetes version
    needs a newer kind (1.37's kubeadm refuses v1beta3: kind v0.33.0), as KIND=v0.25.0 on 1.37.2 does."""
    needed = kind_release_for(version)
    if not components_kind:
        return needed
    older = Version(components_kind.lstrip("v")) < Version(needed.lstrip("v")) and needed != KIND_RELEASE
    return needed if older else components_kind


BUSYBOX_NAME = LOCAL_PROBE_IMAGE  # the pod network's image (node-files/kind/manifests/default-cni.yaml)
UNITS = ("containerd.service", "kubelet.service", "plp-undo-cgroups-mount.service")


# What building an image runs on the host, and where it comes from (the local cluster lists its own likewise).
REQUIRED_HOST_TOOLS = {
    "debootstrap": "apt-get install debootstrap",
    "containerd": "apt-get install containerd",  # preloads the images into the node's store
    "ctr": "apt-get install containerd",
    "gcc": "apt-get install gcc libc6-dev",  # the pause image
}


def host_problems() -> list[str]:
    """What this host lacks to build a node image from modules (empty when nothing); a second, before any build."""
    problems = [] if os.geteuid() == 0 else ["root (debootstrap and chroot)"]
    problems += [
        f"{tool} on PATH ({install})" for tool, install in REQUIRED_HOST_TOOLS.items() if not shutil.which(tool)
    ]
    if not BUSYBOX.is_file():  # the probes' image and the pod network's
        problems.append(f"{BUSYBOX} (apt-get install busybox-static)")
    return problems


def install_parts(rootfs: Path, parts: Mapping[str, Part]) -> None:
    """kind's components where kind's base image puts them: containerd, ctr and the shim in /usr/local/bin, runc in
    /usr/local/sbin, crictl in /usr/local/bin, the CNI plugins in /opt/cni/bin; containerd's unit runs the built one."""
    targets = {"containerd": "usr/local/bin", "runc": "usr/local/sbin", "crictl": "usr/local/bin",
               "cni_plugins": "opt/cni/bin"}  # fmt: skip
    for component, part in parts.items():
        target = rootfs / targets[component]
        target.mkdir(parents=True, exist_ok=True)
        for binary in sorted((part.directory / "bin").iterdir()):
            shutil.copy2(binary, target / binary.name)
    unit = rootfs / "etc/systemd/system/containerd.service"
    unit.write_text(unit.read_text().replace("ExecStart=/usr/bin/containerd", "ExecStart=/usr/local/bin/containerd"))


def install_node(
    rootfs: Path,
    build: Build,
    crictl: Path | None,
    images: list[str],
    version: KubeVersion,
    run_step: Run = run,
    parts: Mapping[str, Part] | None = None,
    kind_config: str = "",
) -> None:
    """Put the suite's node files, Kubernetes' node binaries and containerd's configuration into a copy of the base:
    with `parts`, kind's components and kind's containerd config; else Debian's runtime and the suite's crictl."""
    shutil.copytree(FILES, rootfs, symlinks=True, dirs_exist_ok=True)
    for component in ("kubeadm", "kubelet", "kubectl"):
        shutil.copy2(build.binary(component), rootfs / "usr/bin" / component)
    if parts is not None:
        install_parts(rootfs, parts)
    else:
        assert crictl is not None
        shutil.copy2(crictl, rootfs / "usr/local/bin/crictl")
        cni = rootfs / "opt/cni/bin"
        cni.mkdir(parents=True, exist_ok=True)
        for plugin in sorted((rootfs / "usr/lib/cni").iterdir()):
            (cni / plugin.name).unlink(missing_ok=True)
            (cni / plugin.name).symlink_to(f"/usr/lib/cni/{plugin.name}")
    (rootfs / "etc/kubernetes/manifests").mkdir(parents=True, exist_ok=True)
    (rootfs / "kind/version").write_text(build.version + "\n")
    (rootfs / "etc/containerd").mkdir(parents=True, exist_ok=True)
    if parts is not None:
        (rootfs / "etc/containerd/config.toml").write_text(kind_node_containerd_config(kind_config, version))
    else:
        # containerd's sandbox image: kubeadm's pause, by its name (k8s.gcr.io or registry.k8s.io), preloaded
        pause = next((image for image in images if image.rsplit("/", 1)[-1].startswith("pause:")), None)
        if pause is None:
            raise NodeImageError(f"kubeadm listed no pause image, which containerd would have to pull: {images}")
        (rootfs / "etc/containerd/config.toml").write_text(containerd_config(version, pause))
    # containerd's default spec without rlimits (kind's cri-base.json does the same), from the node's own ctr.
    spec = json.loads(run_step(["chroot", str(rootfs), "ctr", "oci", "spec"]))
    spec["process"].pop("rlimits", None)
    (rootfs / "etc/containerd/cri-base.json").write_text(json.dumps(spec, indent=1) + "\n")
    wants = rootfs / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    for unit in UNITS:
        (wants / unit).unlink(missing_ok=True)
        (wants / unit).symlink_to(f"/etc/systemd/system/{unit}")


def preload_images(
    rootfs: Path, archives: list[ImageArchive], run_step: Run = run, aliases: Mapping[str, str] | None = None
) -> list[dict[str, str]]:
    """Import the archives into the node's containerd store with a containerd of the host, then stop it.

    The host's containerd (Debian's, the node's version) runs with the node's /var/lib/containerd as its
    root, the CRI plugin off, on a socket of its own; kind's importer uses the same `ctr images import`
    flags. Layers stay packed (`--no-unpack`): the node's CRI unpacks an image on first use.
    """
    with tempfile.TemporaryDirectory(prefix="plp-preload-") as scratch:
        state = Path(scratch)
        socket = state / "containerd.sock"
        config = state / "config.toml"
        config.write_text(
            f'version = 2\nroot = "{rootfs / "var/lib/containerd"}"\nstate = "{state / "state"}"\n'
            f'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n[grpc]\n  address = "{socket}"\n'
        )
        log = (state / "containerd.log").open("w")
        daemon = subprocess.Popen(["containerd", "--config", str(config)], stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while not socket.exists():
                if time.monotonic() > deadline or daemon.poll() is not None:
                    raise NodeImageError(
                        f"the preloading containerd did not start: {(state / 'containerd.log').read_text()}"
                    )
                time.sleep(0.2)
            ctr = ["ctr", "--address", str(socket), "--namespace", "k8s.io"]
            for archive in archives:
                run_step([*ctr, "images", "import", "--all-platforms", "--no-unpack", "--digests", str(archive.path)])
            listed = run_step([*ctr, "images", "list", "--quiet"]).split()
            preloaded = []
            for archive in archives:
                present = [name for name in archive.names if name in listed]
                if not present:
                    raise NodeImageError(f"{archive.path} imported none of {archive.names}; containerd has {listed}")
                for name in archive.names:
                    if name not in listed:
                        run_step([*ctr, "images", "tag", present[0], name])
                preloaded.append({"names": ", ".join(archive.names), "source": archive.source})
            for existing, alias in (aliases or {}).items():  # e.g. kind's sandbox image name for kubeadm's pause
                if alias not in listed:
                    run_step([*ctr, "images", "tag", existing, alias])
                preloaded.append({"names": alias, "source": f"the image {existing}, named as kind's config says"})
            return preloaded
        finally:
            daemon.terminate()
            daemon.wait(30)
            log.close()


def write_record(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def docker_image(rootfs: Path, tag: str, record: dict[str, Any], run_step: Run = run) -> None:
    """The root file system as a Docker image with kind's node entrypoint, environment and stop signal."""
    stage = f"{tag}-stage"
    archive = rootfs.parent / "rootfs.tar"
    run_step(["tar", "-C", str(rootfs), "--numeric-owner", "--xattrs", "-cf", str(archive), "."])
    try:
        run_step(
            [
                "docker",
                "import",
                "--change",
                "ENV container=docker",
                "--change",
                'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]',
                str(archive),
                stage,
            ]
        )
        archive.unlink()
        # `docker import` takes no STOPSIGNAL; a metadata-only build adds it (systemd halts on SIGRTMIN+3).
        context = rootfs.parent / "context"
        context.mkdir(exist_ok=True)
        (context / "Dockerfile").write_text(
            f"FROM {stage}\nSTOPSIGNAL SIGRTMIN+3\n"
            f'LABEL pod-lifecycle-probes.test/kubernetes="{record["kubernetes"]}" '
            f'pod-lifecycle-probes.test/kind-release="{record["kind_release"]}"\n'
        )
        run_step(["env", "DOCKER_BUILDKIT=0", "docker", "build", "--quiet", "--tag", tag, str(context)])
    finally:
        # the staging image goes also when the build stops half-way (seen live: Ctrl-C 45 s into
        # `make node-image VERSION=1.27.9` left plp-node:v1.27.9-stage, about a node image's size)
        with contextlib.suppress(NodeImageError, OSError, subprocess.SubprocessError):
            run_step(["docker", "image", "rm", "--force", stage])


def work_folder(image_tag: str, work: Path = WORK) -> Path:
    """Where an image is assembled (removed once it is built, or when its build stops)."""
    return work / image_tag.replace(":", "-").replace("/", "-")


def discard_unfinished(tag: str, work: Path | None = None) -> None:
    """What a build of a node image and its shutdown sibling leaves when it is killed before its own cleanup: their
    work folders and staging images (kind's components and the Kubernetes binaries without their build.json are
    never reused, and are removed by their next build)."""
    for image_tag in (tag, shutdown_image_tag(tag)):
        discard(work_folder(image_tag, work or WORK))
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(["docker", "image", "rm", "--force", f"{image_tag}-stage"], capture_output=True, timeout=120)


def built_tag(version: str, suffix: str = "") -> str:
    """plp-node:v1.27.16 (the named fallback: Debian's runtime), plp-node:v1.27.16-kind.v0.25.0 (kind's components)."""
    return node_image_tag(version + suffix)


def build_node_images(
    release: Release,
    say: Callable[[str], None] = print,
    work: Path = WORK,
    records: Path = RECORDS,
    run_step: Run = run,
    parts_plan: Plan | None = None,
) -> list[str]:
    """Build the node image of a release and its shutdown-capable sibling from Go modules (each reused if present):
    with kind's components when `parts_plan` is given (planned first by kind_plan.plan), else the named fallback
    (Debian's containerd and runc, the suite's crictl)."""
    from harness.gobuild.kubernetes import NODE_IMAGE_COMPONENTS, build_kubernetes
    from harness.nodeimage.crictl import build_crictl, crictl_record

    build = build_kubernetes(release, components=NODE_IMAGE_COMPONENTS)
    tag = built_tag(build.version, parts_plan.suffix if parts_plan else "")
    tags = [tag, shutdown_image_tag(tag)]
    missing = [t for t in tags if subprocess.run(["docker", "image", "inspect", t], capture_output=True).returncode]
    if not missing:
        say(f"{' and '.join(tags)} exist already; reused")
        return tags
    started = time.monotonic()
    parsed = release.kube
    names = kubeadm_images(build)
    say(f"images kubeadm {build.version} deploys: {', '.join(names)}")
    archives = node_images(build, names)
    parts = build_plan(parts_plan, say=say) if parts_plan else None
    crictl = None if parts_plan else build_crictl()
    parts_s = round(time.monotonic() - started, 1)
    for image_tag in missing:
        shutdown = image_tag != tag
        base, base_record = base_rootfs(shutdown, work, debian_runtime=parts_plan is None)
        directory = work_folder(image_tag, work)
        discard(directory)
        directory.mkdir(parents=True)
        rootfs = directory / "rootfs"
        say(f"assembling {image_tag} in {directory}")
        try:
            run_step(["cp", "-a", "--reflink=auto", str(base), str(rootfs)])
            kind_config = parts_plan.kind_config if parts_plan else ""
            install_node(rootfs, build, crictl, names, parsed, run_step, parts, kind_config)
            aliases = {}
            if parts_plan is not None:
                sandbox = kind_sandbox_image(kind_config)
                pause = next((image for image in names if image.rsplit("/", 1)[-1].startswith("pause:")), None)
                if pause is None:
                    raise NodeImageError(f"kubeadm listed no pause image to give kind's sandbox name: {names}")
                if sandbox != pause:
                    aliases[pause] = sandbox
            preloaded = preload_images(rootfs, archives, run_step, aliases)
            record = {
                "image": image_tag,
                "kubernetes": build.version,
                "kind_release": runner_kind(parts_plan.release.kind, parsed)
                if parts_plan
                else kind_release_for(parsed),
                "how": "harness/nodeimage/node.py: Debian base + Kubernetes from Go modules; no release tarball",
                "kubernetes_build": build.record,
                "images": preloaded,
                "debian": {"suite": SUITE, "packages": base_record["packages"]},
                "shutdown_capable": shutdown,
                "storage": "none shipped: kind falls back to its host-path StorageClass",
            }
            if parts_plan is not None and parts is not None:
                record.update(runtime_origin(parts_plan, parts))
                record["kind_components"] = {
                    "kind": parts_plan.release.kind,
                    "definition": parts_plan.release.definition,
                    "base_image": parts_plan.release.base_image,
                    "builds": {name: part.record for name, part in parts.items()},
                    "containerd_config": "kind's config.toml of the sigs.k8s.io/kind module at that release,"
                    " restrict_oom_score_adj true"
                    + ("" if parsed.satisfies(SYSTEMD_CGROUP) else ", SystemdCgroup false"),
                    "sandbox_image": f"{kind_sandbox_image(kind_config)}: pause.c of k8s.io/kubernetes@{build.version}",
                    "not_carried": [KINDNETD_NOT_SERVED, "kind's local-path storage provisioner (not served)",
                                    "kind's createContainer hook mount-product-files.sh and fuse-overlayfs"],
                }  # fmt: skip
            else:
                record.update(
                    {
                        "containerd": f"{base_record['packages'].get('containerd', '?')} (Debian {SUITE})",
                        "runc": f"{base_record['packages'].get('runc', '?')} (Debian {SUITE})",
                        "crictl": "plp-crictl (the suite's own minimal crictl, not cri-tools)",
                        "cni": "the suite's ptp DaemonSet with Debian's containernetworking-plugins "
                        f"{base_record['packages'].get('containernetworking-plugins', '?')}",
                        "node_components": "the suite's fallback: Debian's containerd and runc, plp-crictl, ptp",
                        "crictl_build": crictl_record(),
                    }
                )
            (rootfs / "kind/plp-node.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
            docker_image(rootfs, image_tag, record, run_step)
        except BaseException:  # the image is tagged only at its end (docker build); its work folder goes
            discard(directory)
            raise
        shutil.rmtree(directory)
        record["built_s"] = round(time.monotonic() - started, 1)
        record["components_s"] = parts_s
        write_record(node_image_record(image_tag, records), record)
        say(f"built {image_tag} ({record['built_s']} s so far)")
    return tags
