"""The behaviour matrix's model: claims × versions read from run records, every verdict re-evaluated against the
current expectations from the recorded observation, so a corrected expectation can be tried on old recordings
without a cluster (the matrix says which verdicts changed). Rows are grouped document → probe (its scenario) →
claim; a version nobody recorded a claim on shows the expected value, so the table is the whole behaviour matrix.
Every recording the suite replays is live; older run records may still name a recording derived from the documents
(written from them and the Kubernetes sources, not recorded): such values are kept apart (a live one is shown
first; "derived" is never called observed). What changed between consecutive versions comes with the PRs the
expectations cite. The page's words are report_words.py, its rendering report.py.
Over 500 lines: the matrix, its evaluation and its changes are one reading of the records.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

from packaging.version import Version

from harness.base import families
from harness.base.versions import KubeVersion
from harness.core.basis import Doubt
from harness.core.expectations import (
    FAIL,
    NOT_OBSERVABLE,
    PASS,
    UNDECIDED,
    Claim,
    Expectation,
    evaluate,
    load_claims,
    pull_requests,
)
from harness.core.records import origin_kind, origin_of
from harness.reports import coverage
from harness.reports.upgrade_model import Observations, Upgrade, UpgradeEnd, compare
from harness.reports.wording import expected_text, short

JsonDict = dict[str, Any]
ClaimsLoader = Callable[[str], dict[str, Claim]]
SEVERITY = {PASS: 0, NOT_OBSERVABLE: 1, UNDECIDED: 2, FAIL: 3}  # several observations in one cell: the worst shows
ORIGIN_RANK = {"live": 0, "derived": 1, "unknown": 2}  # a live observation is shown before a derived one
# How Kubernetes spells the words a probe's name writes in lower case.
WORDS = {
    "daemonset": "DaemonSet",
    "statefulset": "StatefulSet",
    "replicaset": "ReplicaSet",
    "sigterm": "SIGTERM",
    "sigkill": "SIGKILL",
    "prestop": "preStop",
    "onfailure": "OnFailure",
}
RELEASE_NOTES = re.compile(r"CHANGELOG-\d+\.\d+(?: v\d+\.\d+\.\d+(?:-[a-z]+\.\d+)?)?")


@dataclass
class Cell:
    """What a claim's observations on one version say: the one shown (live before derived, then the worst)."""

    observed: Any
    status: str
    recorded_status: str
    expected: JsonDict | None
    message: str
    probes: list[str] = field(default_factory=list)
    origin: str = "derived"  # of the observation shown: "live", "derived" (from documents) or "unknown"
    others: list[JsonDict] = field(default_factory=list)  # the observations behind the cell that are not shown

    @property
    def changed(self) -> bool:
        return self.status != self.recorded_status


@dataclass(frozen=True)
class Row:
    """One line of the matrix: a claim as one probe checks it."""

    document: str
    probe: str
    claim: str


@dataclass(frozen=True)
class Scenario:
    """A probe as a reader knows it: a title from its name and the scenario from its docstring."""

    probe: str
    family: str
    title: str
    text: str
    order: tuple[int, str, int]


@dataclass(frozen=True)
class Side:
    """One end of a change: the value shown for a claim on a version, and what it rests on."""

    version: str
    value: Any
    basis: str  # "live" or "derived" (an observation), or "expected" (nothing recorded there)
    status: str | None  # the observation's verdict
    expectation: Expectation | None


