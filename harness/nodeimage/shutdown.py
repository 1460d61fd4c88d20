"""The shutdown-capable sibling of a kind node image: the base plus D-Bus and systemd-logind, which the kubelet's
graceful node shutdown manager needs (harness/clusters/kind/node_shutdown.py says why), built with `docker build` the
first time and kept under the tag harness/nodeimage/tags.py gives it (one per base reference, so a new base is built
anew).
"""

from __future__ import annotations

from pathlib import Path

from harness.base.errors import ClusterFailed
from harness.base.process import Runner, run_command
from harness.nodeimage import tags

DOCKERFILE = """\
# Derived by pod-lifecycle-probes from a pinned kind node image: adds D-Bus and starts systemd-logind, which
# the kubelet's graceful node shutdown manager needs (kubernetes/kubernetes pkg/kubelet/nodeshutdown; kind#3135).
FROM {base}
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends dbus \\
 && rm -rf /var/lib/apt/lists/* \\
 && mkdir -p /etc/systemd/system/multi-user.target.wants \\
 && ln -sf /lib/systemd/system/dbus.service /etc/systemd/system/multi-user.target.wants/dbus.service \\
 && ln -sf /lib/systemd/system/systemd-logind.service \\
      /etc/systemd/system/multi-user.target.wants/systemd-logind.service
LABEL pod-lifecycle-probes.test/base-image="{base}"
"""


def ensure_derived_image(base_reference: str, cache_dir: Path, runner: Runner = run_command) -> tuple[str, str]:
    """The shutdown-capable image for a base node image: (tag, what was done), building it if absent."""
    tag = tags.shutdown_image_tag(base_reference)
    if runner(["docker", "image", "inspect", tag], 60).returncode == 0:
        return tag, f"using the shutdown-capable node image {tag} built earlier"
    context = cache_dir / tag.replace(":", "-")
    context.mkdir(parents=True, exist_ok=True)
    (context / "Dockerfile").write_text(DOCKERFILE.format(base=base_reference))
    built = runner(["docker", "build", "--tag", tag, str(context)], 1200)
    if built.returncode != 0:
        raise ClusterFailed(
            f"could not build the shutdown-capable node image {tag} from {base_reference}:\n{built.output}\n"
            f"hint: the build runs apt-get in the node image and needs network access; Dockerfile: {context}"
        )
    return tag, f"built the shutdown-capable node image {tag} from {base_reference} (Dockerfile: {context})"
