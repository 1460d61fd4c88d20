"""What the suite found (probes/findings.yaml): README's "What it found" table and the report page's first section,
made from one list. A finding names the probe that shows it and the claims it rests on; the page links their rows
and says how many versions of the matrix saw them live, and whether every one agrees with its expectation."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from markupsafe import Markup, escape

from harness.base import families
from harness.core.expectations import FAIL, UNDECIDED
from harness.reports.report_model import Matrix
from harness.reports.report_words import pr_links

FINDINGS = "findings.yaml"
FIELDS = frozenset({"finding", "releases", "probe", "claims", "explained", "recordings"})
EXPLAINED_IN = "docs/claims-and-documents.md"


class FindingsError(ValueError):
    """probes/findings.yaml is not what this module says it is."""


@dataclass(frozen=True)
class Finding:
    """One finding: its words, the releases it concerns, the probe and claims that show it, where it is explained and
    the recordings README names as its evidence."""

    text: str  # Markdown: `code`, k/k#N
    releases: str
    probe: str
    claims: tuple[str, ...]
    explained: tuple[str, str]  # the heading's label and anchor in docs/claims-and-documents.md
    recordings: tuple[str, ...]  # v1.21.14-live-local: <probe>--<this>.json under the probe's family

    def recording_paths(self, root: Path | None = None) -> list[Path]:
        """The recordings named as evidence, as paths under probes/ (found in whichever family holds them)."""
        found = []
        for suffix in self.recordings:
            name = f"{self.probe}--{suffix}.json"
            hits = sorted((root or families.FAMILIES_ROOT).glob(f"*/recordings/{name}"))
            if not hits:
                raise FindingsError(f"{FINDINGS}: no recording {name} under any family's recordings/")
            found.append(hits[0])
        return found

    def readme_row(self) -> str:
        """Its row of README's table: finding, releases, evidence (the explanation, then each recording)."""
        label, anchor = self.explained
        links = [f"[{label}]({EXPLAINED_IN}#{anchor})"]
        for suffix, path in zip(self.recordings, self.recording_paths(), strict=True):
            links.append(f"[{suffix.split('-live')[0]}]({path.relative_to(families.FAMILIES_ROOT.parent)})")
        return f"| {self.text} | {self.releases} | {', '.join(links)} |"


def findings(root: Path | None = None) -> tuple[Finding, ...]:
    """Every finding, in README's order (none where `root` has no findings.yaml)."""
    return _findings(root or families.FAMILIES_ROOT)


@cache
def _findings(root: Path) -> tuple[Finding, ...]:
    path = root / FINDINGS
    if not path.exists():  # a folder of families alone (a test's copy): nothing found to tell
        return ()
    data = families.parse_yaml(path.read_text()) or {}
    out = []
    for entry in data.get("findings") or []:
        if not isinstance(entry, dict) or set(entry) != FIELDS:
            raise FindingsError(f"{path}: each finding has exactly {', '.join(sorted(FIELDS))}")
        label, anchor = entry["explained"]
        out.append(
            Finding(
                " ".join(str(entry["finding"]).split()),
                str(entry["releases"]),
                str(entry["probe"]),
                tuple(str(c) for c in entry["claims"]),
                (str(label), str(anchor)),
                tuple(str(r) for r in entry["recordings"]),
            )
        )
    return tuple(out)


def readme_table(found: tuple[Finding, ...] | None = None) -> str:
    """README's "What it found" table."""
    rows = [finding.readme_row() for finding in (findings() if found is None else found)]
    return "\n".join(["| finding | releases | evidence |", "|---|---|---|", *rows]) + "\n"


def inline_markdown(text: str) -> Markup:
    """A finding's words as HTML: `code` as code, k/k#N as a link to the PR, the rest escaped."""
    parts = re.split(r"(`[^`]+`)", text)
    return Markup("").join(
        Markup(f"<code>{escape(part[1:-1])}</code>") if part.startswith("`") else pr_links(part) for part in parts
    )


@dataclass(frozen=True)
class Seen:
    """What a matrix holds of a finding's claims: the versions with a live cell of one of them, and how many of
    those cells disagree with their expectation or are undecided."""

    live_versions: tuple[str, ...]
    disagree: int
    undecided: int

    def words(self) -> str:
        """'live on 17 versions here, each as expected', or 'not seen live in these records'."""
        if not self.live_versions:
            return "not seen live in these records"
        n = len(self.live_versions)
        said = f"live on {n} version{'s' if n != 1 else ''} here"
        if self.disagree or self.undecided:
            return f"{said}: {self.disagree} disagree, {self.undecided} undecided"
        return f"{said}, each as expected"


def scenario_of(finding: Finding, matrix: Matrix) -> str | None:
    """The matrix's key of the finding's probe (its node id, test_family.py::test_probe), or None where the records
    the matrix was made from do not hold it."""
    return next((key for key in matrix.scenarios if key.endswith(f"::test_{finding.probe}")), None)


def seen_in(finding: Finding, matrix: Matrix) -> Seen:
    """The finding's claims in a matrix: where they were seen live, and how that compares with the expectations."""
    cells = [
        (version, cell)
        for claim in finding.claims
        for version in matrix.versions
        if (cell := matrix.cells.get((claim, version))) is not None and cell.origin == "live"
    ]
    versions = tuple(v for v in matrix.versions if any(version == v for version, _ in cells))
    return Seen(
        versions,
        sum(cell.status == FAIL for _, cell in cells),
        sum(cell.status == UNDECIDED for _, cell in cells),
    )
