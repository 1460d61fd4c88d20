"""PARALLEL=auto: how many pytest-xdist workers a run needs and which probes each runs, planned from the
durations measured before, so that the run takes about as long as its longest probe.

- Durations: per probe, the longest of its LATEST (3) most recent measurements: what a pytest-xdist worker
  measured for its whole item (namespace, probe, cleanup) in earlier planned runs (`runs/*/schedule.json`,
  `measured_s`, written by PlannedScheduling), and what the live recordings of every family
  (probes/<family>/recordings/: first call to last answer) and earlier runs' probe records
  (`runs/*/probes/*.json`, `duration_s`) say plus NAMESPACE_S, which they leave out; measured on the kind of
  cluster (kind or local) and the minor the run makes where there are such. The latest, so that a probe
  made faster is planned as it is now; the longest of several, so that one run whose probes were skipped in
  a second does not plan the next. A probe with no known duration counts as the longest.
- Order and packing: longest first; each probe in that order goes to the worker with the least planned work
  (longest-processing-time-first, LPT).
- Worker count: the fewest whose packing ends within the longest probe plus SLACK_S, so that no long probe
  waits behind another; at most one worker per probe.
- Hand-out: pytest-xdist's `load` sends each worker a batch of consecutive tests first and `worksteal` splits
  the list into consecutive chunks, so both would start the longest probes on one worker. PlannedScheduling
  sends each worker its planned share at once, in the planned order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xdist.scheduler import LoadScheduling  # type: ignore[import-untyped]

from harness.base.versions import KubeVersion, VersionError
from harness.core.transport_recording import Recording, RecordingText

LATEST = 3  # a probe's duration: the longest of its 3 most recent measurements (known_durations says why)
SLACK_S = 5.0  # how much later than the longest probe the planned run may end
UNKNOWN_S = 60.0  # a probe's planned time when no probe has a known duration
# A probe's own namespace, made before its recording starts and deleted (waited for) after its record is
# written: an estimate, added to recorded durations (a planned run's measured_s includes it).
NAMESPACE_S = 5.0


def probe_of(item: str) -> str:
    """The probe an item runs: `probes/test_x.py::test_y[repeat2]` -> `test_x.py::test_y` (as records name it)."""
    path, _, function = item.partition("::")
    return f"{Path(path).name}::{function.split('[', 1)[0]}"


@dataclass(frozen=True)
class RecordedTimes:
    """What planning reads of a recording: its probe and origin, the server version it recorded, and when its calls
    began (the first start) and ended (the last start, end or watch close)."""

    probe: object
    origin: Mapping[str, Any]
    version: str | None
    first: float | None
    last: float | None

    @classmethod
    def of(cls, text: str) -> RecordedTimes:
        """Read off the text where Recording.write laid it out (harness/core/transport_recording.py RecordingText:
        parsing the 2,400 shipped recordings whole took 1.7 s of CPU at every make probe PARALLEL=auto, reading them
        so 0.6 s); a file laid out otherwise is parsed whole. Raises ValueError for one not JSON."""
        written = RecordingText.of(text)
        if written is None:  # not whole as written
            data = json.loads(text)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            return cls.parsed(data)
        starts = list(written.call_values("t_start"))
        ends = [*starts, *written.call_values("t_end"), *written.call_values("closed_at")]
        head = written.head
        try:
            version = written.server_git_version()
        except (KeyError, TypeError):  # an answer without its gitVersion: none, as _recorded_version says
            version = None
        return cls(
            head.get("probe"), head.get("origin") or {}, version, min(starts, default=None), max(ends, default=None)
        )

    @classmethod
    def parsed(cls, data: Mapping[str, Any]) -> RecordedTimes:
        """From a recording parsed whole."""
        starts, ends = [], []
        for interaction in data.get("interactions") or []:
            if isinstance(interaction.get("t_start"), int | float):
                starts.append(float(interaction["t_start"]))
            ends += [
                float(interaction[k])
                for k in ("t_start", "t_end", "closed_at")
                if isinstance(interaction.get(k), int | float)
            ]
        first, last = min(starts, default=None), max(ends, default=None)
        return cls(data.get("probe"), data.get("origin") or {}, _recorded_version(data), first, last)

    def duration(self) -> float | None:
        """A live recording's first call to its last answer, in seconds; None for one not recorded on a cluster."""
        if self.origin.get("kind") != "live" or self.first is None or self.last is None:
            return None
        return self.last - self.first


