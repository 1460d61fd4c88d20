"""The behaviour matrix's model: claims × versions, each cell what a claim's observations on a version say. Rows are
grouped document → probe (its scenario, report_scenarios.py) → claim; a version nobody recorded a claim on shows the
expected value, so the table is the whole behaviour matrix. Every recording the suite replays is live; older run
records may still name a recording derived from the documents (written from them and the Kubernetes sources, not
recorded): such values are kept apart (a live one is shown first; "derived" is never called observed). What changed
between consecutive versions comes with the PRs the expectations cite. The matrix is read from run records by
report_reading.py; the page's words are report_words.py, its rendering report.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import pairwise
from typing import Any

from packaging.version import Version

from harness.base.versions import KubeVersion
from harness.core.expectations import (
    FAIL,
    NOT_OBSERVABLE,
    PASS,
    UNDECIDED,
    Claim,
    Expectation,
    load_claims,
    pull_requests,
)
from harness.reports.report_provenance import ORIGIN_RANK
from harness.reports.report_scenarios import Scenario
from harness.reports.upgrade_compare import Observations, compare
from harness.reports.upgrade_model import Upgrade, UpgradeEnd, worked_out_once
from harness.reports.wording import expected_text, short

JsonDict = dict[str, Any]
ClaimsLoader = Callable[[str], dict[str, Claim]]
SEVERITY = {PASS: 0, NOT_OBSERVABLE: 1, UNDECIDED: 2, FAIL: 3}  # several observations in one cell: the worst shows
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
    # (row, version) -> what the matrix shows there and the behaviour it says, worked out once: the changes between
    # columns and each row's cells on both pages read every one of them
    _said: dict[tuple[Row, str], tuple[Side, str] | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    # the changes between consecutive columns, found once: report.md and report.html both list them
    _changes: tuple[tuple[str, str, tuple[Change, ...]], ...] | None = field(
        default=None, init=False, repr=False, compare=False
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
        changed = [item for item in self.cells.items() if item[1].changed]  # the few, then sorted: not every cell
        ordered = sorted(changed, key=lambda item: (item[0][0], self._column_key(item[0][1])))
        return [(claim, version, cell) for (claim, version), cell in ordered]

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
                self.claim_objects[claim].expectation_or_none(KubeVersion.parse(self.version_of(version)))
                if claim in self.claim_objects
                else None
            )
        return self._expectations[key]

    def cell(self, row: Row, version: str) -> Cell | None:
        """What was recorded for the row on that version, if anything."""
        return self.row_cells.get((row.probe, row.claim, version))

    def row_line(self, row: Row) -> list[tuple[Cell | None, Expectation | None]]:
        """A row as report.md writes it, column by column: what was recorded there, else the expectation (one call
        a row from the template, where a call is Jinja's context.call, not two a cell)."""
        return [
            (cell, None)
            if (cell := self.cell(row, version)) is not None
            else (None, self.expectation(row.claim, version))
            for version in self.versions
        ]

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
        return Side(version, _expected(expectation)[0], "expected", None, expectation)

    def said(self, row: Row, version: str) -> tuple[Side, str] | None:
        """What the matrix shows for a row on a version (side) with the behaviour it says (_behaviour), or None."""
        key = (row, version)
        if key not in self._said:
            side = self.side(row, version)
            shown = side.expectation if side is not None and side.basis == "expected" else None  # most: known once
            self._said[key] = None if side is None else (side, _expected(shown)[1] if shown else _behaviour(side))
        return self._said[key]

    def changes(self) -> list[tuple[str, str, list[Change]]]:
        """For each pair of consecutive versions, the claims whose value (observed or expected) differs.

        A claim several probes check that changes the same way in each is one change, naming every probe.
        """
        if self._changes is None:
            self._changes = tuple((a, b, tuple(found)) for a, b, found in self._find_changes())
        return [(a, b, list(found)) for a, b, found in self._changes]

    def _find_changes(self) -> list[tuple[str, str, list[Change]]]:
        out = []
        for a, b in pairwise(self.versions):
            found: dict[tuple[str, str, str], Change] = {}
            for row in self.rows:
                before, after = self.said(row, a), self.said(row, b)
                if before is None or after is None or before[1] == after[1]:
                    continue
                (was, was_said), (now, now_said) = before, after
                key = (row.claim, was_said, now_said)
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
        behaviours: dict[str, int] = {}  # each behaviour's key -> its index, in order of first appearance
        texts: list[str] = []
        drawn: list[tuple[str, int, str, Cell | None, bool]] = []  # version, behaviour, kind, cell, race
        for version in self.versions:
            cell, said = self.cell(row, version), self.said(row, version)
            side, behaviour = said if said is not None else (None, "")
            expectation = side.expectation if side is not None else None
            race = bool(expectation is not None and expectation.one_of)
            text: Callable[[], str]  # the behaviour's text, worked out at its first cell only
            if cell is not None and cell.status == NOT_OBSERVABLE:
                key, text = "not observable", lambda: "–"
            elif side is None:
                key, text = "none", lambda: "no expectation"
            elif side.status in (FAIL, UNDECIDED):
                key, text = _SORTED_JSON([side.status, side.value]), partial(short, side.value)
            elif race and expectation is not None:
                key = _SORTED_JSON(["race", expected_value(expectation)])
                text = partial(_race_text, expectation)
            else:
                key = behaviour
                text = (
                    partial(expected_text, expectation)
                    if "between" in key[:12] or side.basis == "expected"
                    else partial(short, side.value)
                )
            if key not in behaviours:
                behaviours[key] = len(texts)
                texts.append(text())
            kind = "o" if cell is not None else "e" if side is not None else "n"
            drawn.append((version, behaviours[key], kind, cell, race))
        out: list[RowCell] = []
        unseen = behaviours.get("not observable", -1)
        last = None  # the behaviour before, passing over cells where it was not observable
        for i, (version, shown, kind, cell, race) in enumerate(drawn):
            moved = last is not None and shown not in (last, unseen)
            last = last if shown == unseen else shown
            starts = not i or drawn[i - 1][1] != shown
            run = next((j for j in range(i + 1, len(drawn)) if drawn[j][1] != shown), len(drawn)) - i if starts else 0
            status, origin, changed = (cell.status, cell.origin, cell.changed) if cell else (None, None, False)
            out.append(RowCell(version, shown, kind, status, origin, changed, race, run, moved and starts))
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


def _basis_rank(side: Side) -> int:
    """Live first, then derived, then an expectation."""
    return ORIGIN_RANK.get(side.basis, len(ORIGIN_RANK))


def expected_value(expectation: Expectation) -> Any:
    """What an expectation says, as a value: the bounds of a range; each outcome of a one_of."""
    if expectation.one_of:
        return {"one of": [expected_value(alternative) for alternative in expectation.one_of]}
    return list(expectation.between) if expectation.between is not None else expectation.value


def _expected(expectation: Expectation) -> tuple[Any, str]:
    """An expectation's value (expected_value) and the behaviour a side showing it says, worked out once an expectation
    (kept in it, upgrade_model.worked_out_once): each matrix asks it of every column the expectation covers."""
    return worked_out_once(
        expectation,
        "_matrix_expected",
        lambda: ((value := expected_value(expectation)), _behaviour(Side("", value, "expected", None, expectation))),
    )


def _race_text(expectation: Expectation) -> str:
    """A race's cell: 'race: ' and its outcomes."""
    return "race: " + expected_text(expectation)


_SORTED_JSON = json.JSONEncoder(sort_keys=True).encode  # json.dumps(value, sort_keys=True), its encoder made once


def _behaviour(side: Side) -> str:
    """What a side says about behaviour: a measured value inside its expected range counts as that range (the
    outcome of a one_of it matches counts as that outcome)."""
    e = side.expectation
    if e is not None and e.one_of and side.basis != "expected":
        e = next((outcome for outcome in e.one_of if outcome.matches(side.value)), None)
    if e is not None and e.between is not None and (side.basis == "expected" or e.matches(side.value)):
        return json.dumps(["between", list(e.between)])
    return _SORTED_JSON(["value", side.value])
