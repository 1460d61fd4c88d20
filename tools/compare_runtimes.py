"""Does the container runtime change a release's claims? `python tools/compare_runtimes.py 1.27.16 [--markdown]`.

Takes the shipped live kind recordings of one Kubernetes release, groups them by the runtime their origin names
(containerd and runc; a recording made before origins named the runtime ran on the suite's Debian image, whose
containerd and runc docs/runtimes.md gives), replays each group offline against today's expectations, and
compares every claim two groups both observed (harness/axis/compare.py: the verdict, and the value unless
both are measurements, which are shown side by side). Prints one line per claim that differs and one summary
line per pair of runtimes; `--markdown` prints the pairs as table rows for docs/runtimes.md. Exits 1 when a
claim differs, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from itertools import combinations
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.axis.compare import Verdicts, differing, verdicts_of
from harness.axis.replay import replay

REPO = Path(__file__).resolve().parent.parent
# What every image without a recorded runtime carried (the suite's Debian image, docs/runtimes.md): named as the
# origins of later Debian-image recordings name it, so both fall in one group.
DEBIAN = "containerd 1.6.20~ds1-1+deb12u3, runc 1.1.5+ds1-1+deb12u1"


def runtime_of(origin: dict[str, Any]) -> str:
    """'containerd v1.7.18, runc v1.1.13' from a recording's origin; the Debian image's when none is named."""
    if "containerd" not in origin:
        return DEBIAN
    named = [f"{part} {str(origin[part]).split()[0]}" for part in ("containerd", "runc") if origin.get(part)]
    return ", ".join(named)


def grouped(version: str, probes: Path = REPO / "probes") -> dict[str, list[Path]]:
    """runtime -> the shipped live kind recordings of `version` that ran on it."""
    groups: dict[str, list[Path]] = {}
    for path in sorted(probes.glob(f"*/recordings/*--v{version}-live-kind*.json")):
        origin = json.loads(path.read_text())["origin"]
        groups.setdefault(runtime_of(origin), []).append(path)
    return groups


def judged(recordings: list[Path], scratch: Path) -> Verdicts:
    """probe -> claim -> verdict of the probes replayed on these recordings (a child pytest, no cluster)."""
    source = scratch / "recordings"
    source.mkdir(parents=True)
    for path in recordings:
        shutil.copy(path, source / path.name)
    replayed = replay(scratch / "runs", source)
    if replayed.exit_code not in (0, 1) or not replayed.records:
        raise SystemExit(f"error: replaying {len(recordings)} recordings failed: {replayed.stdout.splitlines()[-1:]}")
    return verdicts_of(replayed.records)


def timings(left: Verdicts, right: Verdicts) -> list[tuple[str, str, float, float]]:
    """Every claim both sides measured as one number of seconds: (probe, claim, left's, right's)."""
    found = []
    for probe in sorted(set(left) & set(right)):
        for claim in sorted(set(left[probe]) & set(right[probe])):
            one, other = left[probe][claim]["observed"], right[probe][claim]["observed"]
            if all(isinstance(v, int | float) and not isinstance(v, bool) for v in (one, other)):
                found.append((probe, claim, float(one), float(other)))
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("version", help="a Kubernetes release with shipped kind recordings, e.g. 1.27.16")
    parser.add_argument("--markdown", action="store_true", help="print each pair as a docs/runtimes.md table row")
    parser.add_argument("--values", action="store_true", help="also print every timing both measured, side by side")
    args = parser.parse_args(argv)
    version = args.version.lstrip("v")
    groups = grouped(version)
    if len(groups) < 2:
        said = ", ".join(f"{k} ({len(v)})" for k, v in groups.items()) or "none"
        print(f"error: v{version} has shipped kind recordings on fewer than two runtimes: {said}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="plp-runtimes-") as scratch:
        seen = {name: judged(paths, Path(scratch) / str(i)) for i, (name, paths) in enumerate(groups.items())}
    differs = False
    for one, other in combinations(sorted(seen), 2):
        found, compared = differing(seen[one], seen[other])
        differs = differs or bool(found)
        for probe, claim, left, right in found:
            print(f"  {probe.split('::')[-1]} {claim}: {left['status']} {json.dumps(left['observed'])} | "
                  f"{right['status']} {json.dumps(right['observed'])}")  # fmt: skip
        for probe, claim, left_s, right_s in timings(seen[one], seen[other]) if args.values else []:
            print(f"  {probe.split('::')[-1]} {claim}: {left_s:g} s | {right_s:g} s ({right_s - left_s:+.2f} s)")
        if args.markdown:
            names = ", ".join(sorted({c for _, c, _, _ in found})) or "none"
            print(f"| v{version} | {one} | {other} | {compared} | {compared - len(found)} | {len(found)} | {names} |")
        else:
            print(f"v{version}: {one} | {other}: {compared} claims observed by both; {len(found)} differ")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
