"""Where the matrix's observations come from, column by column: each record's origin (live on a cluster, derived from
the documents in older run records, or unknown), when and on what it ran, and the suite's commit; the documents by
their public titles.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from harness.base import families
from harness.core.records import origin_kind, origin_of

JsonDict = dict[str, Any]
ORIGIN_RANK = {"live": 0, "derived": 1, "unknown": 2}  # a live observation is shown before a derived one


def _when(stamps: list[str]) -> str | None:
    """The span of recording times, in UTC minutes."""
    parsed = []
    for stamp in stamps:
        try:
            parsed.append(datetime.fromisoformat(stamp))
        except ValueError:
            continue
    if not parsed:
        return None
    first, last = min(parsed).strftime("%Y-%m-%d %H:%M"), max(parsed).strftime("%Y-%m-%d %H:%M")
    if first == last:
        return f"{first} UTC"
    if first[:10] == last[:10]:
        return f"{first}–{last[11:]} UTC"
    return f"{first} – {last} UTC"


def record_provenance(record: JsonDict) -> JsonDict:
    """Where one record's observations come from: its kind, when, on what, and the suite's commit."""
    origin, run = record.get("recording_origin") or {}, record.get("provenance") or {}
    kind = origin_kind(record)
    live_now = record.get("transport") == "live"
    suite_from = origin if "suite_commit" in origin else run if live_now else {}
    commit = suite_from.get("suite_commit")
    suite = (
        "unknown" if not commit else str(commit)[:12] + (" + local changes" if suite_from.get("suite_modified") else "")
    )
    if kind == "live":
        when = origin.get("recorded_at") or (run.get("started") if live_now else None)
        cluster = origin_of(record)
        return {
            "kind": kind,
            "when": when,
            "on_what": cluster.on_what(),
            "runtime": cluster.runtime_words(),
            "suite": suite,
            "document": None,
        }
    document = origin.get("document")
    return {
        "kind": kind,
        "when": None,
        "on_what": "derived from documents, no cluster" if kind == "derived" else "a recording of unknown origin",
        "suite": suite,
        "document": document,
    }


def column_provenance(entries: list[JsonDict]) -> JsonDict:
    kinds = sorted({e["kind"] for e in entries}, key=ORIGIN_RANK.__getitem__)
    live = [e for e in entries if e["kind"] == "live"]
    documents = sorted({str(e["document"]) for e in entries if e["document"]})
    return {
        "kind": " + ".join(kinds),
        "kinds": kinds,
        "when": _when([str(e["when"]) for e in live if e["when"]]) or ("unknown" if live else None),
        "on_what": sorted({e["on_what"] for e in entries}, key=lambda w: (w.startswith(("derived", "a rec")), w)),
        # the cluster and container runtime of its live records: "kind v0.20.0 (runtime not recorded)", ...
        "runtime": sorted({str(e["runtime"]) for e in live if e.get("runtime")}),
        # known commits in order (a set's order changes with the hash seed), "unknown" last
        "suite": sorted({e["suite"] for e in entries}, key=lambda s: (s == "unknown", s)),
        "documents": [document_label(d) for d in documents],
        "records": {kind: sum(e["kind"] == kind for e in entries) for kind in kinds},
        # the fields earlier reports had, for readers of the data
        "origin": " + ".join(kinds),
    }


def document_label(document: str) -> str:
    """A document's public title for its id in probes/documents.yaml; anything else (an id this checkout does
    not know, what an old record names) as it is."""
    known = families.documents().get(document)
    return known.title if known else document
