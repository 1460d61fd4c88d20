"""`make report`: the behaviour matrix (report_model.py, read by report_reading.py) of run records, as Markdown and one
HTML file; the headline is what changed between consecutive versions, with the PRs the expectations cite. Templates
are Jinja2 (harness/reports/templates/), their words report_words.py; timelines are drawn by timeline_svg.py.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import pickle
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup, escape

from harness.base import families
from harness.base.run import safe_name
from harness.core.expectations import FAIL, NOT_OBSERVABLE, PASS, UNDECIDED, Expectation, load_claims, outcome_json
from harness.core.records import load_records
from harness.reports import findings, timeline_svg
from harness.reports.report_model import ClaimsLoader, JsonDict, Matrix, RowCell
from harness.reports.report_provenance import document_label
from harness.reports.report_reading import build_matrix
from harness.reports.report_words import PR_URL, breakable, pr_links, side_text, side_words
from harness.reports.upgrade_model import Upgrade
from harness.reports.wording import expected_text, expected_words, short, show, words

if TYPE_CHECKING:  # Jinja2 is imported when a page is rendered: make report refuses bad input without it
    from jinja2 import BytecodeCache, Environment


# The HTML matrix's claim column, and the least and most width of a version column. The version columns share
# what the window leaves (the page's script sizes them); a value is written once where its run of equal cells
# starts and spans the run, so a column needs no room for a word: 41 versions fit a 1600 px window. Narrower, the
# table is wider than the window and the page scrolls sideways under the sticky claim column.
# The matrix's columns: the claim column, and the least and most width of a version column. At the least, 56
# versions fit a 1,400 px window: a version's name is written upright, a value too wide for its run too.
COLUMN_PX: dict[str, Any] = {"claim": 200, "version": (17, 120)}
PALETTE = 6  # behaviours told apart by colour along a row (templates: .b0 ... .b5), the first one of a row first
_STATUS_CLASS = {FAIL: " fail", UNDECIDED: " undecided", NOT_OBSERVABLE: " nobs"}


def cell_classes(cell: RowCell) -> str:
    """A matrix cell's classes on the page ('o b1 race moved'): what it rests on, its behaviour's colour, a race, a
    verdict other than pass, derived, a changed verdict, a change of behaviour. Worked out here, one call a cell: the
    template's tests were a dozen attribute lookups a cell, some 9,000 cells a page."""
    return "".join(
        (
            f"{cell.kind} b{cell.behaviour % PALETTE}",
            " race" if cell.race else "",
            _STATUS_CLASS.get(cell.status or "", ""),
            " derived" if cell.origin and cell.origin != "live" else "",
            " changed" if cell.changed else "",
            " moved" if cell.moved else "",
        )
    )


@lru_cache(maxsize=512)
def packed(text: str) -> str:
    """`text` as the page carries what it unpacks in the browser (DecompressionStream): gzip, then base64. The
    same text gives the same bytes (no time in the gzip header). The timelines are 2.5 MB as SVG, 0.4 MB so.
    Packed once a process: pages of the same records (the report tests render several) carry the same timelines,
    and gzip at its best compression is a quarter of a page's CPU."""
    return base64.b64encode(gzip.compress(text.encode(), compresslevel=9, mtime=0)).decode("ascii")


def unpacked(text: str) -> str:
    """What `packed` packed."""
    return gzip.decompress(base64.b64decode(text)).decode()


def drawing_size(svg: str) -> tuple[float, float]:
    """A drawing's width and height (its viewBox), which the page keeps free until it unpacks the drawing."""
    found = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg)
    return (float(found.group(1)), float(found.group(2))) if found else (float(timeline_svg.WIDTH), 200.0)


def _expectation_index(expectations: Sequence[Expectation], found: Expectation | None) -> int:
    """Which of a claim's expectations `found` is (-1: none), the one for a column looked up once, not once an
    expectation compared."""
    return next((i for i, e in enumerate(expectations) if e == found), -1)


def _page_data(matrix: Matrix) -> JsonDict:
    """What the page's script needs to open a cell: rows, claims with every range and source, cells, columns."""
    claims = {
        claim.id: {
            "statement": claim.claim,
            "observable": claim.observable,
            "document": document_label(claim.document),
            "expectations": [
                {
                    "versions": e.versions,
                    "value": e.value,
                    "between": e.between,
                    "sources": e.sources,
                    "note": e.note,
                    **({"one_of": [outcome_json(a) for a in e.one_of]} if e.one_of else {}),
                }
                for e in claim.expectations
            ],
        }
        for claim in matrix.claim_objects.values()
    }
    expect = {
        claim.id: {v: _expectation_index(claim.expectations, matrix.expectation(claim.id, v)) for v in matrix.versions}
        for claim in matrix.claim_objects.values()
    }
    cells = {  # what the panel says: the message only where the verdict is not a pass, the recorded verdict where it
        # differs, the other observations only where there are some
        f"{i}|{version}": {
            "observed": cell.observed,
            "status": cell.status,
            "origin": cell.origin,
            **({"recorded_status": cell.recorded_status} if cell.changed else {}),
            **({"message": cell.message} if cell.status != PASS else {}),
            **({"others": cell.others} if cell.others else {}),
        }
        for i, row in enumerate(matrix.rows)
        for version in matrix.versions
        if (cell := matrix.cell(row, version)) is not None
    }
    rows = [
        {"probe": row.probe, "claim": row.claim, "scenario": matrix.scenarios[row.probe].title} for row in matrix.rows
    ]
    return {"rows": rows, "claims": claims, "expect": expect, "cells": cells, "provenance": matrix.provenance}


