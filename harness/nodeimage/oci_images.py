"""Container images made on this host, for the local cluster and the kind node images: no registry is needed.

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

The writer also serves the kind node images (harness/nodeimage/images.py): several layers in order (a shared
tools layer and a binary layer), layers streamed from files and gzip'ed reproducibly, several names per
archive (one index.json entry each), and `directory_tar` for a root file system made by debootstrap.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

BUSYBOX = Path("/bin/busybox")  # Debian's busybox-static

# The names the manifests pin the probes' image by (alpine), under which the busybox image is made available.
PROBE_IMAGE_NAMES = (
    "docker.io/library/alpine:3.18.4@sha256:eece025e432126ce23f223450a0326fbebde39cdf496a85d8c016293fc851978",
    "docker.io/library/alpine@sha256:eece025e432126ce23f223450a0326fbebde39cdf496a85d8c016293fc851978",
)

# The busybox image itself, as made here.
LOCAL_PROBE_IMAGE = "docker.io/plp-local/busybox:debian"


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


def directory_tar(root: Path, out: Path, skip: tuple[str, ...] = ()) -> None:
    """An uncompressed layer tar of a root file system: sorted, mtime 0, numeric owners, hard links kept.

    `skip` names top-level directories whose content is left out (the directory itself stays): dev, proc, sys.
    Sockets and device nodes are never written; extended attributes (file capabilities) are not kept.
    """
    with tarfile.open(out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for directory, subdirs, files in os.walk(root):
            subdirs.sort()
            here = Path(directory)
            relative = here.relative_to(root)
            if relative.parts and relative.parts[0] in skip:
                subdirs.clear()
                continue
            for name in sorted(files):
                _add_path(tar, here / name, (relative / name).as_posix())
            for name in subdirs:
                _add_path(tar, here / name, (relative / name).as_posix())


def _add_path(tar: tarfile.TarFile, path: Path, arcname: str) -> None:
    info = tar.gettarinfo(str(path), arcname)
    if info.type not in (tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE):
        return
    info.mtime, info.uname, info.gname = 0, "", ""
    if info.isreg():
        with path.open("rb") as data:
            tar.addfile(info, data)
    else:
        tar.addfile(info)


LAYER_TAR = "application/vnd.oci.image.layer.v1.tar"
LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Layer:
    """One layer blob, in memory (`data`) or on disk (`path`): its digest, and the digest of its uncompressed tar."""

    digest: str  # sha256:... of the blob as stored (compressed or not)
    size: int
    diff_id: str  # sha256:... of the uncompressed tar (the image config's rootfs.diff_ids)
    media_type: str = LAYER_TAR
    data: bytes | None = None
    path: Path | None = None

    def open(self) -> BinaryIO:
        if self.data is not None:
            return io.BytesIO(self.data)
        if self.path is None:
            raise ImageError("a layer needs its data or the path of its blob")
        return self.path.open("rb")


def memory_layer(tar: bytes) -> Layer:
    """An uncompressed layer held in memory (small images: pause, busybox)."""
    digest = f"sha256:{hashlib.sha256(tar).hexdigest()}"
    return Layer(digest, len(tar), digest, LAYER_TAR, data=tar)


def file_layer(tar: Path, blobs: Path, compress: bool = True) -> Layer:
    """A layer blob under `blobs/` from an uncompressed tar file, gzip'ed reproducibly (mtime 0, no name) by default.

    The blob is named by its digest, so the same tar gives the same file, written once.
    """
    blobs.mkdir(parents=True, exist_ok=True)
    uncompressed = hashlib.sha256()
    partial = blobs / f".partial-{tar.name}-{os.getpid()}"
    with tar.open("rb") as source, partial.open("wb") as raw:
        packed = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) if compress else None
        while chunk := source.read(_CHUNK):
            uncompressed.update(chunk)
            (packed or raw).write(chunk)
        if packed is not None:
            packed.close()
    stored = hashlib.sha256()
    with partial.open("rb") as written:
        while chunk := written.read(_CHUNK):
            stored.update(chunk)
    target = blobs / stored.hexdigest()
    partial.replace(target)
    return Layer(
        f"sha256:{stored.hexdigest()}",
        target.stat().st_size,
        f"sha256:{uncompressed.hexdigest()}",
        LAYER_GZIP if compress else LAYER_TAR,
        path=target,
    )


def image_blobs(layers: list[Layer], config: dict[str, object]) -> tuple[bytes, bytes]:
    """(image config, image manifest) as the bytes whose sha256 name them (linux/amd64, layers in order)."""
    image_config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": config,
            "rootfs": {"type": "layers", "diff_ids": [layer.diff_id for layer in layers]},
        },
        sort_keys=True,
    ).encode()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": f"sha256:{hashlib.sha256(image_config).hexdigest()}",
                "size": len(image_config),
            },
            "layers": [{"mediaType": layer.media_type, "digest": layer.digest, "size": layer.size} for layer in layers],
        },
        sort_keys=True,
    ).encode()
    return image_config, manifest


def write_oci_archive(out: BinaryIO, names: list[str], layers: list[Layer], config: dict[str, object]) -> str:
    """An OCI image layout as a tar into `out` (what `ctr images import` reads); its manifest digest.

    Every name is one entry of index.json (the same manifest, `io.containerd.image.name` = the name), so
    one import creates every name. Reproducible: fixed order, mtime 0, each blob once.
    """
    image_config, manifest = image_blobs(layers, config)
    manifest_digest = f"sha256:{hashlib.sha256(manifest).hexdigest()}"
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
            for name in names
        ],
    }
    with tarfile.open(fileobj=out, mode="w") as tar:

        def add(path: str, size: int, data: BinaryIO) -> None:
            info = tarfile.TarInfo(path)
            info.size, info.mtime = size, 0
            tar.addfile(info, data)

        for path, data in (
            ("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'),
            ("index.json", json.dumps(index).encode()),
        ):
            add(path, len(data), io.BytesIO(data))
        written = set()
        for blob in (image_config, manifest):
            digest = hashlib.sha256(blob).hexdigest()
            add(f"blobs/sha256/{digest}", len(blob), io.BytesIO(blob))
            written.add(digest)
        for layer in layers:
            digest = layer.digest.split(":", 1)[1]
            if digest not in written:
                with layer.open() as content:
                    add(f"blobs/sha256/{digest}", layer.size, content)
                written.add(digest)
    return manifest_digest


def oci_archive(name: str, layer: bytes, config: dict[str, object]) -> tuple[bytes, str]:
    """An OCI image layout of one uncompressed layer as a tar in memory, and its manifest digest."""
    out = io.BytesIO()
    digest = write_oci_archive(out, [name], [memory_layer(layer)], config)
    return out.getvalue(), digest


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
