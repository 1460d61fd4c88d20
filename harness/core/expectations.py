"""Expectations as version-ranged data (probes/<family>/expectations.yaml) and the evaluator that judges observations.

Each claim has an id, the observable it is about, the document it comes from, and a list of
expectations, each for a range of versions, with the sources (Kubernetes PRs, CHANGELOG entries,
source files) that justify it. The version is the one the API server reports, never the one asked for.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from packaging.version import Version

from harness.base import families
from harness.base.versions import KubeVersion, version_range
from harness.core.basis import Doubt

PASS, FAIL, NOT_OBSERVABLE, UNDECIDED = "pass", "fail", "not observable", "undecided"


class ExpectationError(ValueError):
    """The expectation data is wrong or does not cover a version."""


@dataclass(frozen=True)
class Expectation:
    """What a claim observes on a range of versions: a value, a measurement between two bounds, or one of
    several of those (`one_of`: releases where a race of their own decides which; the note says which race)."""

    versions: str
    value: Any = None
    between: tuple[float, float] | None = None
    sources: tuple[str, ...] = ()
    note: str | None = None
    one_of: tuple[Expectation, ...] = ()
    # the feature gates whose defaults this row's value rests on: tests/test_gate_rows.py fails when one's default
    # changes inside the range (the gate ledger, harness/gate_ledger.json), and make coverage wants a live run in
    # each stretch of the range where their states (stage and default) hold
    gates: tuple[str, ...] = ()
    # the row says the claim cannot be observed on its range (`not_observable: true`, with `value: null`): the feature
    # is absent or refused there, so the probe says "not observable" and a live run has nothing to hold (make
    # coverage counts such a range apart). A null value alone may be an observation (a field not set).
    not_observable: bool = False

    def matches(self, observed: Any) -> bool:
        if self.not_observable:
            return False  # an observation where the row says none can be made contradicts it
        if self.one_of:
            return any(alternative.matches(observed) for alternative in self.one_of)
        if self.between is not None:
            low, high = self.between
            return isinstance(observed, int | float) and not isinstance(observed, bool) and low <= observed <= high
        return bool(observed == self.value)

    def describe(self) -> str:
        if self.not_observable:
            return "not observable"
        if self.one_of:
            return "one of " + " / ".join(alternative.describe() for alternative in self.one_of)
        if self.between is not None:
            return f"between {self.between[0]} and {self.between[1]}"
        return repr(self.value)


@dataclass(frozen=True)
class Claim:
    id: str
    claim: str
    observable: str
    document: str
    expectations: tuple[Expectation, ...]

    def expectation_for(self, version: KubeVersion) -> Expectation:
        """The one expectation whose range holds the version, found once a release (kept in the claim's __dict__, as
        functools.cached_property keeps a value): a report and the replays judge a claim on the same few dozen
        releases thousands of times."""
        found: dict[Version, Expectation] = self.__dict__.setdefault("_expectation_for", {})
        if (known := found.get(version.version)) is not None:
            return known
        matching = [e for e in self.expectations if version.satisfies(e.versions)]
        if len(matching) != 1:
            ranges = ", ".join(e.versions for e in self.expectations)
            problem = "no expectation" if not matching else "more than one expectation"
            raise ExpectationError(f"claim {self.id}: {problem} for Kubernetes {version} (ranges: {ranges})")
        found[version.version] = matching[0]
        return matching[0]

    def expectation_or_none(self, version: KubeVersion) -> Expectation | None:
        """expectation_for, or None where no range or more than one holds the version (a report's cell, make
        upgrade's side, the radar's reading of a pre-release)."""
        try:
            return self.expectation_for(version)
        except ExpectationError:
            return None


@dataclass
class Verdict:
    claim: Claim
    version: str
    status: str
    observed: Any
    expected: Expectation | None
    message: str
    detail: dict[str, Any] = field(default_factory=dict)
    rests_on: Any = field(default=None, repr=False, compare=False)  # the Basis it was judged on (harness/core/basis.py)

    def to_json(self) -> dict[str, Any]:
        return {
            "claim": self.claim.id,
            "statement": self.claim.claim,
            "observable": self.claim.observable,
            "document": self.claim.document,
            "server_version": self.version,
            "status": self.status,
            "observed": self.observed,
            "expected": None
            if self.expected is None
            else {
                "versions": self.expected.versions,
                "value": self.expected.value,
                "between": self.expected.between,
                "sources": list(self.expected.sources),
                "note": self.expected.note,
                **({"one_of": [outcome_json(a) for a in self.expected.one_of]} if self.expected.one_of else {}),
            },
            "message": self.message,
            **({"detail": self.detail} if self.detail else {}),
        }


def outcome_json(expectation: Expectation) -> dict[str, Any]:
    """One allowed outcome as run records and the report hold it."""
    return {"value": expectation.value, "between": expectation.between}


def evaluate(
    claim: Claim, version: KubeVersion, observed: Any, doubt: Doubt | None = None, evidence: str | None = None
) -> Verdict:
    """Judge one observation; a mismatch says which other version range it looks like, if any.

    `doubt`: the watch gaps that could hide a state the observation rests on, as the harness chose them
    (harness/core/basis.py: a probe says what it rests on, never which gaps). With none, the observation is what
    happened: pass or fail. With some, it is undecided, never a pass, unless no state hidden where they lie
    could change the verdict: a sequence whose mismatch no hidden states could turn into the expected one fails
    (a gap hides states, it does not add or reorder them), one that no hidden state could spoil passes.
    `evidence`: what the observation rests on (e.g. the offending status update), kept and shown on a mismatch.
    """
    verdict = _evaluate(claim, version, observed, doubt or Doubt())
    if evidence:
        verdict.detail["evidence"] = evidence
        if verdict.status != PASS:
            verdict.message += f"\n  evidence: {evidence}"
    return verdict


def could_become(expected: Expectation, doubt: Doubt, observed: Any) -> bool:
    """Whether states the doubt's gaps hid could make the observation the expected one (any of `one_of`)."""
    if expected.one_of:
        return any(could_become(alternative, doubt, observed) for alternative in expected.one_of)
    return doubt.could_become(expected.value if expected.between is None else None, observed)


