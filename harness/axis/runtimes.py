"""The container runtime as an axis: one Kubernetes release's shipped kind recordings set side by side by the runtime
their origin names (make runtimes VERSION=1.27.16), or the recordings live runs wrote (make runtimes RUNS=<run
directories>: a make matrix of one release on several runtimes, VERSIONS="1.27.16:debian 1.27.16:kind").

Each runtime's recordings are replayed offline against today's expectations (a child pytest, no cluster) and every
claim two or more runtimes observed is compared (harness/axis/compare.py: the verdict, and the value unless both
are measurements, which are shown side by side). A recording made before origins named the runtime ran on the
suite's Debian image, whose containerd and runc docs/runtimes.md gives.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from harness.axis.compare import Verdicts, agree, is_measurement, verdicts_of
from harness.axis.replay import replay
from harness.base import paths

# What every image without a recorded runtime carried (the suite's Debian image, docs/runtimes.md): named as the
# origins of later Debian-image recordings name it, so both fall in one group.
DEBIAN = "containerd 1.6.20~ds1-1+deb12u3, runc 1.1.5+ds1-1+deb12u1"


class RuntimeAxisError(ValueError):
    """A release whose shipped kind recordings cannot be set side by side; the message says why."""


def runtime_of(origin: dict[str, Any]) -> str:
    """'containerd v1.7.18, runc v1.1.13' from a recording's origin; the Debian image's when none is named."""
    if "containerd" not in origin:
        return DEBIAN
    named = [f"{part} {str(origin[part]).split()[0]}" for part in ("containerd", "runc") if origin.get(part)]
    return ", ".join(named)


def short_runtime(runtime: str) -> str:
    """'containerd v1.7.18' (runc left to the legend); the Debian package as 'containerd 1.6.20 (Debian)'."""
    return runtime.split(",")[0].replace("~ds1-1+deb12u3", " (Debian)")


def column_head(runtime: str) -> str:
    """A column head: the containerd version alone ('v1.7.18', '1.6.20 (Debian)')."""
    return short_runtime(runtime).removeprefix("containerd ")


def grouped(version: str, probes: Path = paths.REPO / "probes") -> dict[str, list[Path]]:
    """runtime -> the shipped live kind recordings of `version` that ran on it."""
    groups: dict[str, list[Path]] = {}
    for path in sorted(probes.glob(f"*/recordings/*--v{version}-live-kind*.json")):
        origin = json.loads(path.read_text())["origin"]
        groups.setdefault(runtime_of(origin), []).append(path)
    return groups


def run_recordings(runs: Sequence[Path]) -> dict[str, dict[str, list[Path]]]:
    """release -> runtime -> the recordings the runs under `runs` wrote: each run's recordings/ beside its run.json,
    of the release its server said (a run whose cluster never answered wrote none)."""
    found: dict[str, dict[str, list[Path]]] = {}
    for root in runs:
        for run_json in sorted(root.rglob("run.json")):
            server = (json.loads(run_json.read_text()).get("server_version") or {}).get("gitVersion")
            for path in sorted((run_json.parent / "recordings").glob("*.json")) if server else []:
                origin = json.loads(path.read_text()).get("origin") or {}
                found.setdefault(str(server).lstrip("v"), {}).setdefault(runtime_of(origin), []).append(path)
    return found


def judged(recordings: list[Path], scratch: Path) -> Verdicts:
    """probe -> claim -> verdict of the probes replayed on these recordings (a child pytest, no cluster)."""
    source = scratch / "recordings"
    source.mkdir(parents=True)
    for number, path in enumerate(recordings):
        shutil.copy(path, source / f"{number}-{path.name}")  # two runs' recordings of one probe share a name
    replayed = replay(scratch / "runs", source)
    if replayed.exit_code not in (0, 1) or not replayed.records:
        raise RuntimeAxisError(f"replaying {len(recordings)} recordings failed: {replayed.stdout.splitlines()[-1:]}")
    return verdicts_of(replayed.records)


@dataclass(frozen=True)
class Row:
    """One claim as each runtime that observed it saw it (None where a runtime did not observe it)."""

    probe: str
    claim: str
    seen: tuple[dict[str, Any] | None, ...]

    @property
    def differs(self) -> bool:
        """Two runtimes that both observed the claim disagree on it."""
        present = [v for v in self.seen if v is not None]
        return any(not agree(a, b) for a, b in combinations(present, 2))

    @property
    def timed(self) -> bool:
        """Every runtime that observed the claim measured it as one number."""
        return all(_number(v["observed"]) for v in self.seen if v is not None)


@dataclass(frozen=True)
class SideBySide:
    """A release's claims on each of its runtimes."""

    version: str
    runtimes: tuple[str, ...]
    recordings: tuple[int, ...]
    rows: tuple[Row, ...]  # claims observed on two runtimes or more

    def pairs(self) -> list[tuple[str, str, int, list[Row]]]:
        """(runtime, runtime, claims both observed, the rows where those two differ) for every pair."""
        found = []
        for (i, one), (j, other) in combinations(enumerate(self.runtimes), 2):
            both = [r for r in self.rows if r.seen[i] is not None and r.seen[j] is not None]
            differ = [r for r in both if not agree(r.seen[i], r.seen[j])]  # type: ignore[arg-type]
            found.append((one, other, len(both), differ))
        return found


