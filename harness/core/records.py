"""Probe records as the reports read them: loading them from run directories, and where their observations come from.

Below the reports that use it (it imports none of them), so that each can import it without a cycle."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.base.json_read import parse_json

JsonDict = dict[str, Any]


def origin_kind(record: JsonDict) -> str:
    """Where a record's observations come from: "live" (a cluster, now or replayed), "derived" (documents)."""
    kind = (record.get("recording_origin") or {}).get("kind")
    if kind in ("live", "derived"):
        return str(kind)
    return "live" if record.get("transport") == "live" else "unknown"


# ----- A record's origin: what its observations ran on, read in this one place. Each kind of origin says itself
# what it was (provider), where it ran and on what, in words; the reports never branch on a kind's name.

# What a runtime component's version string says first: "containerd github.com/containerd/containerd 1.6.20~ds1 ..."
# -> 1.6.20, "runc version 1.1.5+ds1" -> 1.1.5, "v2.1.4" -> 2.1.4.
_COMPONENT_VERSION = re.compile(r"(?<![\w.])v?(\d+\.\d+(?:\.\d+)?(?:-(?:alpha|beta|rc)\.?\d+)?)")
RUNTIME_KEYS = ("containerd", "runc", "cni", "crictl", "cgroup")
PROVIDER_ORDER = ("local",)  # listed first where runs are counted per provider; the others in name order


@dataclass(frozen=True)
class Origin:
    """What a record's observations were made on: a cluster the record does not describe, unless a subclass says
    more. `fields` is the recording's origin as written, `run` the run's provenance."""

    fields: Mapping[str, Any]
    run: Mapping[str, Any]
    provider: str = "unknown"

    def where(self) -> str:
        """The cluster in a few words ("local build", "kind v0.33.0")."""
        return "a cluster the record does not describe"

    def on_what(self) -> str:
        """The cluster in a sentence: what built it, or which image or context it was."""
        return "a cluster the record does not describe"

    def runtime_words(self) -> str:
        """The cluster and container runtime: 'kind v0.33.0 (containerd 2.1.4, runc 1.3.0, cgroup v1)', 'local build
        (containerd 1.6.20, runc 1.1.5)', or '... (runtime not recorded)'."""
        parts = []
        for key in RUNTIME_KEYS:
            value = self.fields.get(key)
            if value in (None, "", {}):
                continue
            text = str(value.get("version", value) if isinstance(value, dict) else value)
            if key == "cgroup":
                parts.append(f"cgroup {text if text.startswith('v') else 'v' + text}")
                continue
            match = _COMPONENT_VERSION.search(text)
            parts.append(f"{key} {match.group(1) if match else text}")
        return f"{self.where()} ({', '.join(parts) if parts else 'runtime not recorded'})"

    def said(self, key: str) -> Any:
        """A fact the recording's origin states, else the run's provenance."""
        return self.fields.get(key) or self.run.get(key)


@dataclass(frozen=True)
class LocalBuild(Origin):
    """A cluster of Kubernetes built here from its Go modules (CLUSTER=local)."""

    build: Mapping[str, Any] = field(default_factory=dict)
    provider: str = "local"

    def where(self) -> str:
        return "local build"

    def on_what(self) -> str:
        build = self.build
        parts = [f"local build of {build.get('version', '?')} at {str(build.get('commit') or '?')[:12]}"]
        parts += [str(build[k]) for k in ("toolchain",) if build.get(k)]
        if substituted := build.get("staging_substitutions"):
            listed = ", ".join(f"{m.removeprefix('k8s.io/')} {v}" for m, v in sorted(substituted.items()))
            parts.append(f"staging modules substituted: {listed}")
        if stood_in := build.get("module_stand_ins"):
            parts.append(f"stand-ins written here for: {', '.join(sorted(stood_in))}")
        containerd = self.fields.get("containerd")
        parts += [f"containerd {str(containerd).split(' ')[-1]}"] if containerd else []
        return ", ".join(parts) if len(parts) == 1 else f"{parts[0]} ({', '.join(parts[1:])})"


