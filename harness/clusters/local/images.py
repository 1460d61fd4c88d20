"""The images a local cluster's containerd holds, made here and imported with `ctr`: the pause image this release's
kubeadm names, built from the release's pause.c, and the probes' image (Debian's busybox) under every name the
manifests use (harness/nodeimage/oci_images.py makes both)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from harness.clusters.local.containerd import ctr
from harness.nodeimage.oci_images import (
    LOCAL_PROBE_IMAGE,
    PROBE_IMAGE_NAMES,
    ImageError,
    busybox_layer,
    oci_archive,
    pause_layer,
    pause_tag,
)


def pause_image(kubernetes_source: Path) -> str:
    """The sandbox image: the pause tag this release's kubeadm names (built from its source by import_images)."""
    return f"registry.k8s.io/pause:{pause_tag(kubernetes_source)}"


def import_images(state: Path, pause: str, kubernetes_source: Path, version: str) -> dict[str, Any]:
    """Build the pause and probe images and import them into the containerd of the cluster at `state`; what each
    is and was built from, for the cluster's record."""
    work = state / "images"
    work.mkdir(exist_ok=True)
    source = kubernetes_source / "build" / "pause" / "linux" / "pause.c"
    archive, pause_digest = oci_archive(
        pause,
        pause_layer(source, work, pause.rsplit(":", 1)[1]),
        {"Entrypoint": ["/pause"], "User": "65535:65535"},
    )
    _import(state, pause, archive)
    env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
    archive, probe_digest = oci_archive(LOCAL_PROBE_IMAGE, busybox_layer(), {"Env": env, "Cmd": ["/bin/sh"]})
    _import(state, LOCAL_PROBE_IMAGE, archive)
    for alias in PROBE_IMAGE_NAMES:
        tagged = ctr(state, "images", "tag", "--force", LOCAL_PROBE_IMAGE, alias, timeout=120)
        if tagged.returncode != 0:
            raise ImageError(f"ctr images tag {alias} failed: {tagged.stderr.strip()}")
    busybox = subprocess.run(
        ["dpkg-query", "-W", "-f", "busybox-static ${Version}", "busybox-static"],
        capture_output=True,
        text=True,
        check=False,
    )
    return {
        pause: {"digest": pause_digest, "built_from": f"{source.name} of k8s.io/kubernetes@{version}"},
        LOCAL_PROBE_IMAGE: {
            "digest": probe_digest,
            "built_from": f"Debian {busybox.stdout.strip() or 'busybox-static'} (/bin/busybox and its applets)",
            "also_named": list(PROBE_IMAGE_NAMES),
        },
    }


def _import(state: Path, name: str, archive: bytes) -> None:
    path = state / f"{name.rsplit('/', 1)[-1].replace(':', '_')}.oci.tar"
    path.write_bytes(archive)
    done = ctr(state, "images", "import", "--snapshotter", "overlayfs", str(path), timeout=120)
    path.unlink()
    if done.returncode != 0:
        raise ImageError(f"ctr images import of {name} failed: {done.stderr.strip()}")
