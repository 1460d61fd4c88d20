"""Adopt a live run's recordings as offline tests: `python tools/adopt_recordings.py runs/<run-id> [...]`.

Each recording of a passing probe is copied, unchanged (a live recording is evidence: never edited), into
`probes/<family>/recordings/<probe>--<server version>-live-<cluster>.json` (`…-apiserver-restarted.json` when the
run restarted the API server mid-probe on purpose, RESTART_APISERVER_AFTER), beside the family's other live
recordings (every recording there is live); a name already taken by another recording gets the next free
`-N` (one adopted is never replaced). Recordings of failing probes are not adopted unless `--failing` is
given (a failing live recording is a finding to resolve first, not a test to keep green).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def family_of(probe: str, record: dict[str, object]) -> str:
    """The family the probe record names; else from the module: 'test_active_deadline.py::…' -> 'active_deadline'."""
    return str(record.get("family") or probe.split("::", 1)[0].removeprefix("test_").removesuffix(".py"))


def adopt(run_dir: Path, include_failing: bool = False, families: Path = REPO / "probes") -> list[str]:
    """Copy the run's passing live recordings into families/<family>/recordings/; what was done, line by line."""
    said = []
    for path in sorted((run_dir / "recordings").glob("*.json")):
        data = json.loads(path.read_text())
        origin = data["origin"]
        if origin.get("kind") != "live":
            continue
        record = run_dir / "probes" / path.name
        facts = json.loads(record.read_text()) if record.is_file() else {}
        outcome = facts.get("outcome", "unknown")
        if outcome != "passed" and not include_failing:
            said.append(f"skipped {path.name}: the probe {outcome}")
            continue
        version = next(
            (
                str(i["response"]["gitVersion"])
                for i in data["interactions"]
                if i["call"] == "server_version" and "response" in i
            ),
            "unknown",
        )
        cluster = str(origin.get("cluster", "live")).split()[0]
        probe = data["probe"].split("::", 1)[1].removeprefix("test_")
        stem = path.stem.removeprefix("test-").replace("-", "_")
        repeat = stem.rsplit("_repeat", 1)[1] if "_repeat" in stem else ""
        recordings = families / family_of(data["probe"], facts) / "recordings"
        # a run with the API server restarted on purpose (RESTART_APISERVER_AFTER) sits beside the plain one
        disrupted = (
            "-apiserver-restarted" if any("apiserver_pid_after" in d for d in origin.get("disruptions", [])) else ""
        )
        target = recordings / f"{probe}--{version}-live-{cluster}{disrupted}{repeat and '-' + repeat}.json"
        taken = taken_names(target)
        same = next((t for t in taken if t.read_bytes() == path.read_bytes()), None)
        if same is not None:
            said.append(f"already adopted as {same.relative_to(families.parent)}")
            continue
        target = target.with_name(f"{target.stem}-{len(taken) + 1}.json") if taken else target
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        said.append(f"adopted {target.relative_to(families.parent)}")
    return said


def taken_names(target: Path) -> list[Path]:
    """The target and its `<stem>-N.json` (N from 2) that exist, in order: an adopted recording is never replaced."""
    taken: list[Path] = []
    candidate = target
    while candidate.exists():
        taken.append(candidate)
        candidate = target.with_name(f"{target.stem}-{len(taken) + 1}.json")
    return taken


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("runs", nargs="+", help="run directories (runs/<run-id>)")
    parser.add_argument("--failing", action="store_true", help="adopt recordings of failing probes too")
    args = parser.parse_args(argv)
    for run in args.runs:
        if not (Path(run) / "recordings").is_dir():
            print(f"error: {run} has no recordings/ folder", file=sys.stderr)
            return 2
        print("\n".join(adopt(Path(run), args.failing)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
