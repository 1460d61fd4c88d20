"""The suite's manifests (probes/<family>/manifests/): each file is applied as written, or a declared overlay.

A variant of a manifest is a file of its own, next to its base, that names the base and says what differs:

    overlay:
      base: pod-prestop-timeline.yaml
      placeholders: {PRESTOP_SECONDS: 30}  # filled in wherever the base's strings name them; a string that is
                                           # the placeholder alone becomes the value, type and all (a number)
      patch:                               # a JSON merge patch (RFC 7386): a value replaces, null removes
        spec:
          terminationGracePeriodSeconds: 5

So what a probe applies is always a file a reader can open: `probe.manifest(name)` reads it through here.
A manifest is named by its file name, unique in the suite (harness/base/families.py finds its family's folder); a
base is looked for next to its overlay first, so it may also live in another family's folder.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from harness.base.families import families, load_yaml, manifest_path

OVERLAY_FIELDS = frozenset({"base", "placeholders", "patch"})

JsonDict = dict[str, Any]


def load_manifest(filename: str, directory: Path | None = None) -> JsonDict:
    """The object a manifest file describes: the file itself, or its overlay applied to its base.

    `directory`: one folder holding the file and its base; by default the suite's family folders.
    """
    path = directory / filename if directory is not None else manifest_path(filename)
    data: JsonDict = load_yaml(path)
    overlay = data.get("overlay")
    if overlay is None:
        return data
    if set(data) != {"overlay"} or not set(overlay) <= OVERLAY_FIELDS or "base" not in overlay:
        raise ValueError(f"{filename}: an overlay has only `overlay:` with base, and placeholders and/or patch")
    beside = path.parent / overlay["base"]
    manifest = load_manifest(overlay["base"], path.parent if beside.is_file() else None)
    for placeholder, value in (overlay.get("placeholders") or {}).items():
        manifest, filled = _fill(manifest, placeholder, value)
        if not filled:
            raise ValueError(f"{filename}: {overlay['base']} has no placeholder {placeholder}")
    return dict(merge_patch(manifest, overlay.get("patch") or {}))


@cache
def family_manifest(family_dir: Path, filename: str) -> JsonDict:
    """A manifest as a probe of the family in `family_dir` finds it (its own manifests/ first, then the suite's
    folders), read once a process, as a family's claims are (load_claims): a replay of every recording reads the same
    few dozen files 2,700 times, an overlay two files with its placeholders filled in and its patch applied (55-90 us
    each, a copy of what is read here 7 us). Only read: each caller takes a copy (Probe.manifest)."""
    own = family_dir / "manifests" / filename
    return load_manifest(filename, own.parent if own.is_file() else None)


def templates(directory: Path | None = None) -> set[str]:
    """The bases whose placeholders overlays fill in: not manifests on their own (`seconds: SLEEP_SECONDS` is no
    integer), each is what its overlays make of it."""
    found = set()
    for name in manifest_files(directory):
        path = directory / name if directory is not None else manifest_path(name)
        overlay = (load_yaml(path) or {}).get("overlay") or {}
        if overlay.get("placeholders"):
            found.add(str(overlay["base"]))
    return found


def manifest_files(directory: Path | None = None) -> list[str]:
    """Every manifest file, bases and overlays, by name: of one folder, by default of every family."""
    folders = [directory] if directory is not None else [f.manifests for f in families()]
    return sorted(path.name for folder in folders for path in folder.glob("*.yaml"))


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


def _fill(value: Any, placeholder: str, filling: Any) -> tuple[Any, bool]:
    """`value` with `placeholder` replaced by `filling` in every string, and whether it occurred at all. A string
    that is the placeholder alone becomes `filling` itself, so a number stays a number (`seconds: SLEEP`)."""
    if isinstance(value, str):
        if value == placeholder:
            return filling, True
        return value.replace(placeholder, str(filling)), placeholder in value
    if isinstance(value, dict):
        pairs = {key: _fill(item, placeholder, filling) for key, item in value.items()}
        return {key: filled for key, (filled, _) in pairs.items()}, any(found for _, found in pairs.values())
    if isinstance(value, list):
        items = [_fill(item, placeholder, filling) for item in value]
        return [filled for filled, _ in items], any(found for _, found in items)
    return value, False
