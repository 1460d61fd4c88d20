"""make upgrade FROM=1.26 TO=1.28 [RUNS=...]: what changes for the claims between two releases, from the shipped
recordings (replayed offline) and the expectations; RUNS adds the run records of live runs."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from harness.base import families
from harness.base.versions import VersionError
from harness.doors.commands.refusal import BAD, refuse
from harness.reports import records, upgrade
from harness.reports.records import JsonDict

# The release a shipped recording was made on, as its file is named (tools/adopt_recordings.py): name--v1.27.3-live-...
RECORDING_RELEASE = re.compile(r"--v(\d+\.\d+\.\d+(?:-(?:alpha|beta|rc)\.\d+)?)-")


def shipped_releases() -> set[str]:
    """The releases the shipped recordings were made on, read from their names (no file is opened)."""
    return {m.group(1) for path in families.all_recordings() if (m := RECORDING_RELEASE.search(path.name))}


class Refusal(ValueError):
    """FROM, TO or RUNS as the command cannot use them; the message says why."""


def releases(given_from: str, given_to: str, runs: list[JsonDict]) -> tuple[upgrade.Release, upgrade.Release]:
    """FROM and TO resolved and in order, or Refusal saying what is wrong with them."""
    for what, text in (("FROM", given_from), ("TO", given_to)):
        if not text.strip():
            raise Refusal(f"no {what} given: name two releases, e.g. make upgrade FROM=1.26 TO=1.28")
    known = shipped_releases() | upgrade.live_versions(runs)
    try:
        before = upgrade.resolve(given_from, "FROM", known)
        after = upgrade.resolve(given_to, "TO", known)
    except VersionError as err:
        raise Refusal(str(err)) from err
    if before.version.version >= after.version.version:
        raise Refusal(
            f"FROM {given_from} ({before.name}) is not earlier than TO {given_to} ({after.name}): "
            "FROM is the release run now, TO the one planned"
        )
    return before, after


def load_runs(runs: list[str]) -> list[JsonDict]:
    """The run records under RUNS (none when it is not given), or Refusal."""
    missing = [p for p in runs if not Path(p).exists()]
    if missing:
        raise Refusal(f"RUNS names {', '.join(missing)}: no such file or directory")
    try:
        return records.load_records([Path(p) for p in runs])
    except records.RecordError as err:
        raise Refusal(str(err)) from err


def run_upgrade_command(args: argparse.Namespace) -> int:
    """Refuse bad input in one line, then replay the atlas and print the answer."""
    try:
        extra = load_runs(args.runs)
        before, after = releases(args.from_version, args.to_version, extra)
    except Refusal as err:
        return refuse(BAD, str(err))
    atlas, said = upgrade.atlas_records()
    sources = [said]
    if args.runs:
        live = sum(records.origin_kind(r) == "live" for r in extra)
        sources.append(f"live: {live} run records under {', '.join(args.runs)}")
    print(upgrade.render_text(upgrade.compare(before, after, [*atlas, *extra], sources)), end="")
    return 0
