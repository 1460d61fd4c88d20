"""What a failed probe leaves behind for a reader: the timeline, the objects as last seen and as they are now, the
namespace's events, every container's log and the node's containers (a replayed probe: what its recording holds)."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path

from harness.core.timeline import Timeline
from harness.core.transport import Transport
from harness.core.views import PodView


def write_evidence(
    directory: Path, timeline: Timeline, pods: list[PodView], namespace: str, live: Transport | None
) -> Path:
    """The evidence files in `directory`. `live` is the cluster behind the probe, asked directly (not through the
    recording); when the probe replayed a recording there is none, and the evidence is what the recording holds."""
    import yaml  # (only a failed probe writes YAML: not imported with every probe module)

    (directory / "timeline.txt").write_text(timeline.render() + "\n")
    (directory / "objects-last-seen.yaml").write_text(yaml.safe_dump_all([pod.raw for pod in pods], sort_keys=False))
    if live is None:
        (directory / "README.txt").write_text(
            "Replayed from a recording: no cluster to ask for events, logs or the node's containers.\n"
        )
        return directory
    collected: dict[str, Callable[[], object]] = {
        "objects-now.yaml": lambda: yaml.safe_dump_all(
            [live.get("Pod", namespace, name) for name in {pod.name for pod in pods}], sort_keys=False
        ),
        "events.yaml": lambda: yaml.safe_dump(live.list_events(namespace), sort_keys=False),
        "node-containers.json": lambda: json.dumps(
            {node: live.node_containers(node) for node in {p.node_name for p in pods if p.node_name}}, indent=1
        ),
    }
    for name, call in collected.items():
        (directory / name).write_text(_attempt(call))
    for pod in pods:
        for container in pod.containers:
            log = _attempt(partial(live.read_log, namespace, pod.name, container.name))
            (directory / f"log-{pod.name}-{container.name}.txt").write_text(log)
    return directory


def _attempt(call: Callable[[], object]) -> str:
    try:
        return str(call())
    except Exception as err:  # evidence is best effort: say what failed instead of hiding the probe's failure
        return f"(could not collect: {type(err).__name__}: {err})\n"
