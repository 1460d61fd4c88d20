"""kind's node images made here: the one spelling of their tags and of where their records go.

    .tools/node-images/           records of node images built here (<tag>.json), their images/, derived Dockerfiles
    .tools/node-image-work/       scratch of node image builds

Every node image the suite builds (harness/nodeimage/) and kind's package, which runs them
(harness/clusters/kind/), take their names from here; harness/base/ knows none of them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from harness.base.paths import TOOLS

NODE_IMAGES = TOOLS / "node-images"
NODE_IMAGE_WORK = TOOLS / "node-image-work"
NODE_IMAGE_REPOSITORY = "plp-node"  # node images built here (make node-image)
SHUTDOWN_IMAGE_REPOSITORY = "plp-node-shutdown"  # graceful-shutdown siblings (harness/nodeimage/shutdown.py)


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