def side_by_side(
    version: str,
    probes: Path = paths.REPO / "probes",
    judge: Callable[[list[Path], Path], Verdicts] = judged,
    groups: Mapping[str, list[Path]] | None = None,
    where: str = "shipped kind recordings",
) -> SideBySide:
    """The release's recordings replayed per runtime and set side by side, or RuntimeAxisError: its shipped kind
    recordings, or `groups` (runtime -> recordings, of runs), which `where` names."""
    groups = grouped(version, probes) if groups is None else groups
    if len(groups) < 2:
        said = ", ".join(f"{k} ({len(v)})" for k, v in groups.items()) or "none"
        raise RuntimeAxisError(f"v{version} has {where} on fewer than two runtimes: {said}")
    runtimes = tuple(sorted(groups))
    with tempfile.TemporaryDirectory(prefix="plp-runtimes-") as scratch:
        seen = [judge(groups[name], Path(scratch) / str(i)) for i, name in enumerate(runtimes)]
    keys = sorted({(probe, claim) for verdicts in seen for probe in verdicts for claim in verdicts[probe]})
    rows = []
    for probe, claim in keys:
        row = Row(probe, claim, tuple(verdicts.get(probe, {}).get(claim) for verdicts in seen))
        if sum(v is not None for v in row.seen) >= 2:
            rows.append(row)
    return SideBySide(version, runtimes, tuple(len(groups[r]) for r in runtimes), tuple(rows))


def _number(value: Any) -> bool:
    return is_measurement(value) and not isinstance(value, dict)


def _cell(verdict: dict[str, Any] | None) -> str:
    if verdict is None:
        return "-"
    observed = verdict["observed"]
    return f"{verdict['status']} {f'{observed:g}' if _number(observed) else json.dumps(observed)}"


def _line(first: str, cells: list[str], widths: list[int]) -> str:
    return first + " | " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))


def render(found: SideBySide, values: bool, where: str = "kind recordings") -> str:
    """The claims that differ between runtimes (with `values`, every claim measured as one number too: seconds or
    counts, as its row says), a column per runtime, and a line per pair of runtimes."""
    heads = [column_head(r) for r in found.runtimes]
    lines = [f"v{found.version} on {len(found.runtimes)} runtimes ({where}, replayed against today's rows):"]
    lines += [
        f"  {short_runtime(r)}: {r} ({n} recordings)" for r, n in zip(found.runtimes, found.recordings, strict=True)
    ]
    shown = [r for r in found.rows if r.differs or (values and r.timed)]
    if shown:
        width = max(len(r.claim) for r in shown)
        cells = [[_cell(v) for v in r.seen] for r in shown]
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(heads)]
        lines.append(_line("    " + "claim (containerd:)".ljust(width), heads, widths))
        probe = ""
        for row, row_cells in zip(shown, cells, strict=True):
            if row.probe != probe:
                probe = row.probe
                lines.append(f"  {probe.split('::')[-1]}")
            lines.append(
                _line(f"    {row.claim.ljust(width)}", row_cells, widths) + (" differs" if row.differs else "")
            )
    for one, other, compared, differ in found.pairs():
        lines.append(
            f"{short_runtime(one)} | {short_runtime(other)}: {compared} claims observed by both; {len(differ)} differ"
        )
    return "\n".join(line.rstrip() for line in lines)


def markdown_rows(found: SideBySide) -> list[str]:
    """One docs/runtimes.md table row per pair of runtimes."""
    rows = []
    for one, other, compared, differ in found.pairs():
        names = ", ".join(sorted({r.claim for r in differ})) or "none"
        rows.append(
            f"| v{found.version} | {one} | {other} | {compared} | {compared - len(differ)} | {len(differ)} | {names} |"
        )
    return rows
