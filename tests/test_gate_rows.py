"""Rows tied to the feature gates that decide them: each gate a row of probes/*/expectations.yaml names keeps one
default over every release of its range that the gate ledger read (harness/gate_ledger.json, from each tag's
pkg/features); a change inside a range means the row is split wrongly or rests on the wrong gate."""

from __future__ import annotations

import pytest

from harness.axis.gates import default_changes, effective_default, known_gates, release_status, stretches
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
