"""The feature-gate ledger: each gate's default and stage at every catalogued release (harness/gate_ledger.json).

Read from each tag's own pkg/features/*.go by tools/gate_ledger.py. A release the proxy refused, or that was not
read, has no state here: nothing is guessed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from packaging.version import Version

from harness.axis.releases import published_releases, sort_key
from harness.base.versions import KubeVersion, release_name

LEDGER_FILE = Path(__file__).resolve().parents[1] / "gate_ledger.json"


@dataclass(frozen=True)
class GateState:
    """A gate at one release: on or off by default, its stage (alpha, beta, GA, deprecated), locked or not."""

    default: bool
    stage: str
    locked: bool = False

    def text(self) -> str:
        return f"{self.stage}:{'on' if self.default else 'off'}" + (":locked" if self.locked else "")

    @classmethod
    def parse(cls, text: str) -> GateState | None:
        """The state a ledger entry names; None for "absent"."""
        if text == "absent":
            return None
        stage, default, *rest = text.split(":")
        return cls(default == "on", stage, rest == ["locked"])


@cache
def _ledger() -> dict[str, object]:
    data: dict[str, object] = json.loads(LEDGER_FILE.read_text())
    return data


def release_status(version: str | KubeVersion) -> str:
    """ "read", "refused: ..." or "not read: ..." for a catalogued release; "not catalogued" otherwise."""
    release = _release(version)
    statuses = _ledger()["releases"]
    assert isinstance(statuses, dict)
    return str(statuses.get(release, "not catalogued"))


def known_gates() -> tuple[str, ...]:
    gates = _ledger()["gates"]
    assert isinstance(gates, dict)
    return tuple(gates)


class NotRead(LookupError):
    """The ledger has no state for that release (refused by the proxy, not read, or not a release)."""


def gate_state(gate: str, version: str | KubeVersion) -> GateState | None:
    """The gate's state at a release (None: the release has no such gate); NotRead when the release was not read,
    KeyError for a gate no release ever had."""
    status = release_status(version)
    if status != "read":
        raise NotRead(f"{_release(version)}: {status}")
    gates = _ledger()["gates"]
    assert isinstance(gates, dict)
    if gate not in gates:
        raise KeyError(gate)  # a gate no release ever had
    return _state_at(_read_changes(gate), sort_key(_release(version)))


def _state_at(changes: tuple[tuple[Version, GateState | None], ...], at: Version) -> GateState | None:
    """The state of the last of a gate's changes (_read_changes) at or before `at`, in the ledger's order."""
    state = None
    for release, read in changes:
        if release <= at:
            state = read
    return state


def _release(version: str | KubeVersion) -> str:
    parsed = version if isinstance(version, KubeVersion) else KubeVersion.parse(str(version))
    return release_name(parsed.version)


def refused_releases() -> dict[str, str]:
    """The catalogued releases the Go module proxy refused when the ledger was read: release -> 'YYYY-MM-DD: why'."""
    statuses = _ledger()["releases"]
    assert isinstance(statuses, dict)
    day = str(_ledger().get("read_on", ""))
    return {
        str(release): f"{day}: the Go module proxy refuses k8s.io/kubernetes@v{release} ({str(status)[9:]})"
        for release, status in statuses.items()
        if str(status).startswith("refused: ")
    }


def _changes(gate: str) -> list[tuple[str, str]]:
    gates = _ledger()["gates"]
    assert isinstance(gates, dict)
    if gate not in gates:
        raise KeyError(f"no release of the gate ledger has a feature gate {gate!r}")
    return [(str(release), str(text)) for release, text in gates[gate]]


@cache
def _read_changes(gate: str) -> tuple[tuple[Version, GateState | None], ...]:
    """The gate's changes in the ledger's order, each release and state read once a process: the ledger does not
    change within a run, and patch_default_changes asks every gate's state at every read release."""
    return tuple((sort_key(release), GateState.parse(text)) for release, text in _changes(gate))


def effective_default(gate: str, version: str | KubeVersion) -> bool:
    """Whether the gate is on by default at a release: its default; a gate not there yet is off, and a removed one
    keeps the default it last had (removed after GA: on, its code path the only one left; dropped while off: off).
    NotRead when the release has no state in the ledger."""
    state = gate_state(gate, version)
    if state is not None:
        return state.default
    return _absent_default(_read_changes(gate), sort_key(_release(version)))


def _absent_default(changes: tuple[tuple[Version, GateState | None], ...], at: Version) -> bool:
    """effective_default where the gate is absent at `at`: off before it came, else the default it last had."""
    present = [read for release, read in changes if read is not None and _upstream_of(release, at)]
    return bool(present) and present[-1].default


