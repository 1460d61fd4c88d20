"""`make report`: the behaviour matrix (claims × versions) from run records, as Markdown and one HTML file.

Every verdict is re-evaluated against the current expectations from the recorded observation, so a
corrected expectation can be tried on old recordings without a cluster; the report says which verdicts
changed. Templates are Jinja2 (harness/templates/).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from harness.expectations import FAIL, NOT_OBSERVABLE, PASS, UNDECIDED, Claim, evaluate, load_claims
from harness.versions import KubeVersion

JsonDict = dict[str, Any]
ClaimsLoader = Callable[[str], dict[str, Claim]]
# Where several probes check one claim on one version, the cell shows the worst: fail, then undecided.
SEVERITY = {PASS: 0, NOT_OBSERVABLE: 1, UNDECIDED: 2, FAIL: 3}


@dataclass
class Cell:
    observed: Any
    status: str
    recorded_status: str
    expected: JsonDict | None
    message: str
    probes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.status != self.recorded_status


@dataclass
class Matrix:
    versions: list[str]  # server versions, oldest first
    claims: dict[str, JsonDict]  # claim id -> statement, observable, document
    cells: dict[tuple[str, str], Cell]  # (claim id, version) -> cell
    provenance: dict[str, JsonDict]  # version -> provenance of the run(s) behind that column
    timelines: dict[str, dict[str, list[JsonDict]]] = field(default_factory=dict)  # probe -> version -> entries

    def counts(self) -> dict[str, int]:
        """How many cells have each status; failed and undecided are counted apart."""
        counts = dict.fromkeys(SEVERITY, 0)
        for cell in self.cells.values():
            counts[cell.status] = counts.get(cell.status, 0) + 1
        return counts

    def summary(self) -> str:
        """'12 claims × 3 versions: 30 pass, 2 fail, 1 undecided, 3 not observable'."""
        counts = ", ".join(f"{n} {status}" for status, n in self.counts().items())
        return f"{len(self.claims)} claims × {len(self.versions)} versions: {counts}"

    def changed(self) -> list[tuple[str, str, Cell]]:
        return [(claim, version, cell) for (claim, version), cell in sorted(self.cells.items()) if cell.changed]

    def differences(self, a: str, b: str) -> list[tuple[str, Cell, Cell]]:
        """Claims observed on both versions whose observed value differs between them."""
        rows = []
        for claim in self.claims:
            left, right = self.cells.get((claim, a)), self.cells.get((claim, b))
            if left is not None and right is not None and left.observed != right.observed:
                rows.append((claim, left, right))
        return rows


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


def build_matrix(records: Iterable[JsonDict], claims_loader: ClaimsLoader = load_claims) -> Matrix:
    cells: dict[tuple[str, str], Cell] = {}
    claims: dict[str, JsonDict] = {}
    provenance: dict[str, JsonDict] = {}
    versions: set[str] = set()
    timelines: dict[str, dict[str, list[JsonDict]]] = {}
    for record in records:
        version = record.get("server_version")
        if not version:
            continue
        versions.add(version)
        origin = record.get("recording_origin") or {}
        provenance.setdefault(version, {
            "transport": record.get("transport"),
            "origin": origin.get("kind", "live" if record.get("transport") == "live" else "?"),
            "node_image": origin.get("node_image") or record.get("provenance", {}).get("node_image"),
            "kind_version": origin.get("kind_version") or record.get("provenance", {}).get("kind_version"),
            "when": origin.get("recorded_at") or record.get("provenance", {}).get("started"),
        })  # fmt: skip
        timelines.setdefault(record["probe"], {}).setdefault(version, record.get("timeline", {}).get("entries", []))
        current = claims_loader(record["family"])
        for verdict in record.get("verdicts", []):
            claim = current.get(verdict["claim"])
            if claim is None:
                continue
            claims.setdefault(
                claim.id, {"statement": claim.claim, "observable": claim.observable, "document": claim.document}
            )
            if verdict["status"] == NOT_OBSERVABLE:
                now = verdict
            else:
                gaps = (verdict.get("detail") or {}).get("watch_gaps")
                now = evaluate(claim, KubeVersion.parse(version), verdict["observed"], gaps).to_json()
            cell = cells.get((claim.id, version))
            if cell is None:
                cell = Cell(now["observed"], now["status"], verdict["status"], now["expected"], now["message"])
                cells[(claim.id, version)] = cell
            elif SEVERITY.get(now["status"], SEVERITY[FAIL]) > SEVERITY.get(cell.status, SEVERITY[FAIL]):
                cell.status, cell.observed, cell.message = now["status"], now["observed"], now["message"]
                cell.recorded_status, cell.expected = verdict["status"], now["expected"]
            cell.probes.append(record["probe"])
    ordered = sorted(versions, key=lambda v: KubeVersion.parse(v).version)
    by_version = {
        probe: dict(sorted(series.items(), key=lambda kv: KubeVersion.parse(kv[0]).version))
        for probe, series in sorted(timelines.items())
    }
    return Matrix(ordered, dict(sorted(claims.items())), cells, provenance, by_version)


def _environment() -> Environment:
    env = Environment(loader=PackageLoader("harness", "templates"), autoescape=select_autoescape(["html"]))
    env.filters["show"] = lambda value: json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    return env


def render_markdown(matrix: Matrix) -> str:
    return _environment().get_template("matrix.md.j2").render(matrix=matrix)


def render_html(matrix: Matrix) -> str:
    from harness import timeline_svg  # matplotlib: imported only when drawing, so refusals stay quick

    pairs = list(pairwise(matrix.versions))
    drawings = {probe: timeline_svg.draw(probe, series) for probe, series in matrix.timelines.items()}
    return _environment().get_template("report.html.j2").render(matrix=matrix, pairs=pairs, drawings=drawings)


def write_report(paths: Iterable[Path], out: Path, claims_loader: ClaimsLoader = load_claims) -> Matrix:
    return write_matrix(build_matrix(load_records(paths), claims_loader), out)


def write_matrix(matrix: Matrix, out: Path) -> Matrix:
    """report.md and report.html of a matrix, in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text(render_markdown(matrix))
    (out / "report.html").write_text(render_html(matrix))
    return matrix