def known_durations(recordings: Iterable[Path], run_dir: Path, cluster: str = "", minor: str = "") -> dict[str, float]:
    """Seconds per probe id: the longest of its LATEST most recent measurements, from items measured whole by
    earlier planned runs, live recordings and live probe records (these two plus NAMESPACE_S).

    The latest, so that a probe that became faster is planned as it is now (live on v1.37.0: once closing a
    watch stopped waiting for its next event, the phase probes went from 28 s to 4-13 s, but plans from the
    longest ever kept 14 workers where 10 would do, and each worker costs ~0.7 s of CPU to start); the longest
    of several, so that one run whose probes were skipped in a second does not plan the next.

    With `cluster` (kind, local) and `minor` (1.37): for each probe, only the measurements closest to the run:
    on that kind of cluster and minor, else on that kind of cluster, else anywhere. A probe's time depends on
    both: the StatefulSet probe took 96 s on kind and 59 s on a local v1.37.0 (planned from kind's, a local run
    got 17 workers for a 100 s makespan), and on local clusters 89-91 s on 1.21-1.24 but 29 s on 1.37.0.
    """
    # probe -> {closeness (2 same cluster and minor, 1, 0): [(when, seconds)]}; `when` an ISO instant in UTC
    seen: dict[str, dict[int, list[tuple[str, float]]]] = {}

    def note(
        probe: object, seconds: float | None, measured_on: object, version: object, when: object, extra: float = 0.0
    ) -> None:
        if isinstance(probe, str) and seconds is not None and seconds > 0:
            same_cluster = bool(cluster) and isinstance(measured_on, str) and measured_on.split()[0:1] == [cluster]
            same_minor = bool(minor) and isinstance(version, str) and _minor_of(version) == minor
            closeness = 2 if same_cluster and same_minor else 1 if same_cluster else 0
            measured = seen.setdefault(probe, {}).setdefault(closeness, [])
            measured.append((when if isinstance(when, str) else "", round(seconds + extra, 1)))

    for times in _recorded_times(sorted(recordings)):
        origin = times.origin
        note(
            times.probe, times.duration(), origin.get("cluster"), times.version, origin.get("recorded_at"), NAMESPACE_S
        )
    for data in _json_files(sorted(run_dir.glob("*/probes/*.json"))):
        if data.get("transport") == "live" and isinstance(data.get("duration_s"), int | float):
            measured_on = (data.get("provenance") or {}).get("cluster")
            version = data.get("server_version")
            when = (data.get("recording_origin") or {}).get("recorded_at")
            note(data.get("probe"), float(data["duration_s"]), measured_on, version, when, NAMESPACE_S)
    for path in sorted(run_dir.glob("*/schedule.json")):
        for data in _json_files([path]):
            run = next(iter(_json_files([path.with_name("run.json")])), {})
            version = (run.get("server_version") or {}).get("gitVersion")
            for item, seconds in (data.get("measured_s") or {}).items():
                seconds_or_none = float(seconds) if isinstance(seconds, int | float) else None
                note(probe_of(item), seconds_or_none, run.get("cluster"), version, run.get("started"))
    return {probe: _longest_of_latest(kept[max(kept)]) for probe, kept in seen.items()}


def _longest_of_latest(measured: list[tuple[str, float]]) -> float:
    """The longest of the LATEST most recent (when, seconds); those without a time count as the oldest."""
    latest = sorted(measured, key=lambda pair: pair[0])[-LATEST:]
    return max(seconds for _, seconds in latest)


def _recorded_version(data: Mapping[str, Any]) -> str | None:
    """The server version a recording's server_version call answered (Recording.server_git_version)."""
    try:
        return Recording(data["probe"], data["origin"], data["interactions"]).server_git_version()
    except (KeyError, TypeError, ValueError):
        return None


