"""make bisect PROBE=... GOOD=1.27.3 BAD=1.27.9: the first patch release on which a probe fails.

The probe decides, version by version, the way `git bisect run` uses a script: it passes (good) or fails
(bad). A version whose run could not decide — the cluster did not come up, Docker or kind missing — is
skipped, like `git bisect skip`. Candidates are the patch releases between GOOD and BAD of one minor: those
with a pinned kind node image, and with `--build` also the others, built once by `make node-image`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.versions import KubeVersion, VersionError, known_images

GOOD, BAD, SKIP = "good", "bad", "skip"


@dataclass
class Bisection:
    """The candidates in order, what each tried one gave, and the last good / first bad found."""

    candidates: list[str]
    results: dict[str, str] = field(default_factory=dict)
    last_good: str | None = None
    first_bad: str | None = None

    @property
    def conclusion(self) -> str:
        if self.last_good is None or self.first_bad is None:
            return "no conclusion"
        between = self.candidates[self.candidates.index(self.last_good) + 1 : self.candidates.index(self.first_bad)]
        if between:  # all skipped
            return f"the change is in {', '.join(between)} or {self.first_bad} (skipped ones could not decide)"
        return f"first bad: {self.first_bad} (last good: {self.last_good})"

    def to_json(self) -> dict[str, object]:
        return {
            "candidates": self.candidates,
            "results": self.results,
            "last_good": self.last_good,
            "first_bad": self.first_bad,
            "conclusion": self.conclusion,
        }


def candidates(good: str, bad: str, build: bool) -> list[str]:
    """Patch releases from GOOD to BAD (both included), one minor: pinned ones, or every patch with `build`."""
    low, high = KubeVersion.parse(good), KubeVersion.parse(bad)
    if low.minor != high.minor:
        raise VersionError(f"bisect runs over the patch releases of one minor; {good} and {bad} are not one minor")
    if not low.version < high.version:
        raise VersionError(f"GOOD ({good}) must be an earlier release than BAD ({bad})")
    if build:
        return [f"{low.minor}.{patch}" for patch in range(low.version.micro, high.version.micro + 1)]
    pinned = sorted(
        {i.kubernetes.version for i in known_images() if low.version <= i.kubernetes.version <= high.version}
    )
    found = [str(v) for v in pinned]
    for end in (str(low.version), str(high.version)):
        if end not in found:
            raise VersionError(f"no pinned node image for {end}: give pinned patch releases, or --build")
    return found


def bisect(versions: list[str], run: Callable[[str], str], say: Callable[[str], None] = print) -> Bisection:
    """Binary search for the first bad version; the first is taken as good and the last as bad, and checked."""
    state = Bisection(list(versions))
    for end, expected in ((versions[0], GOOD), (versions[-1], BAD)):
        state.results[end] = run(end)
        say(f"{end}: {state.results[end]}")
        if state.results[end] != expected:
            raise BisectError(f"{end} was {state.results[end]}, not {expected}: nothing to bisect between them")
    low, high = 0, len(versions) - 1  # versions[low] is good, versions[high] is bad
    while high - low > 1:
        middle = (low + high) // 2
        probe = _nearest_untried(state, versions, low, high, middle)
        if probe is None:
            break  # everything between is skipped: the change lies somewhere in that stretch
        outcome = run(versions[probe])
        state.results[versions[probe]] = outcome
        say(f"{versions[probe]}: {outcome}")
        if outcome == GOOD:
            low = probe
        elif outcome == BAD:
            high = probe
    state.last_good, state.first_bad = versions[low], versions[high]
    return state


def _nearest_untried(state: Bisection, versions: list[str], low: int, high: int, middle: int) -> int | None:
    inside = [i for i in range(low + 1, high) if versions[i] not in state.results]
    return min(inside, key=lambda i: abs(i - middle)) if inside else None


class BisectError(RuntimeError):
    """The ends do not behave as GOOD and BAD, or the candidates cannot be listed."""


def outcome_of_run(exit_code: int, run_json: Path) -> str:
    """good / bad / skip from `make probe`'s exit code and its run record.

    A cluster that failed is a skip, and so is a run whose only failures are undecided claims (a watch gap
    hid what would decide them): neither says whether the version is good or bad.
    """
    if exit_code == 0:
        return GOOD
    record = json.loads(run_json.read_text()) if run_json.is_file() else {}
    if exit_code == 1 and "cluster_error" not in record and record.get("status") != "undecided":
        return BAD
    return SKIP
