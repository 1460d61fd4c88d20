"""Every live recording of a family replayed as recorded, kept until both modules reading it have (in memory only).

tests/test_identity.py and tests/test_verdict_rules.py each replay every live recording unaltered before they alter
it, and only read that replay (its verdicts, what they rest on) and the recording (an altered copy shares all it does
not change: tests/mutations.py, with_its_own_watches). Their tests of one family are handed out together
(tests/conftest.py), so the second reads what the first replayed: parsing a family's recordings again and replaying
them again cost a quarter of the two modules' CPU. One family at a time is kept: all of them would hold every
recording parsed (268 MB of JSON) in the process.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from harness.base.families import all_recordings
from harness.base.run import Run
from harness.core.probe import Probe
from harness.core.transport_recording import Recording
from tests.mutations import replay


@dataclass(frozen=True)
class Replayed:
    """A live recording and its replay as recorded (read only)."""

    path: Path
    recording: Recording
    probe: Probe
    stopped: str | None  # how the replay stopped early (tests/mutations.py's replay), None: it ran through


@cache  # listed once: sorting the 2,385 paths takes 10 ms
def live_recordings() -> tuple[Path, ...]:
    return tuple(path for path in all_recordings() if "-live-" in path.name)


@cache
def recordings_of(family: str) -> tuple[Path, ...]:
    return tuple(path for path in live_recordings() if path.parent.parent.name == family)


# The modules that read a family's replays (test_identity.py, test_verdict_rules.py): once both have, they go, so that
# no full garbage collection walks them after (pytest's own at a worker's end: 0.23 s for a family's 494 replays).
READERS = 2
_KEPT: dict[str, tuple[tuple[Replayed, ...], list[int]]] = {}  # a family's replays, and how many have read them


def replayed_live(family: str, run: Run) -> tuple[Replayed, ...]:
    """Every live recording of the family, in order, each replayed as recorded (in `run` when not kept already)."""
    if family not in _KEPT:
        _KEPT.clear()  # the last family's go before this one's are read
        _KEPT[family] = (tuple(_replayed(path, family, run) for path in recordings_of(family)), [0])
    replays, read = _KEPT[family]
    read[0] += 1
    if read[0] >= READERS:
        del _KEPT[family]
    return replays


def _replayed(path: Path, family: str, run: Run) -> Replayed:
    recording = Recording.load(path)
    # Moved out of the garbage collector's reach with all else alive now (gc.freeze), as the shared replay's records
    # are (tests/conftest.py): a family's recordings stay until both modules have read them, and the collections
    # walked the million objects parsed, again and again. Frozen, an object is still freed when its last reference
    # goes: the collector only finds cycles, and a replay leaves none.
    gc.freeze()
    probe, stopped = replay(recording, family, run)
    return Replayed(path, recording, probe, stopped)