def _minor_of(version: str) -> str:
    try:
        return KubeVersion.parse(version).minor
    except VersionError:
        return ""


def _recorded_times(paths: Iterable[Path]) -> Iterable[RecordedTimes]:
    """What planning reads of these recordings; unreadable ones (not JSON, not an object) are passed over."""
    for path in paths:
        try:
            times = RecordedTimes.of(path.read_text())
        except (OSError, ValueError):
            continue
        yield times


def _json_files(paths: Iterable[Path]) -> Iterable[dict[str, Any]]:
    """The JSON objects among these files; unreadable ones (a run being written, not JSON) are passed over."""
    for path in paths:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            yield data


def planned_seconds(items: Sequence[str], known: Mapping[str, float]) -> list[float]:
    """Each item's planned time: its probe's known duration, or the longest known one when it has none."""
    longest = max(known.values(), default=UNKNOWN_S)
    return [known.get(probe_of(item), longest) for item in items]


def longest_first(items: Sequence[str], known: Mapping[str, float]) -> list[str]:
    """The items longest first: those without a known duration, then the others by duration, ties as given."""
    return sorted(items, key=lambda item: (probe_of(item) in known, -known.get(probe_of(item), 0.0)))


def pack(seconds: Sequence[float], workers: int) -> list[list[int]]:
    """Longest-processing-time-first: each index of `seconds`, in the order given (longest first), goes to the
    worker with the least planned time so far (the lowest-numbered among equals). Returns each worker's indices."""
    shares: list[list[int]] = [[] for _ in range(workers)]
    loads = [0.0] * workers
    for index, duration in enumerate(seconds):
        least = min(range(workers), key=lambda worker: (loads[worker], worker))
        shares[least].append(index)
        loads[least] += duration
    return shares


@dataclass(frozen=True)
class Plan:
    """The workers chosen and each one's share of the items, in the order it runs them."""

    shares: tuple[tuple[str, ...], ...]
    seconds: Mapping[str, float]  # each item's planned time
    unknown: tuple[str, ...]  # items whose probe has no known duration (planned as the longest)
    slack_s: float
    one_fewer_s: float | None  # the planned makespan with one worker fewer (why not fewer); None with one
    chosen: bool  # the worker count was chosen by choose_workers (PARALLEL=auto), not given

    @property
    def workers(self) -> int:
        return len(self.shares)

    @property
    def longest_s(self) -> float:
        return max(self.seconds.values(), default=0.0)

    @property
    def makespan_s(self) -> float:
        return max((sum(self.seconds[item] for item in share) for share in self.shares), default=0.0)

    def why(self) -> str:
        """The choice in one sentence: the rule, the planned makespan, and what one worker fewer would take."""
        items = sum(len(share) for share in self.shares)
        if self.chosen and self.makespan_s > self.longest_s + self.slack_s:
            text = (
                f"{self.workers} workers for {items} probes: one per probe, the most; planned {self.makespan_s:.0f} s"
            )
        elif self.chosen:
            text = (
                f"{self.workers} workers for {items} probes: the fewest whose longest-first packing ends within the "
                f"longest probe ({self.longest_s:.0f} s) + {self.slack_s:.0f} s; planned {self.makespan_s:.0f} s"
            )
        else:
            text = f"{self.workers} workers for {items} probes as asked; longest-first: planned {self.makespan_s:.0f} s"
        if self.one_fewer_s is not None:
            text += f" ({self.workers - 1} would take {self.one_fewer_s:.0f} s)"
        if self.unknown:
            text += f"; {len(self.unknown)} without a known duration, counted as the longest"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "workers": self.workers,
            "why": self.why(),
            "planned_makespan_s": round(self.makespan_s, 1),
            "longest_planned_s": round(self.longest_s, 1),
            "slack_s": self.slack_s,
            "unknown": list(self.unknown),
            "shares": [[{"item": item, "planned_s": self.seconds[item]} for item in share] for share in self.shares],
        }


