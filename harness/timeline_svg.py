"""A probe's timeline drawn as the documents draw it, one row per version, stacked (matplotlib, SVG).

Times are relative to the probe's anchor action (the delete, or the create for deadline probes). Marked:
the probe's actions, phase changes, containers stopping (with exit code), objects gone, Job conditions,
node checks, endpoint changes and the container's own instants are listed in the record, not drawn.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

JsonDict = dict[str, Any]


def marks(entries: list[JsonDict]) -> list[tuple[float, str]]:
    """The instants worth drawing: (t, label), from a record's timeline entries."""
    out: list[tuple[float, str]] = []
    previous: dict[str, JsonDict] = {}
    for entry in entries:
        t, source, what, detail = entry["t"], entry["source"], entry["what"], entry.get("detail") or {}
        if source == "probe":
            out.append((t, what))
            continue
        before = previous.get(source, {})
        previous[source] = detail
        kind, _, name = source.partition("/")
        short = name.rsplit("-", 1)[-1] if kind == "pod" and name.count("-") >= 2 else name
        if what in ("DELETED", "GONE"):
            out.append((t, f"{short} gone"))
        if detail.get("phase") and detail.get("phase") != before.get("phase") and before:
            out.append((t, f"{short} {detail['phase']}"))
        for container in detail.get("containers") or []:
            was: JsonDict = next(
                (c for c in before.get("containers") or [] if c.get("name") == container.get("name")), {}
            )
            if container.get("state") == "terminated" and was.get("state") != "terminated":
                out.append((t, f"{container['name']} exit {container.get('exitCode')}"))
        for condition, value in (detail.get("conditions") or {}).items():
            if (
                kind == "job"
                and value != (before.get("conditions") or {}).get(condition)
                and str(value).startswith("True")
            ):
                out.append((t, f"Job {condition}"))
        if kind == "statefulset" and before:
            for field in ("replicas", "currentRevision", "updatedReplicas"):
                if detail.get(field) != before.get(field):
                    value = str(detail.get(field)).rsplit("-", 1)[-1]  # a revision by its hash
                    out.append((t, f"{field} {value}"))
        if what == "crictl":
            out.append((t, f"node: {detail.get('state')}"))
    return out


def draw(title: str, series: Mapping[str, list[JsonDict]]) -> str:
    """An SVG of the timelines of one probe on several versions, stacked one row per version."""
    # Imported here: matplotlib is half of what `python -m harness` would otherwise load at every start.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    versions = list(series)
    figure, axes = plt.subplots(figsize=(11, 0.9 + 0.75 * len(versions)))
    for row, version in enumerate(versions):
        y = len(versions) - 1 - row
        points = marks(series[version])
        axes.hlines(y, min([0.0] + [t for t, _ in points]), max([1.0] + [t for t, _ in points]), color="#bbb", lw=1)
        for i, (t, label) in enumerate(points):
            axes.plot(t, y, marker="o", color="#c0392b" if "delete" in label else "#2c6fbb", ms=5)
            axes.annotate(label, (t, y), xytext=(2, 7 if i % 2 == 0 else -13), textcoords="offset points", fontsize=7)
    axes.set_yticks(range(len(versions)), list(reversed(versions)))
    axes.set_ylim(-0.8, len(versions) - 0.2)
    axes.axvline(0, color="#c0392b", lw=0.8, ls="--")
    axes.set_xlabel("seconds from the anchor action")
    axes.set_title(title, fontsize=9, loc="left")
    for side in ("top", "right", "left"):
        axes.spines[side].set_visible(False)
    figure.tight_layout()
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "pod-lifecycle-probes"}):  # the same drawing gives the same SVG
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(figure)
    svg = buffer.getvalue()
    return svg[svg.index("<svg") :]
