"""Ctrl-C a suite command at a chosen phase, as a terminal would, and list what it left behind.

    .venv/bin/python tools/interrupt_check.py --at 'starting etcd' -- .venv/bin/python -m harness probe \
        --version 1.37.0 --cluster local --probe trapping

The command starts in a session of its own with SIGINT at its default (a shell's background job would ignore
it); when a line of its output matches --at (a regular expression), or --after seconds have passed, the whole
session gets SIGINT, as Ctrl-C sends it to a terminal's foreground group (or, with --signal TERM, the command's
process alone gets SIGTERM, as from `kill` or a CI runner). Then, once the command has ended
(bounded by --timeout) and a few seconds more have passed, it prints one JSON object: the exit code, the last
lines it printed, whether a traceback appeared, and every leftover it finds that was not there before:
processes of its session, processes naming a suite cluster or the local clusters' state, mounts, network
devices, local cluster state folders, Docker containers, Kubernetes builds without their build.json, node
image records and images. Run it alone: another live run's leftovers would be counted as this one's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.base import paths  # noqa: E402
from harness.clusters.local.host import DEFAULT_ROOT  # noqa: E402
from harness.nodeimage import tags  # noqa: E402


def _lines(command: list[str]) -> list[str]:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line for line in done.stdout.splitlines() if line.strip()]


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (session, command line) of every process."""
    found = {}
    for line in _lines(["ps", "-ww", "-eo", "pid=,sid=,args="]):
        pid, sid, args = line.split(None, 2) if len(line.split(None, 2)) == 3 else (*line.split(), "")
        found[int(pid)] = (int(sid), args)
    return found


def snapshot() -> dict[str, Any]:
    """What exists now that a suite command could leave behind."""
    kubernetes = paths.TOOLS / "kubernetes"
    return {
        "processes": _processes(),
        "mounts": set(Path("/proc/self/mounts").read_text().splitlines()),
        "links": {line.split(":")[1].strip().split("@")[0] for line in _lines(["ip", "-o", "link"])},
        "local_state": {p.name for p in DEFAULT_ROOT.iterdir()} if DEFAULT_ROOT.is_dir() else set(),
        "containers": set(_lines(["docker", "ps", "-aq", "--no-trunc"])),
        "builds_without_record": {
            p.name for p in kubernetes.iterdir() if p.is_dir() and not (p / "build.json").is_file()
        }
        if kubernetes.is_dir()
        else set(),
        "node_image_records": {p.name for p in tags.NODE_IMAGES.glob("*.json")},
        "images": set(_lines(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}"])),
    }


SUITE_PROCESS = re.compile(rf"{re.escape(paths.CLUSTER_PREFIX)}\d|{re.escape(str(DEFAULT_ROOT))}")


def leftovers(before: dict[str, Any], after: dict[str, Any], session: int) -> dict[str, list[str]]:
    """Everything in `after` and not in `before` that the command (session `session`) could have made."""
    found: dict[str, list[str]] = {}
    processes = [
        f"{pid} {args[:160]}"
        for pid, (sid, args) in after["processes"].items()
        if pid not in before["processes"]
        and (sid == session or SUITE_PROCESS.search(args))
        and not args.startswith("ps ")
        and not args.endswith("<defunct>")
    ]
    if processes:
        found["processes"] = processes
    for key in ("mounts", "links", "local_state", "containers", "node_image_records"):
        if new := sorted(after[key] - before[key]):
            found[key] = new
    if images := sorted(i for i in after["images"] - before["images"] if i.startswith("plp-")):
        found["images"] = images
    return found


def unfinished_builds(before: dict[str, Any], after: dict[str, Any], session: int) -> list[str]:
    """Builds the command left without their build.json (none being made by another session now)."""
    builds = paths.TOOLS / "kubernetes"
    working_in = [_cwd(pid) for pid, (sid, _) in after["processes"].items() if sid != session]
    building_elsewhere = {cwd.name for cwd in working_in if cwd is not None and cwd.parent == builds}
    return sorted(after["builds_without_record"] - before["builds_without_record"] - building_elsewhere)


def _cwd(pid: int) -> Path | None:
    """The folder process `pid` works in (a build's, for one another session is making); None when gone."""
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--at", default="", help="send the signal when a line of output matches this expression")
    parser.add_argument("--delay", type=float, default=0.0, help="with --at: this many seconds after that line")
    parser.add_argument("--after", type=float, default=0.0, help="or this many seconds after the start")
    parser.add_argument("--timeout", type=float, default=300.0, help="how long the command may take to end")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds to wait before looking")
    parser.add_argument(
        "--signal",
        choices=("INT", "TERM"),
        default="INT",
        help="INT: SIGINT to the whole session, as Ctrl-C; TERM: SIGTERM to the command's process alone, as kill",
    )
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()
    if not args.at and not args.after:
        parser.error("give --at or --after")
    before = snapshot()
    started = time.monotonic()
    process = subprocess.Popen(
        args.command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    output: list[str] = []
    sent: list[float] = []  # when the signal went, and how many lines had been printed by then
    matched: list[str] = []

    def interrupt() -> None:
        if not sent and process.poll() is None:
            sent.extend((round(time.monotonic() - started, 1), len(output)))
            if args.signal == "TERM":
                process.send_signal(signal.SIGTERM)
            else:
                os.killpg(process.pid, signal.SIGINT)

    timer = threading.Timer(args.after, interrupt) if args.after else None
    if timer:
        timer.start()
    assert process.stdout is not None
    for line in process.stdout:
        output.append(line.rstrip("\n"))
        print(line, end="", file=sys.stderr, flush=True)
        if args.at and not matched and re.search(args.at, line):
            matched.append(line)
            threading.Timer(args.delay, interrupt).start()
    try:
        code = process.wait(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        code = None
    if timer:
        timer.cancel()
    ended = round(time.monotonic() - started, 1)
    time.sleep(args.settle)
    result = {
        "command": " ".join(args.command),
        "signal": f"SIG{args.signal}",
        "interrupted_at_s": sent[0] if sent else None,
        "ended_at_s": ended,
        "exit_code": code,
        "traceback": any("Traceback (most recent call last)" in line for line in output),
        "last_lines": output[-4:],
        "printed_after_interrupt": output[int(sent[1]) :] if sent else [],
        "left": leftovers(before, after := snapshot(), process.pid),
    }
    # A build stopped half-way keeps its folder (module downloads, go.mod) but has no build.json, the record a
    # build writes last (by rename) and the only thing that makes it count as built: listed, not a leftover.
    if unfinished := unfinished_builds(before, after, process.pid):
        result["unfinished_builds_without_build_json"] = unfinished
    print(json.dumps(result, indent=1))
    return 0 if sent and code == 130 and not result["traceback"] and not result["left"] else 1


if __name__ == "__main__":
    sys.exit(main())
