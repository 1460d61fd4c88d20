"""Do two live runs of the same version agree? `python tools/compare_runs.py runs/<a> runs/<b>`.

For every probe both runs recorded, each claim both observed is compared: the verdict (pass / fail /
undecided / not observable) and the observed value. Values that are measurements (numbers) are shown side
by side and agree when both verdicts agree, since two clusters never time alike; any other value must be
equal (harness/axis/compare.py, which make radar shares). Prints one line per claim that differs and a summary;
exits 1 when something differs, so a script can tell. Written to compare a kind cluster with a local one of
the same Kubernetes build.

With --measurements, every measured claim of the two runs instead, as a Markdown table: its bound and each run's
min-max over its repeats (REPEAT=N) and passes, and how far the medians moved; used to see which timing claims the
suite's own load moves (PARALLEL=auto against PARALLEL=1, docs/parallel-load.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.axis.compare import differing, verdicts
from harness.reports.spread import spread_of_run


def compare(a: Path, b: Path) -> tuple[list[str], int]:
    """(lines describing each difference, how many claims were compared)."""
    found, compared = differing(verdicts(a), verdicts(b))
    lines = [
        f"{probe} {claim}: {one['status']} {json.dumps(one['observed'])} | "
        f"{other['status']} {json.dumps(other['observed'])}"
        for probe, claim, one, other in found
    ]
    return lines, compared


def measurements(a: Path, b: Path) -> list[str]:
    """A Markdown table of every claim measured in both runs: bound, each side's spread and passes, the shift."""

    def keyed(run: Path) -> dict[tuple[str, str], dict[str, Any]]:
        return {(row["probe"], row["claim"]): row for row in spread_of_run(run)}

    left, right = keyed(a), keyed(b)
    lines = [
        f"| probe | claim | bound | {a.name} | {b.name} | median moved |",
        "|---|---|---|---|---|---|",
    ]
    for key in sorted(set(left) & set(right)):
        one, other = left[key], right[key]
        bound = one.get("bound") or other.get("bound")
        shown = f"[{bound[0]:g}, {bound[1]:g}]" if bound else "-"
        probe = key[0].split("::")[-1].removeprefix("test_")
        moved = other["median"] - one["median"]
        lines.append(f"| {probe} | {key[1]} | {shown} | {_cell(one)} | {_cell(other)} | {moved:+.2f} |")
    return lines


def _cell(row: dict[str, Any]) -> str:
    """`4.99-5.04 (3/3)`: the spread over a run's repeats and how many passed; one value when measured once."""
    values = f"{row['min']:.2f}" if row["min"] == row["max"] else f"{row['min']:.2f}-{row['max']:.2f}"
    return f"{values} ({row['passed']}/{row['runs']})"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("a", type=Path, help="a run directory (runs/<run-id>)")
    parser.add_argument("b", type=Path, help="another run directory")
    parser.add_argument(
        "--measurements", action="store_true", help="every measured claim of both runs as a Markdown table instead"
    )
    args = parser.parse_args(argv)
    for run in (args.a, args.b):
        if not (run / "probes").is_dir():
            print(f"error: {run} is not a run directory (no probes/ in it)", file=sys.stderr)
            return 2
    if args.measurements:
        print("\n".join(measurements(args.a, args.b)))
        return 0
    differences, compared = compare(args.a, args.b)
    for line in differences:
        print(line)
    print(f"{compared} claims observed by both; {len(differences)} differ")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
