"""The behaviour matrix read from run records (`build_matrix`): every verdict re-evaluated against the current
expectations from the recorded observation, so a corrected expectation can be tried on old recordings without a
cluster (the matrix says which verdicts changed). A cell shows one observation of those behind it: a live one before
one derived from the documents (only older run records name such recordings), then the worst verdict. Each record's
provenance is report_provenance.py's, each probe's scenario report_scenarios.py's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from packaging.version import Version

from harness.base import families
from harness.base.versions import KubeVersion
from harness.core.basis import Doubt
from harness.core.expectations import FAIL, NOT_OBSERVABLE, Claim, evaluate, load_claims
from harness.core.records import origin_kind
from harness.reports import coverage_words
from harness.reports.kept import KeptWith
from harness.reports.report_model import SEVERITY, Cell, ClaimsLoader, JsonDict, Matrix, Row
from harness.reports.report_provenance import ORIGIN_RANK, column_provenance, record_provenance
from harness.reports.report_scenarios import scenario
from harness.reports.upgrade_compare import Observations
from harness.reports.upgrade_model import Seen


@dataclass
class _Seen:
    origin: str
    now: JsonDict
    recorded: str
    probe: str
    where: str


def build_matrix(
    records: Iterable[JsonDict], claims_loader: ClaimsLoader = load_claims, runtimes: Mapping[str, str] | None = None
) -> Matrix:
    """The matrix of the records, every verdict re-evaluated against the claims `claims_loader` gives: a column per
    server version, and one per make matrix entry that named a runtime (`runtimes`: the run id of such an entry's
    run -> the runtime, as harness/axis/matrix.py entry_runtimes reads them), headed by its release and runtime."""
    records = list(records)
    column_versions: dict[str, str] = {}
    seen: dict[tuple[str, str, str], list[_Seen]] = {}
    claims: dict[str, JsonDict] = {}
    claim_objects: dict[str, Claim] = {}
    provenance_entries: dict[str, list[JsonDict]] = {}
    probe_claims: dict[str, list[str]] = {}
    family_of_probe: dict[str, str] = {}
    timelines: dict[str, dict[tuple[str, str], list[JsonDict]]] = {}
    anchors: dict[str, str] = {}
    live_seen: dict[tuple[str, str], list[Seen]] = {}  # what upgrade_compare.live_observations finds, judged here once
    runtimes_seen: dict[str, list[str]] = {}  # release -> the runtimes of its live records, each once
    for record in records:
        version = record.get("server_version")
        if not version:
            continue
        column = version
        if runtime := (runtimes or {}).get(str((record.get("provenance") or {}).get("run_id"))):
            column = f"{version}:{runtime}"
            column_versions[column] = version
        probe = record["probe"]
        read = _read(record, claims_loader(record["family"]))
        kind = read.kind
        family_of_probe.setdefault(probe, record["family"])
        provenance_entries.setdefault(column, []).append(read.provenance)
        if kind == "live":  # upgrade_compare.live_runtimes, from the words the provenance read
            said = runtimes_seen.setdefault(read.release, [])
            if read.provenance["runtime"] not in said:
                said.append(read.provenance["runtime"])
        timeline = record.get("timeline") or {}
        timelines.setdefault(probe, {}).setdefault((column, kind), timeline.get("entries", []))
        anchors.setdefault(probe, timeline.get("anchor") or "anchor action")
        for claim, observation, judged in read.verdicts:
            claim_objects[claim.id] = claim
            claims.setdefault(
                claim.id, {"statement": claim.claim, "observable": claim.observable, "document": claim.document}
            )
            if claim.id not in probe_claims.setdefault(probe, []):
                probe_claims[probe].append(claim.id)
            if judged is not None:
                live_seen.setdefault((claim.id, read.release), []).append(judged)
            seen.setdefault((probe, claim.id, column), []).append(observation)
    row_cells = {key: _cell(observations) for key, observations in seen.items()}
    by_claim: dict[tuple[str, str], list[tuple[str, str, str]]] = {}  # (claim, column) -> the rows' keys in it
    for key in seen:
        by_claim.setdefault((key[1], key[2]), []).append(key)
    # a claim one probe checks (most) has its row's cell: the same observations, made into a cell once
    cells = {
        key: row_cells[keys[0]] if len(keys) == 1 else _cell([o for k in keys for o in seen[k]])
        for key, keys in sorted(by_claim.items())
    }
    scenarios = {probe: scenario(probe, family) for probe, family in family_of_probe.items()}
    rows = [
        Row(claim_objects[claim_id].document, probe, claim_id)
        for probe in sorted(probe_claims, key=lambda p: scenarios[p].order)
        for claim_id in probe_claims[probe]
    ]
    registry = list(families.documents())  # documents in probes/documents.yaml's order, then any other by name
    # stable: scenarios keep their order within a document
    rows.sort(key=lambda r: (registry.index(r.document) if r.document in registry else len(registry), r.document))

    def in_order(column: str) -> tuple[Version, str]:
        return KubeVersion.parse(column_versions.get(column, column)).version, column

    ordered = sorted(provenance_entries, key=in_order)
    series: dict[str, dict[str, list[JsonDict]]] = {}
    tags: dict[str, dict[str, str]] = {}
    for probe in sorted(timelines, key=lambda p: scenarios[p].order):
        keys = sorted(timelines[probe], key=lambda k: (in_order(k[0]), ORIGIN_RANK[k[1]]))
        versions_seen = [v for v, _ in keys]
        for version, kind in keys:
            label = version if versions_seen.count(version) == 1 else f"{version} ({kind})"
            series.setdefault(probe, {})[label] = timelines[probe][(version, kind)]
            tags.setdefault(probe, {})[label] = kind
    return Matrix(
        versions=ordered,
        claims=dict(sorted(claims.items())),
        cells=cells,
        provenance={v: column_provenance(provenance_entries[v]) for v in ordered},
        timelines=series,
        rows=rows,
        row_cells=row_cells,
        claim_objects=claim_objects,
        scenarios=scenarios,
        timeline_tags=tags,
        anchors=anchors,
        live_coverage=coverage_words.section_for_records(records, claims_loader),
        observations=Observations(live_seen, {release: tuple(sorted(said)) for release, said in runtimes_seen.items()}),
        claims_loader=claims_loader,
        column_versions=column_versions,
    )


@dataclass(frozen=True)
class _Read:
    """What a record gives a matrix whatever its column: its origin, its provenance, its release (as make upgrade
    names it), and each verdict of a claim the loader knows, re-evaluated, with its judgment when live."""

    kind: str
    provenance: JsonDict
    release: str
    verdicts: tuple[tuple[Claim, _Seen, Seen | None], ...]


# Each record's reading against the claims it was read with (other claims read it again): the tests build matrices of
# the same records again and again (the shared replay's, with more records beside, or read again by make report's
# command in-process).
_READ: KeptWith[_Read] = KeptWith(10_000)  # four replays of every shipped recording


def _read(record: JsonDict, current: Mapping[str, Claim]) -> _Read:
    """The record's _Read against the claims `current` (its family's), worked out once a record and claims."""
    return _READ.get((record, current), lambda: _reading(record, current))


def _reading(record: JsonDict, current: Mapping[str, Claim]) -> _Read:
    version, probe, kind = record["server_version"], record["probe"], origin_kind(record)
    release = str(KubeVersion.parse(version).version)
    where = str((record.get("recording_origin") or {}).get("file") or (record.get("provenance") or {}).get("run_id"))
    verdicts = []
    for verdict in record.get("verdicts", []):
        claim = current.get(verdict["claim"])
        if claim is None:
            continue
        judged = None
        if verdict["status"] == NOT_OBSERVABLE:
            now = verdict
        else:
            doubt = Doubt.from_record(verdict.get("detail"))  # the gaps it was judged with, and where they lay
            now = evaluate(claim, KubeVersion.parse(version), verdict["observed"], doubt).to_json()
            judged = Seen(verdict["observed"], now["status"], where) if kind == "live" else None
        verdicts.append((claim, _Seen(kind, now, verdict["status"], probe, where), judged))
    return _Read(kind, record_provenance(record), release, tuple(verdicts))


def _cell(observations: list[_Seen]) -> Cell:
    """The observation a cell shows: live before derived, then the worst verdict; the others listed with it."""
    if len(observations) == 1:  # most cells: one probe's one record
        shown, others = observations[0], []
    else:
        best = min(ORIGIN_RANK[o.origin] for o in observations)
        candidates = [o for o in observations if ORIGIN_RANK[o.origin] == best]
        shown = max(candidates, key=lambda o: SEVERITY.get(o.now["status"], SEVERITY[FAIL]))
        others = [
            {"origin": o.origin, "observed": o.now["observed"], "status": o.now["status"], "where": o.where}
            for o in observations
            if o is not shown
        ]
    return Cell(
        shown.now["observed"],
        shown.now["status"],
        shown.recorded,
        shown.now["expected"],
        shown.now["message"],
        sorted({o.probe for o in observations}),
        shown.origin,
        others,
    )
