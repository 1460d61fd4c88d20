"""Container images for the local cluster, made on this host: no registry is needed (or reachable).

- The sandbox image: `pause` compiled from `build/pause/linux/pause.c` of the Kubernetes module being run,
  with gcc `-Os -Wall -Werror -static`, as `build/pause/Makefile` does; `USER 65535:65535` and
  `ENTRYPOINT ["/pause"]` as its Dockerfile. Named `registry.k8s.io/pause:<tag>` (the kubelet's default
  for that release) and set as containerd's `sandbox_image`.
- The probes' image: Debian's `busybox-static` (one static binary and its applet links), which gives every
  command the manifests run (`sh`, `sleep`, `trap`, `cut`, `cat /proc/uptime`). It is named exactly as the
  manifests pin alpine (`docker.io/library/alpine:3.18.4@sha256:eece…`, and the digest-only form the CRI
  normalises to): containerd's CRI looks an image up by that name in its own store, so the pods run it
  without a pull. The run record says which image really ran (its manifest digest and what it is built
  from); a container's `imageID` in the pod status shows the local digest too.

Each image is an OCI image layout written here (one uncompressed layer, deterministic tar), imported with
`ctr images import` into the suite's containerd, then tagged with the names above.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

BUSYBOX = Path("/bin/busybox")  # Debian's busybox-static


class ImageError(RuntimeError):
    """An image could not be made or imported; the message says what is missing."""


@dataclass(frozen=True)
class FileEntry:
    path: str
    data: bytes | None = None  # None: a directory (or a symlink when `link` is set)
    mode: int = 0o755
    link: str | None = None


def layer_tar(entries: list[FileEntry]) -> bytes:
    """An uncompressed, reproducible layer (mtime 0, root-owned)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in entries:
            info = tarfile.TarInfo(entry.path)
            info.mtime, info.mode = 0, entry.mode
            if entry.link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, entry.link
            elif entry.data is None:
                info.type = tarfile.DIRTYPE
            else:
                info.size = len(entry.data)
            tar.addfile(info, io.BytesIO(entry.data) if entry.data else None)
    return buffer.getvalue()


def oci_archive(name: str, layer: bytes, config: dict[str, object]) -> tuple[bytes, str]:
    """An OCI image layout as a tar (what `ctr images import` reads), and its manifest digest."""
    blobs: dict[str, bytes] = {}

    def blob(data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return f"sha256:{digest}"

    layer_digest = blob(layer)
    image_config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": config,
            "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        },
        sort_keys=True,
    ).encode()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": blob(image_config),
                "size": len(image_config),
            },
            "layers": [
                {"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer_digest, "size": len(layer)}
            ],
        },
        sort_keys=True,
    ).encode()
    manifest_digest = blob(manifest)
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest_digest,
                "size": len(manifest),
                "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": {"io.containerd.image.name": name},
            }
        ],
    }
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        files = {"oci-layout": b'{"imageLayoutVersion":"1.0.0"}', "index.json": json.dumps(index).encode()}
        files.update({f"blobs/sha256/{d}": data for d, data in blobs.items()})
        for path, data in files.items():
            info = tarfile.TarInfo(path)
            info.size, info.mtime = len(data), 0
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue(), manifest_digest


def busybox_layer(busybox: Path = BUSYBOX) -> bytes:
    if not busybox.is_file():
        raise ImageError(f"{busybox} is missing: install Debian's busybox-static (apt-get install busybox-static)")
    listed = subprocess.run([str(busybox), "--list-full"], capture_output=True, text=True, check=True).stdout.split()
    entries = [FileEntry(d) for d in ("bin", "sbin", "usr", "usr/bin", "usr/sbin", "etc", "proc", "sys", "dev")]
    entries += [FileEntry("tmp", mode=0o1777), FileEntry("root", mode=0o700)]
    entries += [
        FileEntry("bin/busybox", busybox.read_bytes()),
        FileEntry("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n", 0o644),
        FileEntry("etc/group", b"root:x:0:\nnobody:x:65534:\n", 0o644),
    ]
    entries += [FileEntry(a, link="/bin/busybox", mode=0o777) for a in listed if a != "bin/busybox"]
    return layer_tar(entries)


def pause_layer(pause_source: Path, work: Path, tag: str) -> bytes:
    if shutil.which("gcc") is None:
        raise ImageError("the sandbox (pause) image is compiled here: install gcc and libc6-dev")
    binary = work / "pause"
    compiled = subprocess.run(
        [
            "gcc",
            "-Os",
            "-Wall",
            "-Werror",
            "-static",
            f"-DVERSION=v{tag}-plp-local",
            "-o",
            str(binary),
            str(pause_source),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if compiled.returncode != 0:
        raise ImageError(f"compiling {pause_source} failed (static libc needs libc6-dev):\n{compiled.stderr[-2000:]}")
    return layer_tar([FileEntry("pause", binary.read_bytes())])


def pause_tag(kubernetes_source: Path) -> str:
    """The pause tag this release's kubelet and kubeadm use (kubeadm's PauseVersion constant)."""
    constants = kubernetes_source / "cmd" / "kubeadm" / "app" / "constants" / "constants.go"
    for line in constants.read_text().splitlines():
        if line.strip().startswith("PauseVersion") and "=" in line:
            return line.split("=", 1)[1].strip().strip('"')
    raise ImageError(f"no PauseVersion in {constants}")
