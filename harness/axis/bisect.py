"""make bisect: the first release on which a probe fails, or on which a claim observes what BAD observed.

Two questions. With kind (pinned images): the first patch release on which a probe fails. With CLUSTER=local
and CLAIM=<id>: with correct expectations every release passes, so the useful question is "the first release
on which claim X observed what BAD observed"; each release between GOOD and BAD is built here once, and the
answer, with every tried release's observation and what ran, is written to bisections/<name>.json, committed
as evidence like a recording.

The probe decides, version by version, the way `git bisect run` uses a script: it passes (good) or fails
(bad). A version whose run could not decide — the cluster did not come up, Docker or kind missing — is
skipped, like `git bisect skip`. Candidates are the patch releases between GOOD and BAD of one minor: those
with a pinned kind node image, and with `--build` also the others, built once by `make node-image`.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


def bisect(
    versions: list[str],
    run: Callable[[str], str],
    say: Callable[[str], None] = print,
    ahead: Callable[[Sequence[str]], None] = lambda releases: None,
) -> Bisection:
    """Binary search for the first bad version; the first is taken as good and the last as bad, and checked.

    Before each run, `ahead` is told the version about to run and those the search may try right after it (a build
    ahead: harness/axis/build_ahead.py), so that they are made runnable while this one runs."""
    state = Bisection(list(versions))
    first = first_candidates(versions)
    for index, (end, expected) in enumerate(((versions[0], GOOD), (versions[-1], BAD))):
        ahead(first[index:])
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
        ahead([versions[probe], *next_candidates(state, versions, low, high, probe)])
        outcome = run(versions[probe])
        state.results[versions[probe]] = outcome
        say(f"{versions[probe]}: {outcome}")
        if outcome == GOOD:
            low = probe
        elif outcome == BAD:
            high = probe
    state.last_good, state.first_bad = versions[low], versions[high]
    return state


def _nearest_untried(
    state: Bisection, versions: list[str], low: int, high: int, middle: int, also_tried: int | None = None
) -> int | None:
    inside = [i for i in range(low + 1, high) if versions[i] not in state.results and i != also_tried]
    return min(inside, key=lambda i: abs(i - middle)) if inside else None


def first_candidates(versions: Sequence[str]) -> list[str]:
    """What a bisection tries first, in order: GOOD, BAD, then the middle between them."""
    middle = [versions[(len(versions) - 1) // 2]] if len(versions) > 2 else []
    return list(dict.fromkeys([versions[0], versions[-1], *middle]))


def next_candidates(state: Bisection, versions: list[str], low: int, high: int, probe: int) -> list[str]:
    """The versions the search tries right after `probe`: the one it takes if `probe` is good and the one if it is
    bad, the side with more candidates left first (more of the search may lie there), then the one it takes if
    `probe` is a skip (it could not be built or decided: the nearest untried to the same middle)."""
    sides = sorted(((probe, high), (low, probe)), key=lambda side: side[0] - side[1])
    found = [_nearest_untried(state, versions, lo, hi, (lo + hi) // 2, also_tried=probe) for lo, hi in sides]
    found.append(_nearest_untried(state, versions, low, high, (low + high) // 2, also_tried=probe))
    return list(dict.fromkeys(versions[i] for i in found if i is not None))


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


# ----- Bisection on what a claim observed, over releases built here (make bisect CLUSTER=local CLAIM=...).


@dataclass
class ClaimObservation:
    """What one tried release showed for the claim, and what ran (with several runs: all of them together)."""

    version: str
    outcome: str  # good / bad / skip
    observed: list[Any] = field(default_factory=list)  # every value the claim's checks recorded in the run(s)
    verdicts: list[str] = field(default_factory=list)
    why: str = ""
    run_dir: str = ""
    build: dict[str, Any] = field(default_factory=dict)
    cluster: dict[str, Any] = field(default_factory=dict)
    runs: list[ClaimObservation] = field(default_factory=list)  # with runs > 1: each run on its own, in order
    probe_s: float | None = None  # the wall time of its probe run(s), build excluded

    def add(self, run: ClaimObservation) -> None:
        """Take one more run of this release in: its values, its verdicts, what it ran on."""
        self.runs.append(run)
        self.observed += run.observed
        self.verdicts += run.verdicts
        self.run_dir = self.run_dir or run.run_dir
        self.build = self.build or run.build
        self.cluster = run.cluster or self.cluster
        if run.probe_s is not None:
            self.probe_s = round((self.probe_s or 0.0) + run.probe_s, 1)


def claim_observations(run_dir: Path, claim: str) -> tuple[list[Any], list[str]]:
    """Every observed value and verdict of `claim` in the probe records under one run directory."""
    observed: list[Any] = []
    verdicts: list[str] = []
    for record in sorted(run_dir.glob("**/probes/*.json")):
        for verdict in json.loads(record.read_text()).get("verdicts") or []:
            if verdict.get("claim") == claim:
                observed.append(verdict.get("observed"))
                verdicts.append(str(verdict.get("status")))
    return observed, verdicts


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _same(values: list[Any]) -> Any:
    """The value a run observed: the one all observations agree on, or for intervals (numbers) their median.

    Raises ValueError when nothing was observed or the observations are not one value.
    """
    if values and all(_is_number(v) for v in values):
        return statistics.median(values)
    texts = {json.dumps(v, sort_keys=True) for v in values}
    if len(texts) != 1:
        raise ValueError(f"observed {len(texts)} different values" if texts else "the claim was not observed")
    return values[0]


# An interval is "like BAD" (or GOOD) when it lies within this share of the distance between the two.
NEAR_SHARE = 0.4


def classify(value: Any, good: Any, bad: Any) -> str | None:
    """GOOD or BAD when the value is GOOD's or BAD's; for intervals, when it lies near one of them; else None."""
    text = json.dumps(value, sort_keys=True)
    if text == json.dumps(bad, sort_keys=True):
        return BAD
    if text == json.dumps(good, sort_keys=True):
        return GOOD
    if _is_number(value) and _is_number(good) and _is_number(bad):
        span = abs(float(good) - float(bad))
        if abs(value - bad) <= NEAR_SHARE * span:
            return BAD
        if abs(value - good) <= NEAR_SHARE * span:
            return GOOD
    return None


class ClaimOracle:
    """Classifies releases by what the claim observed: BAD's value is bad, GOOD's is good, anything else a skip.

    `observe(version, attempt)` runs the claim's probe once on that release (attempt 1, 2, ...) and returns
    its ClaimObservation with outcome unset. BAD runs first (its value is what the bisection looks for),
    then GOOD.

    With `runs` = N > 1, for a claim whose old behaviour a race sometimes hides (the StatefulSet status
    before k/k#117865 shows its old value only while the controller's pod cache keeps up): BAD must observe
    one value in all N runs; GOOD runs until one run observes another value (at most N); a release between
    is good as soon as one run observes GOOD's value (BAD never showed it) and bad only when all N runs
    observe BAD's. So a release is called changed only after N runs that all agree with BAD.
    """

    def __init__(
        self,
        claim: str,
        observe: Callable[[str, int], ClaimObservation],
        say: Callable[[str], None],
        runs: int = 1,
    ) -> None:
        if runs < 1:
            raise ValueError(f"runs must be at least 1, not {runs}")
        self.claim, self._observe, self._say, self.runs = claim, observe, say, runs
        self.tried: dict[str, ClaimObservation] = {}
        self.good_value: Any = None
        self.bad_value: Any = None

    def _attempt(self, version: str) -> tuple[Any, str]:
        """One more run of `version`, kept with its others: the value it observed, or why it has none."""
        seen = self.tried.setdefault(version, ClaimObservation(version, ""))
        run = self._observe(version, len(seen.runs) + 1)
        seen.add(run)
        try:
            return _same(run.observed), ""
        except ValueError as err:
            context = run.why or (f"see {run.run_dir}" if run.run_dir else "")
            run.why = run.why or str(err)
            return None, f"{err} for {self.claim}" + (f" ({context})" if context else "")

    def learn_ends(self, good: str, bad: str) -> None:
        bad_values = []
        for _ in range(self.runs):
            value, problem = self._attempt(bad)
            if problem:
                raise BisectError(f"{bad}: {problem}")
            bad_values.append(value)
        texts = {json.dumps(v, sort_keys=True) for v in bad_values}
        if all(_is_number(v) for v in bad_values):
            self.bad_value = statistics.median(bad_values)
        elif len(texts) == 1:
            self.bad_value = bad_values[0]
        else:
            raise BisectError(
                f"{bad} observed {', '.join(sorted(texts))} in {self.runs} runs for {self.claim}: "
                "BAD must observe one value in every run to be bisected on"
            )
        for _ in range(self.runs):
            value, problem = self._attempt(good)
            if problem:
                raise BisectError(f"{good}: {problem}")
            if classify(value, value, self.bad_value) == GOOD:
                self.good_value = value
                break
        else:
            runs = f" in {self.runs} runs each" if self.runs > 1 else ""
            raise BisectError(
                f"{good} and {bad} both observed {self.bad_value!r} for {self.claim}{runs}: nothing to bisect"
            )
        self.tried[bad].outcome, self.tried[good].outcome = BAD, GOOD

    def __call__(self, version: str) -> str:
        if version not in self.tried or not self.tried[version].outcome:
            self._decide(version)
        seen = self.tried[version]
        self._say(f"{version}: {seen.outcome} (observed {seen.observed!r}; verdicts {', '.join(seen.verdicts) or '-'})")
        return seen.outcome

    def _decide(self, version: str) -> None:
        """Run `version` until one run observes GOOD's value, or `runs` times; then say what it is."""
        outcomes = []
        for _ in range(self.runs):
            value, problem = self._attempt(version)
            outcome = None if problem else classify(value, self.good_value, self.bad_value)
            if outcome is None and not problem:
                self.tried[version].runs[-1].why = f"observed {value!r}: neither GOOD's nor BAD's value"
            outcomes.append(outcome or SKIP)
            if outcome == GOOD:
                break
        seen = self.tried[version]
        if GOOD in outcomes:
            seen.outcome = GOOD
        elif outcomes == [BAD] * self.runs:
            seen.outcome = BAD
        else:
            seen.outcome = SKIP
            seen.why = next(run.why for run in seen.runs if run.why)


def bisection_record(
    name: str, claim: str, probe: str, good: str, bad: str, oracle: ClaimOracle, found: Bisection, ran: dict[str, Any]
) -> dict[str, Any]:
    """What bisections/<name>.json holds: the question, every tried release with what it showed, the answer."""
    order = {v: i for i, v in enumerate(found.candidates)}
    tried = sorted(oracle.tried.values(), key=lambda t: order.get(t.version, len(order)))
    return {
        "format": 1,
        "name": name,
        "claim": claim,
        "probe": probe,
        **({"runs_per_release": oracle.runs} if oracle.runs > 1 else {}),
        "good": {"version": good, "observed": oracle.good_value},
        "bad": {"version": bad, "observed": oracle.bad_value},
        "candidates": found.candidates,
        "tried": [
            {
                "version": t.version,
                "outcome": t.outcome,
                "observed": t.observed,
                "verdicts": t.verdicts,
                **({"why": t.why} if t.why else {}),
                "build": t.build,
                "cluster": t.cluster,
                "run_dir": t.run_dir,
                **({"probe_s": t.probe_s} if t.probe_s is not None else {}),
                **({"runs": [_run_entry(run) for run in t.runs]} if len(t.runs) > 1 else {}),
            }
            for t in tried
        ],
        "last_good": found.last_good,
        "first_bad": found.first_bad,
        "conclusion": found.conclusion,
        "substitutions": {
            t.version: t.build.get("staging_substitutions") for t in tried if t.build.get("staging_substitutions")
        },
        "ran": ran,
    }


def _run_entry(run: ClaimObservation) -> dict[str, Any]:
    """One run of a release tried several times, as the record lists it."""
    return {
        "observed": run.observed,
        "verdicts": run.verdicts,
        **({"why": run.why} if run.why else {}),
        "run_dir": run.run_dir,
        "cluster": run.cluster,
    }
