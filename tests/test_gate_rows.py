"""Rows tied to the feature gates that decide them: each gate a row of probes/*/expectations.yaml names keeps one
default over every release of its range that the gate ledger read (harness/gate_ledger.json, from each tag's
pkg/features); a change inside a range means the row is split wrongly or rests on the wrong gate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.axis.gates import (
    default_changes,
    effective_default,
    known_gates,
    patch_default_changes,
    release_status,
    stretches,
)
from harness.base import families
from harness.base.versions import range_parts
from harness.core.expectations import load_claims

GATED = [
    (family.name, claim.id, expectation.versions, expectation.gates)
    for family in families.families()
    for claim in load_claims(family.name).values()
    for expectation in claim.expectations
    if expectation.gates
]


def test_rows_name_the_gates_they_rest_on() -> None:
    assert len(GATED) >= 10, "the rows that rest on a gate name it"


@pytest.mark.parametrize(("family", "claim", "versions", "gates"), GATED, ids=[f"{g[1]} {g[2]}" for g in GATED])
def test_a_named_gate_keeps_one_default_inside_its_row(
    family: str, claim: str, versions: str, gates: tuple[str, ...]
) -> None:
    unknown = [gate for gate in gates if gate not in known_gates()]
    assert not unknown, f"{family} {claim} {versions}: no release of the ledger has {unknown}"
    for part in range_parts(versions):
        for gate in gates:
            changes = default_changes(gate, part)
            assert not changes, f"{family} {claim}: {gate}'s default changes inside {part}: {'; '.join(changes)}"


def test_a_change_inside_a_range_is_found_and_said() -> None:
    """JobPodReplacementPolicy went from alpha (off) to beta (on) in the 1.29 pre-releases (pkg/features at
    v1.29.0-alpha.1 and alpha.3): a row over 1.28 and 1.29 naming it cannot hold."""
    assert effective_default("JobPodReplacementPolicy", "1.28.15") is False
    assert effective_default("JobPodReplacementPolicy", "1.29.0") is True
    (said,) = default_changes("JobPodReplacementPolicy", ">=1.28.0,<1.30.0")
    assert said.startswith("off at ") and ", on at 1.29.0-alpha." in said
    assert default_changes("JobPodReplacementPolicy", ">=1.29.0-alpha.3,<1.30.0") == []


def test_a_gate_removed_after_ga_counts_as_on_and_cuts_a_stretch() -> None:
    """JobPodFailurePolicy went GA, locked on, in 1.31 and its gate was removed later: the default holds (on) but
    the state changes, so make coverage wants a live run in each stretch."""
    assert effective_default("JobPodFailurePolicy", "1.24.17") is False  # not there yet
    assert effective_default("JobPodFailurePolicy", "1.37.2") is True  # removed after GA
    assert default_changes("JobPodFailurePolicy", ">=1.26.0") == []
    cut, _ = stretches(("JobPodFailurePolicy",), ">=1.26.0")
    assert [s.states[0] for s in cut] == ["on", "on, locked"]  # beta from 1.26; GA locked from 1.31, then removed


def test_a_release_the_proxy_refused_has_no_state() -> None:
    assert release_status("1.21.0-alpha.1").startswith("refused")
    _, unread = stretches(("JobReadyPods",), ">=1.21.0-alpha.0,<1.21.0-beta.1")
    assert "1.21.0-alpha.1" in unread


PATCH_CHANGES_FILE = Path(__file__).resolve().parents[1] / "harness" / "gate_patch_changes.yaml"


def assessed_patch_changes() -> list[dict[str, Any]]:
    changes: list[dict[str, Any]] = yaml.safe_load(PATCH_CHANGES_FILE.read_text())["changes"]
    return changes


def gates_named_by(claim_ids: set[str] | None = None) -> set[str]:
    """The gates rows name (only the rows of those claims, when given)."""
    return {gate for _, claim, _, gates in GATED if claim_ids is None or claim in claim_ids for gate in gates}


def test_every_patch_level_default_change_is_assessed() -> None:
    """A regenerated ledger that finds a gate whose default a patch release changed fails here until someone reads
    what it does to the claims and says so in harness/gate_patch_changes.yaml."""
    found = {(c.gate, c.at, c.default) for c in patch_default_changes()}
    assessed = {(str(c["gate"]), str(c["at"]), bool(c["default"])) for c in assessed_patch_changes()}
    assert found, "the ledger shows patch releases that changed a default (MaxUnavailableStatefulSet at 1.35.4)"
    assert not found - assessed, f"not assessed in {PATCH_CHANGES_FILE.name}: {sorted(found - assessed)}"
    assert not assessed - found, f"assessed but not in the ledger: {sorted(assessed - found)}"


@pytest.mark.parametrize("change", assessed_patch_changes(), ids=lambda c: f"{c['gate']} {c['at']}")
def test_an_assessed_patch_change_says_what_it_does_to_the_claims(change: dict[str, Any]) -> None:
    gate, verdict = str(change["gate"]), change["verdict"]
    assert str(change.get("source", "")).strip() and str(change.get("why", "")).strip(), f"{gate}: source and why"
    if verdict == "named":
        rows = set(change["rows"])
        assert rows and gate in gates_named_by(rows), f"{gate}: the rows {sorted(rows)} do not name it"
    else:
        assert verdict == "no_claim", f"{gate}: verdict is named or no_claim, not {verdict!r}"
        assert gate not in gates_named_by(), f"{gate} is called no_claim, but a row names it: say which (named)"


def test_a_gate_backported_to_an_older_line_is_absent_not_removed_on_the_newer_one() -> None:
    """SeparateCacheWatchRPC came, on, in the patches 1.28.8 and 1.29.3 (k/k#123694, k/k#123693) before 1.30 had it:
    1.29.0-1.29.2 never had the gate nor its code, so they are off, and 1.29.3 is a patch-level change."""
    assert effective_default("SeparateCacheWatchRPC", "1.28.8") is True
    assert effective_default("SeparateCacheWatchRPC", "1.29.2") is False
    assert effective_default("SeparateCacheWatchRPC", "1.29.3") is True
    assert ("SeparateCacheWatchRPC", "1.29.3") in {(c.gate, c.at) for c in patch_default_changes()}
