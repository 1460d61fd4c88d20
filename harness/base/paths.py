"""Where the suite keeps what it installs and builds: the one owner of `.tools/` paths, and the one spelling of
the names it gives what it makes (clusters, node images). Every other module takes its paths and names from here.

    .tools/                       never in git; `make clean` leaves it (a cache)
      kind-<release>              kind releases downloaded (sha256-checked) or built from their module
      go/                         Go toolchains and the module cache of the builds
      kubernetes/v<X.Y.Z>/        Kubernetes built from its Go modules (harness/gobuild/)
      addons/, crictl/            etcd, CoreDNS, kube-proxy's base and crictl built for node images (harness/nodeimage/)
      node-images/                records of node images built here (<tag>.json), their images/, derived Dockerfiles
      node-image-work/            scratch of node image builds
      engine/                     the suite's own dockerd (harness/clusters/kind/engine.py)
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from harness.base.run import safe_name

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / ".tools"
NODE_IMAGES = TOOLS / "node-images"
NODE_IMAGE_WORK = TOOLS / "node-image-work"
ENGINE = TOOLS / "engine"
RUNS = REPO / "runs"

CLUSTER_PREFIX = "plp-"  # every cluster the suite makes; `make clean` removes only these
NODE_IMAGE_REPOSITORY = "plp-node"  # node images built here (make node-image)
SHUTDOWN_IMAGE_REPOSITORY = "plp-node-shutdown"  # graceful-shutdown siblings (harness/nodeimage/shutdown.py)


def cluster_name(minor: str, run_id: str, role: str = "") -> str:
    """`plp-<minor>-<last 4 of the run id>[-<role>]`: the name of a cluster a run makes (role "gns": the
    graceful-node-shutdown cluster). `minor` is made name-safe ('1.27' -> '1-27')."""
    return f"{CLUSTER_PREFIX}{safe_name(minor)}-{run_id[-4:]}{f'-{role}' if role else ''}"


def node_image_tag(version_text: str) -> str:
    """`plp-node:v1.27.0-rc.0`: a node image built here for one release (a `v` is added when missing)."""
    return f"{NODE_IMAGE_REPOSITORY}:{version_text if version_text.startswith('v') else f'v{version_text}'}"


def node_image_record(tag: str, directory: Path = NODE_IMAGES) -> Path:
    """`.tools/node-images/plp-node-v1.27.0-rc.0.json`: what built a node image made here, and which kind runs it."""
    return directory / f"{tag.replace(':', '-')}.json"


def shutdown_image_tag(base_reference: str) -> str:
    """`plp-node-shutdown:v1.29.14-<12 hex of the base reference>`: one tag per base image."""
    repository_tag = base_reference.split("@", 1)[0]
    version = repository_tag.rsplit(":", 1)[-1] if ":" in repository_tag.rsplit("/", 1)[-1] else "latest"
    digest = hashlib.sha256(base_reference.encode()).hexdigest()[:12]
    return f"{SHUTDOWN_IMAGE_REPOSITORY}:{version}-{digest}"


def in_checkout(path: Path, repo: Path = REPO) -> str:
    """How a committed record names a path: relative to the checkout ("runs/bisect-…/1.28.4"), so a record means
    the same on every clone; a path outside the checkout (a --run-dir elsewhere) stays as given."""
    resolved = path.resolve()
    try:
        return str(resolved.relative_to(repo.resolve()))
    except ValueError:
        return str(path)


def from_record(text: str, repo: Path = REPO) -> Path:
    """A path a committed record names, as a path here: relative ones are under the checkout; an absolute one (old
    records were written with the recording machine's absolute paths) is kept, though it may
    name nothing on this machine."""
    path = Path(text)
    return path if path.is_absolute() else repo / path