def plan_for(items: Sequence[str], known: Mapping[str, float], workers: int, slack_s: float = SLACK_S) -> Plan:
    """The longest-first packing of `items` on `workers` workers."""
    ordered = longest_first(items, known)
    seconds = planned_seconds(ordered, known)
    shares = pack(seconds, workers)
    return Plan(
        shares=tuple(tuple(ordered[i] for i in share) for share in shares),
        seconds=dict(zip(ordered, seconds, strict=True)),
        unknown=tuple(item for item in ordered if probe_of(item) not in known),
        slack_s=slack_s,
        one_fewer_s=None,
        chosen=False,
    )


def choose_workers(items: Sequence[str], known: Mapping[str, float], slack_s: float = SLACK_S) -> Plan:
    """The fewest workers whose longest-first packing ends within the longest item + slack, and at most one per
    probe: REPEAT=N runs N items of each probe, but never more probes at once than a run without it."""
    most = max(len({probe_of(item) for item in items}), 1)
    previous: Plan | None = None
    for workers in range(1, most + 1):
        plan = plan_for(items, known, workers, slack_s)
        if plan.makespan_s <= plan.longest_s + slack_s or workers == most:
            one_fewer = previous.makespan_s if previous is not None else None
            return Plan(plan.shares, plan.seconds, plan.unknown, slack_s, one_fewer, chosen=True)
        previous = plan
    raise AssertionError("unreachable: the loop returns at the last worker count")


def write_schedule(path: Path, known: Mapping[str, float], plan: Plan) -> None:
    """What `--schedule FILE` reads (`durations_s`), with the plan made from it, for the run's record."""
    path.write_text(json.dumps({"durations_s": dict(sorted(known.items())), "plan": plan.to_json()}, indent=1) + "\n")


def read_durations(path: Path) -> dict[str, float]:
    """The `durations_s` of a schedule file (probe id -> seconds); ValueError saying what is wrong with it."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"--schedule {path}: cannot read it as JSON: {err}") from err
    durations = data.get("durations_s") if isinstance(data, dict) else None
    if not isinstance(durations, dict) or not all(
        isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool) for k, v in durations.items()
    ):
        raise ValueError(f"--schedule {path}: no durations_s object of probe ids and seconds")
    return {probe: float(seconds) for probe, seconds in durations.items()}


class PlannedScheduling(LoadScheduling):  # type: ignore[misc]
    """pytest-xdist's `load`, except the first hand-out: each worker gets its whole share of the longest-first
    packing at once, in order, and is told to stop after it. A crashed worker's items go to its replacement,
    as with `load`. What each item took on its worker, whole, is added to the schedule file as it ends
    (`measured_s`), for the next plans."""

    collection: list[str] | None  # LoadScheduling's: every worker's collection, once all have collected

    def __init__(self, config: Any, log: Any, schedule_file: Path) -> None:
        super().__init__(config, log)
        self.schedule_file = schedule_file
        self.known = read_durations(schedule_file)
        self.measured: dict[str, float] = {}

    def schedule(self) -> None:
        if self.collection is not None:  # a replacement for a crashed worker: `load` gives it what is pending
            super().schedule()
            return
        if not self._check_nodes_have_same_collection():
            self.log("**Different tests collected, aborting run**")
            return
        collection: list[str] = list(next(iter(self.node2collection.values())))
        self.collection = collection
        plan = plan_for(collection, self.known, len(self.nodes))
        position = {item: index for index, item in enumerate(collection)}
        for node, share in zip(self.nodes, plan.shares, strict=True):
            indices = [position[item] for item in share]
            if indices:
                self.node2pending[node].extend(indices)
                node.send_runtest_some(indices)
            node.shutdown()
        self.pending[:] = []

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        assert self.collection is not None
        self.measured[self.collection[item_index]] = round(duration, 1)
        data = json.loads(self.schedule_file.read_text())
        self.schedule_file.write_text(json.dumps({**data, "measured_s": self.measured}, indent=1) + "\n")
        super().mark_test_complete(node, item_index, duration)