@dataclass(frozen=True)
class KindNodeImage(Origin):
    """A kind cluster on a node image."""

    image: str | None = None
    provider: str = "kind"

    def where(self) -> str:
        kind_version = self.said("kind_version")
        return f"kind {kind_version}" if kind_version else "kind"

    def on_what(self) -> str:
        kind_version = self.said("kind_version")
        return f"kind node image {self.image or '?'}" + (f" (kind {kind_version})" if kind_version else "")


@dataclass(frozen=True)
class ExistingCluster(Origin):
    """A cluster the user gave."""

    provider: str = "existing"

    def where(self) -> str:
        return "existing cluster"

    def on_what(self) -> str:
        context = self.said("context")
        return "existing cluster" + (f" (context {context})" if context else "")


def origin_of(record: JsonDict) -> Origin:
    """What a probe record's observations were made on, from its recording's origin and its run's provenance."""
    fields, run = record.get("recording_origin") or {}, record.get("provenance") or {}
    cluster = str(fields.get("cluster") or run.get("cluster") or "")
    build = fields.get("kubernetes") or run.get("kubernetes_build")
    image = fields.get("node_image") or run.get("node_image")
    if cluster.startswith("local") or build:
        return LocalBuild(fields, run, build=build or {})
    if cluster.startswith("kind") or image:
        return KindNodeImage(fields, run, image=image)
    if cluster == "existing":
        return ExistingCluster(fields, run)
    return Origin(fields, run, cluster or "unknown")


def provider_of(record: JsonDict) -> str:
    """The kind of cluster a probe record's observations were made on: local, kind or existing."""
    return origin_of(record).provider


class RecordError(ValueError):
    """A file given to the report is not a probe record; the message names it and says what it is instead."""


def load_records(paths: Iterable[Path]) -> list[JsonDict]:
    """Probe records under the given run directories (or record files), in a stable order. The records are the
    readers' to read, never to change: a file read again gives the record read before (_READ)."""
    records: list[JsonDict] = []
    for path in paths:
        files = [path] if path.is_file() else sorted(path.rglob("probes/*.json"))
        records.extend(_read_record(f) for f in files)
    return records


# The records read in this process, by their files' bytes: the same bytes are the same record, wherever they are read
# from (a replay's records linked into another folder, the same run reported twice). The offline tests read a replay's
# 2,385 records again and again (make report's and make upgrade's commands run in-process): parsing them takes
# 0.35 s of CPU, reading their bytes again 0.04 s. Forgotten all at once past _READ_KEPT bytes.
_READ: dict[bytes, JsonDict] = {}
_READ_KEPT = 512 * 2**20
_kept_bytes = [0]  # the bytes of the records in _READ


def _read_record(path: Path) -> JsonDict:
    """One probe record, or RecordError saying why the file is not one."""
    try:
        text = path.read_bytes()
    except OSError as err:
        raise RecordError(f"cannot read {path}: {err.strerror or err}") from err
    if (known := _READ.get(text)) is not None:
        return known
    try:
        data = parse_json(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RecordError(f"{path} is not a probe record: not JSON") from err
    if isinstance(data, dict) and data.get("format", "").startswith("pod-lifecycle-probes/recording"):
        raise RecordError(f"{path} is a recording, not a probe record (replay it: pytest probes --replay {path})")
    if not isinstance(data, dict) or not {"probe", "family", "verdicts"} <= set(data):
        raise RecordError(f"{path} is not a probe record: it has no probe, family and verdicts")
    if _kept_bytes[0] + len(text) > _READ_KEPT:
        _READ.clear()
        _kept_bytes[0] = 0
    _READ[text] = data
    _kept_bytes[0] += len(text)
    return data
