"""The committed bisection records (bisections/*.json): evidence, checked offline like the recordings.

Each record must be whole and consistent (its answer follows from the releases it tried), and what GOOD and
BAD observed must still hold against the current expectations at those versions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.axis.bisect import BAD, GOOD
from harness.base.families import families
from harness.base.versions import KubeVersion
from harness.core.expectations import PASS, evaluate, load_claims

RECORDS = sorted((Path(__file__).resolve().parent.parent / "bisections").glob("*.json"))


def claim_of(claim_id: str) -> Any:
    for family in families():
        claims = load_claims(family.name)
        if claim_id in claims:
            return claims[claim_id]
    raise AssertionError(f"{claim_id}: no such claim in any family")


def test_there_are_bisection_records() -> None:
    assert RECORDS, "bisections/ holds no record"


@pytest.mark.parametrize("path", RECORDS, ids=[p.stem for p in RECORDS])
def test_a_bisection_record_is_whole_and_its_answer_follows_from_what_it_tried(path: Path) -> None:
    record = json.loads(path.read_text())
    assert record["name"] == path.stem
    tried = {t["version"]: t for t in record["tried"]}
    candidates = record["candidates"]
    assert candidates[0] == record["good"]["version"] and candidates[-1] == record["bad"]["version"]
    assert tried[record["last_good"]]["outcome"] == GOOD and tried[record["first_bad"]]["outcome"] == BAD
    between = candidates[candidates.index(record["last_good"]) + 1 : candidates.index(record["first_bad"])]
    assert all(tried.get(v, {}).get("outcome") not in (GOOD, BAD) for v in between), "an untried-or-skip gap only"
    for version, entry in tried.items():
        if not entry["build"]:  # a release the proxy does not serve or that does not build here: said why, a skip
            assert entry["outcome"] == "skip" and entry["why"].startswith("could not be built"), version
            continue
        assert entry["build"].get("version", "").lstrip("v") == version, f"{version}: the build it ran"
        server = entry["cluster"].get("server_version") or {}
        assert server.get("gitVersion", "").lstrip("v") == version, f"{version}: what the server said"
    assert record["ran"]["provider"] == "local" and record["ran"].get("suite_commit")


@pytest.mark.parametrize("path", RECORDS, ids=[p.stem for p in RECORDS])
def test_what_good_and_bad_observed_still_meets_the_expectations_at_those_versions(path: Path) -> None:
    record = json.loads(path.read_text())
    claim = claim_of(record["claim"])
    for end in ("good", "bad"):
        version, observed = record[end]["version"], record[end]["observed"]
        verdict = evaluate(claim, KubeVersion.parse(version), observed)
        assert verdict.status == PASS, f"{end} {version}: {verdict.message}"
