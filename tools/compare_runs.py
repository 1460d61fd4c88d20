"""Do two live runs of the same version agree? `python tools/compare_runs.py runs/<a> runs/<b>`.

For every probe both runs recorded, each claim both observed is compared: the verdict (pass / fail /
undecided / not observable) and the observed value. Values that are measurements (numbers) are shown side
by side and agree when both verdicts agree, since two clusters never time alike; any other value must be
equal (harness/axis/compare.py, which make radar shares). Prints one line per claim that differs and a summary;
exits 1 when something differs, so a script can tell. Written to compare a kind cluster with a local one of
the same Kubernetes build.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.axis.compare import differing, verdicts


def compare(a: Path, b: Path) -> tuple[list[str], int]:
    """(lines describing each difference, how many claims were compared)."""
    found, compared = differing(verdicts(a), verdicts(b))
    lines = [
        f"{probe} {claim}: {one['status']} {json.dumps(one['observed'])} | "
        f"{other['status']} {json.dumps(other['observed'])}"
        for probe, claim, one, other in found
    ]
    return lines, compared


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("a", type=Path, help="a run directory (runs/<run-id>)")
    parser.add_argument("b", type=Path, help="another run directory")
    args = parser.parse_args(argv)
    for run in (args.a, args.b):
        if not (run / "probes").is_dir():
            print(f"error: {run} is not a run directory (no probes/ in it)", file=sys.stderr)
            return 2
    differences, compared = compare(args.a, args.b)
    for line in differences:
        print(line)
    print(f"{compared} claims observed by both; {len(differences)} differ")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
