"""make upgrade FROM=1.26 TO=1.28 [RUNS=...] [DETAIL=1]: what changes for the claims between two releases (FROM later
than TO: a rollback), from the shipped recordings (replayed offline) and the expectations, in one screen; DETAIL=1
lists every claim; RUNS adds the run records of live runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.base.versions import VersionError
from harness.core import records
from harness.core.records import JsonDict
from harness.doors.commands.refusal import BAD, refuse
from harness.reports import upgrade, upgrade_atlas, upgrade_compare, upgrade_ends, upgrade_model


class Refusal(ValueError):
    """FROM, TO or RUNS as the command cannot use them; the message says why."""


def releases(
    given_from: str, given_to: str, runs: list[JsonDict] | None = None
) -> tuple[upgrade_model.UpgradeEnd, upgrade_model.UpgradeEnd]:
    """FROM and TO resolved (any published release the suite knows the minor of; a vendor's build refused), or
    Refusal saying what is wrong with them. FROM later than TO is a rollback, answered as such."""
    for what, text in (("FROM", given_from), ("TO", given_to)):
        if not text.strip():
            raise Refusal(f"no {what} given: name two releases, e.g. make upgrade FROM=1.26 TO=1.28")
    try:
        before = upgrade_ends.resolve(upgrade_ends.read_end(given_from, "FROM"), "FROM")  # FROM read here, once
        after = upgrade_ends.resolve(upgrade_ends.read_end(given_to, "TO"), "TO")  # TO too
    except VersionError as err:
        raise Refusal(str(err)) from err
    if before.version.version == after.version.version:
        raise Refusal(
            f"FROM {given_from} and TO {given_to} are the same release ({before.name}): nothing changes between them"
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
    detail = str(getattr(args, "detail", "") or "").strip()
    try:
        if detail not in ("", "0", "1"):
            raise Refusal(f"DETAIL={detail}: give DETAIL=1 for every claim, or leave it out for one screen")
        extra = load_runs(args.runs)
        before, after = releases(args.from_version, args.to_version, extra)
    except Refusal as err:
        return refuse(BAD, str(err))
    atlas = upgrade_atlas.atlas_records({before.version.version, after.version.version})  # only theirs are compared
    sources = [atlas.said]
    if args.runs:
        live = sum(records.origin_kind(r) == "live" for r in extra)
        sources.append(f"live: {live} run records under {', '.join(args.runs)}")
    found = upgrade_compare.compare(before, after, atlas.observations(extra), sources)
    print((upgrade.render_detail if detail == "1" else upgrade.render_text)(found), end="")
    return 0