@dataclass(frozen=True)
class Change:
    """A claim whose value differs between two consecutive versions, and the PRs its expectations cite.

    `rows`: the probes (scenarios) in which it changes that way; `was` / `now` are shown for the first, with
    the strongest basis any of them has (a live observation, then a derived one, then the expectation).
    """

    rows: tuple[Row, ...]
    was: Side
    now: Side
    expected_changed: bool
    prs: tuple[str, ...]
    release_notes: tuple[str, ...]
    why: str  # the first source of the new expectation, for a change whose sources cite no PR

    @property
    def claim(self) -> str:
        return self.rows[0].claim

    @property
    def basis(self) -> str:
        """What the change rests on: "live" or "derived" if either end was recorded so, else "expected"."""
        return min(self.was, self.now, key=_basis_rank).basis

    @property
    def agrees(self) -> bool:
        """Every recorded end of the change agrees with its expectation (none failed, none undecided)."""
        return all(side.status in (None, PASS) for side in (self.was, self.now))

    @property
    def disagrees(self) -> bool:
        """A recorded end of the change differs from its expectation."""
        return any(side.status == FAIL for side in (self.was, self.now))

    @property
    def undecided(self) -> bool:
        """A recorded end of the change is undecided (a watch gap), and neither differs: kept apart from failed."""
        return not self.disagrees and any(side.status == UNDECIDED for side in (self.was, self.now))

    @property
    def race_flip(self) -> bool:
        """Both ends are expected to be one of the same outcomes (a race of the release decides which): the values
        differ, the behaviour does not."""
        old, new = self.was.expectation, self.now.expectation
        return bool(old is not None and new is not None and old.one_of and not self.expected_changed)

    @property
    def bases(self) -> str:
        """What each end rests on: 'live → live', 'live → expected', ..."""
        return f"{self.was.basis} → {self.now.basis}"


@dataclass(frozen=True)
class RowCell:
    """A matrix cell as the page draws it: which behaviour of its row it shows (the colour), whether a run of equal
    cells starts there (where the value is written, spanning `run` columns), and what it rests on."""

    version: str
    behaviour: int  # index into its row's behaviours, in order of first appearance
    kind: str  # "o" observed, "e" expected (nothing recorded), "n" no expectation
    status: str | None  # the observation's verdict
    origin: str | None
    changed: bool  # the verdict differs from the recorded one
    race: bool  # a race of the release decides (a one_of expectation)
    run: int  # columns of the run starting here, 0 inside a run
    moved: bool  # a run that starts here after another: the behaviour changed from the version before