@dataclass(frozen=True)
class Section:
    """One part of report.html: its anchor, its name in the page's links, its template (templates/sections/)."""

    id: str
    title: str
    template: str


# The page's parts in order; a new part is a template under templates/sections/ and a line here.
SECTIONS = (
    Section("findings", "What the suite found", "sections/findings.html.j2"),
    Section("changes", "What changed", "sections/changes.html.j2"),
    Section("matrix-section", "Behaviour matrix", "sections/matrix.html.j2"),
    Section("timelines", "Timelines", "sections/timelines.html.j2"),
    Section("provenance", "Provenance", "sections/provenance.html.j2"),
    Section("live-coverage", "Ranges seen live", "sections/coverage.html.j2"),
    Section("claims", "Claims and sources", "sections/claims.html.j2"),
)


def page_sections(upgrade: Upgrade | None = None) -> list[Section]:
    """The page's parts: with two releases chosen, what changes between them comes first."""
    if upgrade is None:
        return list(SECTIONS)
    title = f"{upgrade.before.asked} → {upgrade.after.asked}"
    return [Section("upgrade", title, "sections/upgrade.html.j2"), *SECTIONS]


def timeline_file(probe: str) -> str:
    """Where a probe's drawing is written next to the report."""
    return f"timelines/{safe_name(probe, 100)}.svg"


_ESCAPED = ("html", "html.j2")  # the templates whose values are escaped for HTML


def _compiled_templates() -> BytecodeCache | None:
    """Where compiled templates are kept between processes, as Python keeps compiled modules: in __pycache__ beside
    them, or under PYTHONPYCACHEPREFIX (make test's); nowhere where Python writes no bytecode. Compiling the ten
    templates took 190 ms of CPU in every process that renders a page (the offline tests' workers, make report's
    and atlas's children), loading them 10 ms. A template is compiled again when its source changes (Jinja keeps
    its checksum), and the file names hold the Jinja release and the options that shape the compiled code."""
    import jinja2

    if sys.dont_write_bytecode:
        return None
    folder = Path(sys.pycache_prefix, "plp-templates") if sys.pycache_prefix else Path(__file__).parent / "__pycache__"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    shaped_by = hashlib.sha1(repr((jinja2.__version__, _ESCAPED, "trim_blocks", "lstrip_blocks")).encode()).hexdigest()
    return jinja2.FileSystemBytecodeCache(str(folder), f"templates-{shaped_by[:12]}-%s.cache")


@cache
def _environment() -> Environment:
    """The templates' environment, made once a process: each template is compiled the first time it is used (or
    read compiled, _compiled_templates)."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(
        loader=PackageLoader("harness.reports", "templates"),
        autoescape=select_autoescape(list(_ESCAPED)),
        trim_blocks=True,
        lstrip_blocks=True,
        bytecode_cache=_compiled_templates(),
    )
    env.filters["show"] = show
    env.filters["short"] = short
    env.filters["expected_text"] = expected_text
    env.filters["side_text"] = side_text
    env.filters["side_words"] = side_words
    env.filters["words"] = words
    env.filters["expected_words"] = expected_words
    env.filters["pr_links"] = pr_links
    env.filters["document_label"] = document_label
    env.filters["scenario_title"] = lambda probe, matrix: (
        matrix.scenarios[probe].title if probe in matrix.scenarios else probe
    )
    env.filters["anchor"] = lambda text: safe_name(str(text), 100)
    env.filters["wbr"] = lambda version: Markup(str(escape(version)).replace("-", "-<wbr>"))
    env.filters["version_head"] = lambda version: str(version).removeprefix("v")  # written upright, unbroken
    env.filters["packed"] = packed
    env.filters["breakable"] = breakable
    env.filters["cell_classes"] = cell_classes
    env.filters["md"] = lambda text: str(text).replace("|", "\\|").replace("\n", " ")
    env.filters["inline_markdown"] = findings.inline_markdown
    env.filters["seen_in"] = findings.seen_in
    env.filters["scenario_of"] = findings.scenario_of
    env.globals.update(
        PR_URL=PR_URL,
        column_px=COLUMN_PX,
        timeline_file=timeline_file,
        verdict_icon={PASS: "✓", FAIL: "✗", UNDECIDED: "?", NOT_OBSERVABLE: "–"},
        verdict_emoji={PASS: "✅", FAIL: "❌", UNDECIDED: "❔", NOT_OBSERVABLE: "➖"},
    )
    return env


def render_markdown(matrix: Matrix) -> str:
    """report.md: the headline, the matrix, links to the timelines, the provenance."""
    return _render("matrix.md.j2", matrix=matrix, changes=matrix.changes())


def _render(template: str, **context: Any) -> str:
    """A template rendered with the documents the families cite (read now, as the families are): each id gives
    the heading after the document's title: its title in English with its site and date, and what it is about."""
    documents = {d.id: (f"{d.title_en} ({d.byline})", d.about) for d in families.documents().values()}
    return _environment().get_template(template).render(documents=documents, **context)


