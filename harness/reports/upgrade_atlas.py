"""The atlas as `make upgrade` reads it: the shipped recordings (probes/*/recordings/) of the two releases asked about,
replayed offline now (`replay_atlas`), and which releases the others ran on, known from their names alone (for the
nearest live ones).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from harness.axis.replay import replay
from harness.base import families
from harness.base.versions import KubeVersion
from harness.core.records import JsonDict, load_records
from harness.reports.upgrade_compare import Observations


def replay_atlas(out: Path, select: str = "") -> Path:
    """The probes on the shipped recordings offline, all of them or those `select` (pytest's -k) keeps; the run
    records go under `out`."""
    replayed = replay(out, select=select)
    if replayed.returncode != 0:
        tail = "\n".join(replayed.stdout.splitlines()[-15:])
        raise RuntimeError(f"replaying the shipped recordings failed (exit {replayed.returncode}):\n{tail}")
    return out


# The release a shipped recording was made on, as its file is named (tools/adopt_recordings.py: the server's
# gitVersion): <probe>--v1.27.3-live-<cluster>[...].json; with what follows it, so that v1.37.0's is no part of
# v1.37.0-rc.1's
RECORDING_RELEASE = re.compile(r"--v(\d+\.\d+\.\d+(?:-(?:alpha|beta|rc)\.\d+)?)-live-")


def shipped_by_release(recordings: Iterable[Path] | None = None) -> dict[Version, list[Path]]:
    """The shipped recordings (default: every one under probes/) by the release each was made on, read from its
    name: no file is opened. Every shipped recording is live (tests/test_recordings.py)."""
    found: dict[str, list[Path]] = {}
    for path in families.all_recordings() if recordings is None else recordings:
        if match := RECORDING_RELEASE.search(path.name):
            found.setdefault(match.group(1), []).append(path)
    return {KubeVersion.parse(release).version: files for release, files in found.items()}


def release_selection(recordings: Iterable[Path]) -> str:
    """pytest's -k keeping the replays of the recordings of these recordings' releases, by the release in their
    names ('(--v1.26.15-live- or --v1.27.0-rc.0-live-)': a test's id holds its recording's name); in parentheses,
    since a value that starts with '-' would be taken for an option."""
    said = {match.group(0) for path in recordings if (match := RECORDING_RELEASE.search(path.name))}
    return "(" + " or ".join(sorted(said)) + ")"


@dataclass(frozen=True)
class Atlas:
    """The shipped recordings as make upgrade reads them: the run records of those of the releases asked about,
    replayed now, and every release the others ran on, known from their names without replaying them."""

    records: list[JsonDict]
    shipped: dict[Version, list[Path]]

    @property
    def said(self) -> str:
        """Where the live observations come from, in words."""
        count = sum(len(files) for files in self.shipped.values())
        return f"live: {count} shipped recordings (probes/*/recordings/), replayed offline"

    def observations(self, extra: Sequence[JsonDict] = ()) -> Observations:
        """What the replayed records and `extra` (live run records) saw; the releases the shipped recordings not
        replayed ran on count among the live ones (make upgrade names the nearest of them)."""
        return Observations.of([*self.records, *extra], also_ran=self.shipped)


def atlas_records(releases: Collection[Version]) -> Atlas:
    """The shipped recordings of `releases` replayed now, in a temporary directory (an upgrade between two releases
    reads the observations of those two only), and of the others which releases they ran on."""
    shipped = shipped_by_release()
    chosen = [path for version, files in shipped.items() if version in releases for path in files]
    if not chosen:  # neither release ran here: nothing to replay
        return Atlas([], shipped)
    with tempfile.TemporaryDirectory(prefix="plp-atlas-") as directory:
        records = load_records([replay_atlas(Path(directory), release_selection(chosen))])
    return Atlas(records, shipped)
