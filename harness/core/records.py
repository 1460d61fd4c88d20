"""Probe records as the reports read them: loading them from run directories, and where their observations come from.

Below the reports that use it (it imports none of them), so that each can import it without a cycle."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

JsonDict = dict[str, Any]


def origin_kind(record: JsonDict) -> str:
    """Where a record's observations come from: "live" (a cluster, now or replayed), "derived" (documents)."""
    kind = (record.get("recording_origin") or {}).get("kind")
    if kind in ("live", "derived"):
        return str(kind)
    return "live" if record.get("transport") == "live" else "unknown"


def provider_of(record: JsonDict) -> str:
    """The kind of cluster a probe record's observations were made on: local, kind or existing."""
    origin, run = record.get("recording_origin") or {}, record.get("provenance") or {}
    cluster = str(origin.get("cluster") or run.get("cluster") or "")
    if cluster.startswith("local") or origin.get("kubernetes") or run.get("kubernetes_build"):
        return "local"
    if cluster.startswith("kind") or origin.get("node_image") or run.get("node_image"):
        return "kind"
    return "existing" if cluster == "existing" else cluster or "unknown"


class RecordError(ValueError):
    """A file given to the report is not a probe record; the message names it and says what it is instead."""


def load_records(paths: Iterable[Path]) -> list[JsonDict]:
    """Probe records under the given run directories (or record files), in a stable order."""
    records: list[JsonDict] = []
    for path in paths:
        files = [path] if path.is_file() else sorted(path.rglob("probes/*.json"))
        records.extend(_read_record(f) for f in files)
    return records


def _read_record(path: Path) -> JsonDict:
    """One probe record, or RecordError saying why the file is not one."""
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as err:
        raise RecordError(f"cannot read {path}: {err.strerror or err}") from err
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RecordError(f"{path} is not a probe record: not JSON") from err
    if isinstance(data, dict) and data.get("format", "").startswith("pod-lifecycle-probes/recording"):
        raise RecordError(f"{path} is a recording, not a probe record (replay it: pytest probes --replay {path})")
    if not isinstance(data, dict) or not {"probe", "family", "verdicts"} <= set(data):
        raise RecordError(f"{path} is not a probe record: it has no probe, family and verdicts")
    return data
