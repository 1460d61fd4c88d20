"""The suite's manifests (manifests/): each file is applied as written, or is a declared overlay of another.

A variant of a manifest is a file of its own, next to its base, that names the base and says what differs:

    overlay:
      base: pod-prestop-timeline.yaml
      placeholders: {PRESTOP_SECONDS: 30}  # filled in wherever the base's strings name them
      patch:                               # a JSON merge patch (RFC 7386): a value replaces, null removes
        spec:
          terminationGracePeriodSeconds: 5

So what a probe applies is always a file a reader can open: `probe.manifest(name)` reads it through here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MANIFESTS_DIR = Path(__file__).resolve().parent.parent / "manifests"
OVERLAY_FIELDS = frozenset({"base", "placeholders", "patch"})

JsonDict = dict[str, Any]


def load_manifest(filename: str, directory: Path = MANIFESTS_DIR) -> JsonDict:
    """The object a manifest file describes: the file itself, or its overlay applied to its base."""
    data: JsonDict = yaml.safe_load((directory / filename).read_text())
    overlay = data.get("overlay")
    if overlay is None:
        return data
    if set(data) != {"overlay"} or not set(overlay) <= OVERLAY_FIELDS or "base" not in overlay:
        raise ValueError(f"{filename}: an overlay has only `overlay:` with base, and placeholders and/or patch")
    manifest = load_manifest(overlay["base"], directory)
    for placeholder, value in (overlay.get("placeholders") or {}).items():
        manifest, filled = _fill(manifest, placeholder, str(value))
        if not filled:
            raise ValueError(f"{filename}: {overlay['base']} has no placeholder {placeholder}")
    return dict(merge_patch(manifest, overlay.get("patch") or {}))


def manifest_files(directory: Path = MANIFESTS_DIR) -> list[str]:
    """Every manifest file, bases and overlays, by name."""
    return sorted(path.name for path in directory.glob("*.yaml"))


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch; keys keep their place in `target`, new ones come last."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _fill(value: Any, placeholder: str, text: str) -> tuple[Any, bool]:
    """`value` with `placeholder` replaced by `text` in every string, and whether it occurred at all."""
    if isinstance(value, str):
        return value.replace(placeholder, text), placeholder in value
    if isinstance(value, dict):
        pairs = {key: _fill(item, placeholder, text) for key, item in value.items()}
        return {key: filled for key, (filled, _) in pairs.items()}, any(found for _, found in pairs.values())
    if isinstance(value, list):
        items = [_fill(item, placeholder, text) for item in value]
        return [filled for filled, _ in items], any(found for _, found in items)
    return value, False