def _evaluate(claim: Claim, version: KubeVersion, observed: Any, doubt: Doubt) -> Verdict:
    expected = claim.expectation_for(version)
    gaps = list(doubt.gaps)
    detail = doubt.record()
    if expected.matches(observed):
        if doubt.could_differ():
            return Verdict(
                claim,
                str(version),
                UNDECIDED,
                observed,
                expected,
                f"{claim.id}: undecided: {claim.observable} was {observed!r} as expected, but a watch gap could hide "
                f"a state that decides it ({'; '.join(gaps)})",
                detail,
            )
        return Verdict(
            claim, str(version), PASS, observed, expected, f"{claim.observable}: {observed!r} as expected", detail
        )
    if could_become(expected, doubt, observed):
        return Verdict(
            claim,
            str(version),
            UNDECIDED,
            observed,
            expected,
            f"{claim.id}: undecided: a watch gap covered the transition ({'; '.join(gaps)}); "
            f"{claim.observable} was {observed!r}, expected {expected.describe()}",
            detail,
        )
    message = (
        f"{claim.id}: {claim.observable} was {observed!r}, expected {expected.describe()} "
        f"on Kubernetes {version} (range {expected.versions}; {'; '.join(expected.sources)})"
    )
    lookalikes = [e for e in claim.expectations if e is not expected and e.matches(observed)]
    if lookalikes:
        message += f"\n  the {version} cluster behaved like {' / '.join(e.versions for e in lookalikes)}"
    if gaps:
        message += (
            f"\n  the watch gap ({'; '.join(gaps)}) cannot explain this: a gap hides states where it lies, "
            "it does not add or reorder them"
        )
    return Verdict(claim, str(version), FAIL, observed, expected, message, detail)


def not_observable(claim: Claim, version: KubeVersion, why: str) -> Verdict:
    expected = claim.expectation_for(version)
    return Verdict(claim, str(version), NOT_OBSERVABLE, None, expected, f"{claim.id}: not observable: {why}")