def drawings(matrix: Matrix) -> dict[str, str]:
    """Each probe's timeline drawing (SVG), by probe."""
    return {
        probe: _drawing(
            matrix.scenarios[probe].title if probe in matrix.scenarios else probe,
            series,
            matrix.timeline_tags.get(probe) or {},
            matrix.anchors.get(probe, "anchor action"),
        )
        for probe, series in matrix.timelines.items()
    }


# Drawings made in this process, by their title, rows (each row's label and the very list of entries it draws, which
# is its record's own, never changed once read), tags and anchor; each kept with those lists, so that their id()s are
# not reused while it is kept. Matrices of the same records (a report's pages, the tests' matrices of one replay with
# other expectations or records beside) draw a probe's timeline once.
_DRAWN: dict[tuple[Any, ...], tuple[str, tuple[list[JsonDict], ...]]] = {}
# The same drawings by what their rows hold (a digest of each row's entries, pickled): records read again from the same
# files (make report's command run in-process twice over one replay) are new lists of equal entries. The digests of a
# replay's 1,483 rows take 48 ms of CPU, drawing them 400 ms.
_DRAWN_ALIKE: dict[tuple[Any, ...], str] = {}
_DRAWN_KEPT = 512


def _drawing(title: str, series: dict[str, list[JsonDict]], tags: dict[str, str], anchor: str) -> str:
    """timeline_svg.draw of a probe's rows, drawn once a process for the same entries."""
    rows = tuple((label, id(entries), len(entries)) for label, entries in series.items())
    key = (title, rows, tuple(tags.items()), anchor)
    if key not in _DRAWN:
        if len(_DRAWN) >= _DRAWN_KEPT:
            _DRAWN.clear()
            _DRAWN_ALIKE.clear()
        alike = (title, tuple((label, _digest(entries)) for label, entries in series.items()), key[2], anchor)
        if alike not in _DRAWN_ALIKE:
            _DRAWN_ALIKE[alike] = timeline_svg.draw(title, series, tags, anchor)
        _DRAWN[key] = (_DRAWN_ALIKE[alike], tuple(series.values()))
    return _DRAWN[key][0]


def _digest(entries: list[JsonDict]) -> bytes:
    """What a row's entries hold, in 16 bytes: equal pickles are equal values (1, 1.0 and True told apart), and the
    entries of one file read twice pickle alike."""
    return hashlib.blake2b(pickle.dumps(entries, protocol=5), digest_size=16).digest()


def render_html(matrix: Matrix, svgs: dict[str, str] | None = None, upgrade: Upgrade | None = None) -> str:
    """report.html, one file: the same, with the timelines drawn in and each cell's sources a click away; with
    `upgrade`, what changes between its two releases on top."""
    drawn = drawings(matrix) if svgs is None else svgs
    return _render(
        "report.html.j2",
        matrix=matrix,
        changes=matrix.changes(),
        drawings={probe: (packed(svg), drawing_size(svg)) for probe, svg in drawn.items()},
        legend=timeline_svg.legend(),
        data=packed(json.dumps(_page_data(matrix), ensure_ascii=False, separators=(",", ":"))),
        sections=page_sections(upgrade),
        upgrade=upgrade,
        findings=findings.findings(),
    )


def write_report(paths: Iterable[Path], out: Path, claims_loader: ClaimsLoader = load_claims) -> Matrix:
    """report.md, report.html and timelines/*.svg under `out`, from the records under `paths`."""
    return write_matrix(build_matrix(load_records(paths), claims_loader), out)


def write_matrix(matrix: Matrix, out: Path, upgrade: Upgrade | None = None) -> Matrix:
    """report.md, report.html and timelines/*.svg of a matrix, under `out` (with `upgrade`: its section on top)."""
    out.mkdir(parents=True, exist_ok=True)
    svgs = drawings(matrix)
    for probe, svg in svgs.items():
        target = out / timeline_file(probe)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(svg)
    (out / "report.md").write_text(render_markdown(matrix))
    (out / "report.html").write_text(render_html(matrix, svgs, upgrade))
    return matrix