@dataclass
class Matrix:
    versions: list[str]  # the columns, oldest first: server versions ('v1.27.16'), or with a matrix entry's runtime
    claims: dict[str, JsonDict]  # claim id -> statement, observable, document
    cells: dict[tuple[str, str], Cell]  # (claim id, version) -> cell, over every probe checking the claim
    provenance: dict[str, JsonDict]  # version -> provenance of the run(s) behind that column
    timelines: dict[str, dict[str, list[JsonDict]]] = field(default_factory=dict)  # probe -> row label -> entries
    rows: list[Row] = field(default_factory=list)  # in reading order: document, scenario, the probe's checks
    row_cells: dict[tuple[str, str, str], Cell] = field(default_factory=dict)  # (probe, claim id, version)
    claim_objects: dict[str, Claim] = field(default_factory=dict)
    scenarios: dict[str, Scenario] = field(default_factory=dict)
    timeline_tags: dict[str, dict[str, str]] = field(default_factory=dict)  # probe -> row label -> live/derived
    anchors: dict[str, str] = field(default_factory=dict)  # probe -> the action its timeline counts from
    live_coverage: JsonDict = field(default_factory=dict)  # the claim ranges the records' live runs are in
    # a column that is a make matrix entry on a runtime of its own ('v1.27.16:debian') -> its server version
    column_versions: dict[str, str] = field(default_factory=dict)
    observations: Observations | None = None  # what live records saw, for what changes between two versions
    claims_loader: ClaimsLoader = load_claims
    _pairs: dict[tuple[str, str], Upgrade] = field(default_factory=dict, init=False, repr=False, compare=False)
    # (claim id, version) -> its expectation, looked up once: the page asks for each many times
    _expectations: dict[tuple[str, str], Expectation | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def version_of(self, column: str) -> str:
        """The server version of a column: itself, or the release a matrix entry on its own runtime ran."""
        return self.column_versions.get(column, column)

    def counts(self) -> dict[str, int]:
        """How many claim × version cells have each status; failed and undecided are counted apart.

        Where several probes check one claim on one version, the cell counts once, with the verdict it shows
        (a live observation before a derived one, then the worst: fail, undecided, not observable, pass).
        """
        counts = dict.fromkeys(SEVERITY, 0)
        for cell in self.cells.values():
            counts[cell.status] = counts.get(cell.status, 0) + 1
        return counts

    def summary(self) -> str:
        """'12 claims × 3 versions: 30 pass, 2 fail, 1 undecided, 3 not observable'."""
        counts = ", ".join(f"{n} {status}" for status, n in self.counts().items())
        return f"{len(self.claims)} claims × {len(self.versions)} versions: {counts}"

    def changed(self) -> list[tuple[str, str, Cell]]:
        """Cells whose verdict under the current expectations differs from the recorded one."""
        ordered = sorted(self.cells.items(), key=lambda item: (item[0][0], self._column_key(item[0][1])))
        return [(claim, version, cell) for (claim, version), cell in ordered if cell.changed]

    def differences(self, a: str, b: str) -> list[tuple[str, Cell, Cell]]:
        """Claims observed on both versions whose observed value differs between them."""
        rows = []
        for claim in self.claims:
            left, right = self.cells.get((claim, a)), self.cells.get((claim, b))
            if left is not None and right is not None and left.observed != right.observed:
                rows.append((claim, left, right))
        return rows

    def _column_key(self, column: str) -> tuple[Version, str]:
        """Columns in order: by version, a release's own column before those of its runtimes."""
        return KubeVersion.parse(self.version_of(column)).version, column

    def expectation(self, claim: str, version: str) -> Expectation | None:
        """The expectation for the claim on that version (a column), or None where no range covers it."""
        key = (claim, version)
        if key not in self._expectations:
            self._expectations[key] = (
                _expectation(self.claim_objects[claim], self.version_of(version))
                if claim in self.claim_objects
                else None
            )
        return self._expectations[key]

    def cell(self, row: Row, version: str) -> Cell | None:
        """What was recorded for the row on that version, if anything."""
        return self.row_cells.get((row.probe, row.claim, version))

    def groups(self) -> list[tuple[str, list[tuple[Scenario, list[Row]]]]]:
        """The rows as document -> scenarios -> rows, in reading order."""
        out: list[tuple[str, list[tuple[Scenario, list[Row]]]]] = []
        for row in self.rows:
            if not out or out[-1][0] != row.document:
                out.append((row.document, []))
            scenarios = out[-1][1]
            if not scenarios or scenarios[-1][0].probe != row.probe:
                scenarios.append((self.scenarios[row.probe], []))
            scenarios[-1][1].append(row)
        return out

    def side(self, row: Row, version: str) -> Side | None:
        """What the matrix shows for a row on a version: the observation, else the expectation, else nothing."""
        cell, expectation = self.cell(row, version), self.expectation(row.claim, version)
        if cell is not None and cell.status != NOT_OBSERVABLE:
            return Side(version, cell.observed, cell.origin, cell.status, expectation)
        if expectation is None:
            return None
        return Side(version, expected_value(expectation), "expected", None, expectation)

    def changes(self) -> list[tuple[str, str, list[Change]]]:
        """For each pair of consecutive versions, the claims whose value (observed or expected) differs.

        A claim several probes check that changes the same way in each is one change, naming every probe.
        """
        out = []
        for a, b in pairwise(self.versions):
            found: dict[tuple[str, str, str], Change] = {}
            for row in self.rows:
                was, now = self.side(row, a), self.side(row, b)
                if was is None or now is None or _behaviour(was) == _behaviour(now):
                    continue
                key = (row.claim, _behaviour(was), _behaviour(now))
                if key in found:
                    known = found[key]
                    found[key] = replace(
                        known,
                        rows=(*known.rows, row),
                        was=min(known.was, was, key=_basis_rank),
                        now=min(known.now, now, key=_basis_rank),
                    )
                    continue
                old, new = was.expectation, now.expectation
                expected_changed = (
                    old is not None
                    and new is not None
                    and (old.value, old.between, old.one_of) != (new.value, new.between, new.one_of)
                )
                cited = new.sources if expected_changed and new else ()
                prs = pull_requests(cited) or (pull_requests(old.sources) if expected_changed and old else [])
                notes = sorted({m.group(0) for s in cited for m in RELEASE_NOTES.finditer(s)})
                why = cited[0] if cited else ""
                found[key] = Change((row,), was, now, expected_changed, tuple(prs[:4]), tuple(notes), why)
            out.append((a, b, list(found.values())))
        return out

    def pair(self, a: str, b: str) -> Upgrade:
        """What changes between two versions of the matrix, read as make upgrade reads it
        (harness/reports/upgrade_model.py): the one reading both pages and the terminal give, counted alike."""
        if (a, b) not in self._pairs:
            observed = self.observations or Observations({}, {})
            before, after = (
                UpgradeEnd(v, KubeVersion.parse(self.version_of(v)), "a column of the matrix") for v in (a, b)
            )
            self._pairs[(a, b)] = compare(before, after, observed, claims_loader=self.claims_loader, only=self.claims)
        return self._pairs[(a, b)]

    def pair_changes(self, a: str, b: str, found: list[Change]) -> tuple[list[Change], list[Change]]:
        """A pair's changes as the page lists them: those of behaviour (what make upgrade counts as a change, a race
        on one side, or a recorded value otherwise than expected or undecided), and race flips (a race decides both
        alike)."""
        upgrade = self.pair(a, b)
        behaviour = {c.claim.id for c in [*upgrade.changed, *upgrade.raced, *upgrade.disagreeing]}
        flips = {c.claim.id for c in upgrade.same_race} - behaviour
        doubtful = {c.claim for c in found if c.disagrees or c.undecided}  # a recorded end not as expected
        shown = behaviour | doubtful
        return [c for c in found if c.claim in shown], [c for c in found if c.claim in flips - shown]

    def row_view(self, row: Row) -> tuple[list[RowCell], list[str]]:
        """A row as the page draws it: its cells, and the text of each behaviour it shows (by index)."""
        keys: list[str] = []
        texts: list[str] = []
        cells: list[RowCell] = []
        for version in self.versions:
            cell, side = self.cell(row, version), self.side(row, version)
            expectation = side.expectation if side is not None else None
            race = bool(expectation is not None and expectation.one_of)
            if cell is not None and cell.status == NOT_OBSERVABLE:
                key, text = "not observable", "–"
            elif side is None:
                key, text = "none", "no expectation"
            elif side.status in (FAIL, UNDECIDED):
                key, text = json.dumps([side.status, side.value], sort_keys=True), short(side.value)
            elif race and expectation is not None:
                key, text = (
                    json.dumps(["race", expected_value(expectation)], sort_keys=True),
                    "race: " + expected_text(expectation),
                )
            else:
                key = _behaviour(side)
                text = (
                    expected_text(expectation)
                    if "between" in key[:12] or side.basis == "expected"
                    else short(side.value)
                )
            if key not in keys:
                keys.append(key)
                texts.append(text)
            kind = "o" if cell is not None else "e" if side is not None else "n"
            cells.append(
                RowCell(
                    version,
                    keys.index(key),
                    kind,
                    cell.status if cell else None,
                    cell.origin if cell else None,
                    bool(cell and cell.changed),
                    race,
                    0,
                    False,
                )
            )
        out: list[RowCell] = []
        unseen = keys.index("not observable") if "not observable" in keys else -1
        last = None  # the behaviour before, passing over cells where it was not observable
        for i, c in enumerate(cells):
            moved = last is not None and c.behaviour not in (last, unseen)
            last = last if c.behaviour == unseen else c.behaviour
            if i and cells[i - 1].behaviour == c.behaviour:
                out.append(c)
                continue
            run = next((j for j in range(i + 1, len(cells)) if cells[j].behaviour != c.behaviour), len(cells)) - i
            out.append(replace(c, run=run, moved=moved))
        return out, texts

    def disagreements(self) -> list[tuple[Row, str, Cell]]:
        """Rows whose observation on a version does not agree with its expectation (failed or undecided)."""
        return [
            (row, version, cell)
            for row in self.rows
            for version in self.versions
            if (cell := self.cell(row, version)) is not None and cell.status in (FAIL, UNDECIDED)
        ]

    def overview(self) -> JsonDict:
        """Counts for the page's first lines; `failed` and `undecided` count the matrix's rows' recorded values."""
        columns = [self.provenance[v]["kind"] for v in self.versions]
        return {
            "claims": len(self.claims),
            "scenarios": len({row.probe for row in self.rows}),
            "documents": len({row.document for row in self.rows}),
            "versions": len(self.versions),
            "live_columns": sum("live" in kind for kind in columns),
            "live_versions": [v for v, kind in zip(self.versions, columns, strict=True) if "live" in kind],
            "derived_columns": sum(kind == "derived" for kind in columns),
            "any_derived": any("derived" in kind for kind in columns),  # only in old run records
            "cells": len(self.rows) * len(self.versions),
            "recorded": sum(1 for row in self.rows for v in self.versions if self.cell(row, v) is not None),
            "live_cells": sum(c.origin == "live" for c in self.row_cells.values()),
            "failed": sum(c.status == FAIL for c in self.row_cells.values()),
            "undecided": sum(c.status == UNDECIDED for c in self.row_cells.values()),
            "verdicts_changed": len(self.changed()),
        }


@dataclass
class _Seen:
    origin: str
    now: JsonDict
    recorded: str
    probe: str
    where: str


def _expectation(claim: Claim, version: str) -> Expectation | None:
    matching = [e for e in claim.expectations if KubeVersion.parse(version).satisfies(e.versions)]
    return matching[0] if len(matching) == 1 else None


def _basis_rank(side: Side) -> int:
    """Live first, then derived, then an expectation."""
    return ORIGIN_RANK.get(side.basis, len(ORIGIN_RANK))


def expected_value(expectation: Expectation) -> Any:
    """What an expectation says, as a value: the bounds of a range; each outcome of a one_of."""
    if expectation.one_of:
        return {"one of": [expected_value(alternative) for alternative in expectation.one_of]}
    return list(expectation.between) if expectation.between is not None else expectation.value


def _behaviour(side: Side) -> str:
    """What a side says about behaviour: a measured value inside its expected range counts as that range (the
    outcome of a one_of it matches counts as that outcome)."""
    e = side.expectation
    if e is not None and e.one_of and side.basis != "expected":
        e = next((outcome for outcome in e.one_of if outcome.matches(side.value)), None)
    if e is not None and e.between is not None and (side.basis == "expected" or e.matches(side.value)):
        return json.dumps(["between", list(e.between)])
    return json.dumps(["value", side.value], sort_keys=True)


@cache
def _probe_functions(path: Path) -> dict[str, tuple[int, str]]:
    """A probe module's functions: name -> (line, docstring), read without importing it."""
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, ValueError):
        return {}
    return {
        node.name: (node.lineno, ast.get_docstring(node) or "")
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
    }