@cache
def load_claims(family: str, root: Path | None = None) -> dict[str, Claim]:
    """The claims of probes/<family>/expectations.yaml, by id."""
    path = families.family(family, root).expectations
    data = families.load_yaml(path)
    claims: dict[str, Claim] = {}
    for claim_id, body in data["claims"].items():
        expectations = []
        for entry in body["expect"]:
            version_range(entry["versions"])  # fail at load on a malformed range
            where = f"{path}: {claim_id}: expectation for {entry['versions']}"
            if not entry.get("sources"):
                raise ExpectationError(f"{where} cites no source")
            alternatives = entry.get("one_of") or []
            if "one_of" in entry and (len(alternatives) < 2 or not entry.get("note")):
                raise ExpectationError(f"{where}: one_of needs two outcomes or more and a note saying what decides")
            outcome = _outcome(entry, where, allowed=("value", "between", "one_of"))
            gates = entry.get("gates") or []
            if not isinstance(gates, list) or not all(isinstance(g, str) and g.isidentifier() for g in gates):
                raise ExpectationError(f"{where}: gates is a list of feature gate names, not {gates!r}")
            unobservable = entry.get("not_observable", False)
            if not isinstance(unobservable, bool):
                raise ExpectationError(f"{where}: not_observable is true or false, not {unobservable!r}")
            if unobservable and (entry.get("value", 0) is not None or alternatives):
                raise ExpectationError(f"{where}: a row saying not_observable has value: null and nothing else")
            expectations.append(
                replace(
                    outcome,
                    versions=entry["versions"],
                    sources=tuple(entry["sources"]),
                    note=entry.get("note"),
                    one_of=tuple(_outcome(a, where, allowed=("value", "between")) for a in alternatives),
                    gates=tuple(gates),
                    not_observable=unobservable,
                )
            )
        claims[claim_id] = Claim(
            id=claim_id,
            claim=" ".join(body["claim"].split()),
            observable=body["observable"],
            document=body.get("document", data["document"]),
            expectations=tuple(expectations),
        )
    return claims


def _outcome(entry: dict[str, Any], where: str, allowed: tuple[str, ...]) -> Expectation:
    """The value or bounds of one expectation entry (or of one outcome of its one_of), checked."""
    if not isinstance(entry, dict):
        raise ExpectationError(f"{where}: each outcome is a mapping with {' / '.join(allowed)}, not {entry!r}")
    given = [key for key in allowed if key in entry]
    if len(given) != 1:
        raise ExpectationError(f"{where}: needs exactly one of {' / '.join(allowed)}, has {given or 'none'}")
    between = entry.get("between")
    if between is not None and (not isinstance(between, list) or len(between) != 2):
        raise ExpectationError(f"{where}: between needs [low, high], has {between!r}")
    return Expectation(
        versions="",
        value=entry.get("value"),
        between=(float(between[0]), float(between[1])) if between is not None else None,
    )


def all_claim_ids() -> set[str]:
    """Every claim id of every family, for refusing a CLAIM that names none."""
    return {claim_id for family in families.families() for claim_id in load_claims(family.name)}


# A Kubernetes PR as the sources cite it (k/k#115331 or #115331); "no k/k#N", "before k/k#N" and "without k/k#N"
# say what a release lacks, not what changed it.
PR_REFERENCE = re.compile(r"(?:k/k)?#(\d{5,6})\b")
NOT_A_CITATION = re.compile(r"\b(?:no|before(?: the)?|without)\s+$", re.IGNORECASE)


def pull_requests(sources: Iterable[str]) -> list[str]:
    """Kubernetes PR numbers the sources cite, release-notes sources first ("no k/k#N", "before k/k#N" and
    "without k/k#N" say what a release lacks: not a citation of what changed it)."""
    found: list[str] = []
    for source in sorted(sources, key=lambda s: "CHANGELOG" not in s):
        for match in PR_REFERENCE.finditer(source):
            if NOT_A_CITATION.search(source[: match.start()]):
                continue
            if match.group(1) not in found:
                found.append(match.group(1))
    return found