def _upstream_of(release: Version, at: Version) -> bool:
    """Whether what `release` holds can have come down to `at`: an earlier release of its own minor, or any earlier
    one but a patch of an older minor. A patch is a cherry-pick onto a release branch: a gate added in 1.28.8
    (SeparateCacheWatchRPC, on) is not in 1.29.0-1.29.2, which the ledger reads absent, not removed."""
    if release > at:
        return False
    same_minor = (release.major, release.minor) == (at.major, at.minor)
    return same_minor or release.is_prerelease or release.micro == 0


def behaviour_state(gate: str, version: str | KubeVersion) -> str:
    """What a binary of that release does with the gate, as a stretch tells it apart: "off" (off by default, or no
    gate yet), "on" (on by default, the off path still there), "on, locked" (GA and locked, or the gate removed
    after GA: the off path is gone)."""
    state = gate_state(gate, version)
    if state is None:
        return "on, locked" if effective_default(gate, version) else "off"
    if not state.default:
        return "off"
    return "on, locked" if state.locked else "on"


@dataclass(frozen=True)
class Stretch:
    """Consecutive catalogued releases (oldest first) over which the named gates keep one state each."""

    gates: tuple[str, ...]
    states: tuple[str, ...]  # each gate's behaviour_state ("off", "on", "on, locked")
    releases: tuple[str, ...]

    @property
    def label(self) -> str:
        span = self.releases[0] if len(self.releases) == 1 else f"{self.releases[0]} to {self.releases[-1]}"
        return f"{span} ({', '.join(f'{g} {s}' for g, s in zip(self.gates, self.states, strict=True))})"

    def holds(self, version: KubeVersion) -> bool:
        """From its first read release to its last: a release between them that the ledger did not read is in it
        (the same state on both sides); one between two stretches is in neither."""
        return sort_key(self.releases[0]) <= version.version <= sort_key(self.releases[-1])


def releases_in(specifier: str) -> list[str]:
    """The catalogued releases a range (one part, or several joined by "||") holds, oldest first."""
    return [r for r in published_releases() if KubeVersion.parse(r).satisfies(specifier)]


def stretches(gates: tuple[str, ...], specifier: str) -> tuple[list[Stretch], list[str]]:
    """The range's catalogued releases cut where a named gate's state changes, and the releases the ledger has no
    state for (refused, not read), which belong to no stretch."""
    cut, unread = _stretches(tuple(gates), specifier)
    return list(cut), list(unread)


@cache
def _stretches(gates: tuple[str, ...], specifier: str) -> tuple[tuple[Stretch, ...], tuple[str, ...]]:
    """stretches, worked out once a process for each gates and range: the ledger does not change within a run, and
    every coverage count and report asks it again for the same few dozen rows (1,988 times for a test module)."""
    out: list[Stretch] = []
    unread: list[str] = []
    for release in releases_in(specifier):
        if release_status(release) != "read":
            unread.append(release)
            continue
        states = tuple(behaviour_state(g, release) for g in gates)
        if out and out[-1].states == states:
            out[-1] = Stretch(gates, states, (*out[-1].releases, release))
        else:
            out.append(Stretch(gates, states, (release,)))
    return tuple(out), tuple(unread)


def default_changes(gate: str, specifier: str) -> list[str]:
    """Where the gate's effective default changes between consecutive read releases of the range, in words
    ("off at 1.28.15, on at 1.29.0-alpha.3"); empty when it holds."""
    said = []
    previous: tuple[str, bool] | None = None
    for release in releases_in(specifier):
        if release_status(release) != "read":
            continue
        on = effective_default(gate, release)
        if previous is not None and previous[1] != on:
            said.append(f"{'on' if previous[1] else 'off'} at {previous[0]}, {'on' if on else 'off'} at {release}")
        previous = (release, on)
    return said


@dataclass(frozen=True)
class PatchChange:
    """A gate whose default a patch release (x.y.z, z >= 1) changed: `before` is the last read release of the same
    minor line before `at` (releases between them were refused by the proxy, so the change lies in (before, at])."""

    gate: str
    before: str
    at: str
    default: bool  # the default from `at` on

    @property
    def label(self) -> str:
        now, was = ("on", "off") if self.default else ("off", "on")
        return f"{self.gate} {now} at {self.at} (was {was} at {self.before})"


def patch_default_changes() -> list[PatchChange]:
    """Every change of a gate's effective default inside a patch line, as the ledger's read releases show it."""
    read = [(r, sort_key(r)) for r in published_releases() if release_status(r) == "read"]
    out: list[PatchChange] = []
    for gate in known_gates():
        changes = _read_changes(gate)
        last_of_minor: dict[tuple[int, int], tuple[str, bool]] = {}
        for release, version in read:  # every gate at every read release: effective_default, its checks done once
            minor = (version.major, version.minor)
            state = _state_at(changes, version)
            on = state.default if state is not None else _absent_default(changes, version)
            previous = last_of_minor.get(minor)
            if previous is not None and previous[1] != on and not version.is_prerelease and version.micro >= 1:
                out.append(PatchChange(gate, previous[0], release, on))
            last_of_minor[minor] = (release, on)
    return out