def scenario(probe: str, family: str) -> Scenario:
    """The probe's title (its name) and scenario (its docstring's first paragraph)."""
    module, _, function = probe.partition("::")
    function = function.split("[", 1)[0]
    try:  # the family's folder says where the family comes in the report, and holds the module
        folder = families.family(family)
        rank, line, doc = folder.order, *_probe_functions(folder.directory / module).get(function, (10**6, ""))
    except families.FamilyError:  # a record of a family this checkout does not have: last
        rank, line, doc = 10**6, 10**6, ""
    title = " ".join(WORDS.get(word, word) for word in function.removeprefix("test_").split("_"))
    text = " ".join(doc.split("\n\n", 1)[0].split())
    return Scenario(probe, family, title[:1].upper() + title[1:], text, (rank, family, line))


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


def _record_provenance(record: JsonDict) -> JsonDict:
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
        return {
            "kind": kind,
            "when": when,
            "on_what": origin_of(record).on_what(),
            "runtime": origin_of(record).runtime_words(),
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


def _column_provenance(entries: list[JsonDict]) -> JsonDict:
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
    record_provenance: dict[str, list[JsonDict]] = {}
    probe_claims: dict[str, list[str]] = {}
    family_of_probe: dict[str, str] = {}
    timelines: dict[str, dict[tuple[str, str], list[JsonDict]]] = {}
    anchors: dict[str, str] = {}
    for record in records:
        version = record.get("server_version")
        if not version:
            continue
        column = version
        if runtime := (runtimes or {}).get(str((record.get("provenance") or {}).get("run_id"))):
            column = f"{version}:{runtime}"
            column_versions[column] = version
        probe, kind = record["probe"], origin_kind(record)
        family_of_probe.setdefault(probe, record["family"])
        record_provenance.setdefault(column, []).append(_record_provenance(record))
        timeline = record.get("timeline") or {}
        timelines.setdefault(probe, {}).setdefault((column, kind), timeline.get("entries", []))
        anchors.setdefault(probe, timeline.get("anchor") or "anchor action")
        where = str(
            (record.get("recording_origin") or {}).get("file") or (record.get("provenance") or {}).get("run_id")
        )
        current = claims_loader(record["family"])
        for verdict in record.get("verdicts", []):
            claim = current.get(verdict["claim"])
            if claim is None:
                continue
            claim_objects[claim.id] = claim
            claims.setdefault(
                claim.id, {"statement": claim.claim, "observable": claim.observable, "document": claim.document}
            )
            if claim.id not in probe_claims.setdefault(probe, []):
                probe_claims[probe].append(claim.id)
            if verdict["status"] == NOT_OBSERVABLE:
                now = verdict
            else:
                doubt = Doubt.from_record(verdict.get("detail"))  # the gaps it was judged with, and where they lay
                now = evaluate(claim, KubeVersion.parse(version), verdict["observed"], doubt).to_json()
            seen.setdefault((probe, claim.id, column), []).append(_Seen(kind, now, verdict["status"], probe, where))
    by_claim: dict[tuple[str, str], list[_Seen]] = {}
    for (_, claim_id, version), observations in seen.items():
        by_claim.setdefault((claim_id, version), []).extend(observations)
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

    ordered = sorted(record_provenance, key=in_order)
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
        cells={key: _cell(observations) for key, observations in sorted(by_claim.items())},
        provenance={v: _column_provenance(record_provenance[v]) for v in ordered},
        timelines=series,
        rows=rows,
        row_cells={key: _cell(observations) for key, observations in seen.items()},
        claim_objects=claim_objects,
        scenarios=scenarios,
        timeline_tags=tags,
        anchors=anchors,
        live_coverage=coverage.section_for_records(records, claims_loader),
        observations=Observations.of(records, claims_loader),
        claims_loader=claims_loader,
        column_versions=column_versions,
    )


def _cell(observations: list[_Seen]) -> Cell:
    """The observation a cell shows: live before derived, then the worst verdict; the others listed with it."""
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


def document_label(document: str) -> str:
    """A document's public title for its id in probes/documents.yaml; anything else (an id this checkout does
    not know, what an old record names) as it is."""
    known = families.documents().get(document)
    return known.title if known else document
