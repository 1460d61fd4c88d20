"""What the suite found (probes/findings.yaml, harness/reports/findings.py): README's table is made from it, each
finding names a probe, claims and recordings that exist, and the report page shows it first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.base import families
from harness.core.expectations import load_claims
from harness.reports import findings

REPO = Path(__file__).resolve().parent.parent


def test_readme_s_table_of_findings_is_the_one_made_from_findings_yaml() -> None:
    readme = (REPO / "README.md").read_text()
    section = readme.split("## What it found", 1)[1].split("\n## ", 1)[0]
    table = "\n".join(line for line in section.splitlines() if line.startswith("|")) + "\n"
    assert table == findings.readme_table()
    assert len(findings.findings()) >= 6


def test_each_finding_names_a_probe_its_claims_and_recordings_that_exist() -> None:
    probes = {
        name.removeprefix("test_"): family.name
        for family in families.families()
        for module in family.modules
        for name in re.findall(r"^def (test_\w+)\(", module.read_text(), flags=re.M)
    }
    for finding in findings.findings():
        assert finding.probe in probes, finding.probe
        claims = load_claims(probes[finding.probe])
        assert set(finding.claims) <= set(claims), (finding.probe, finding.claims)
        for path in finding.recording_paths():
            assert path.parent.parent.name == probes[finding.probe] and "-live-" in path.name
        label, anchor = finding.explained
        assert f"#{anchor}" in findings.readme_table() and label


def test_a_finding_s_words_become_html_with_code_and_pr_links_and_nothing_else_unescaped() -> None:
    html = str(findings.inline_markdown("A `restartPolicy: Never` pod <b> (k/k#115817)"))
    assert "<code>restartPolicy: Never</code>" in html and "&lt;b&gt;" in html
    assert '<a href="https://github.com/kubernetes/kubernetes/pull/115817">k/k#115817</a>' in html


def test_a_findings_file_with_a_field_missing_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / findings.FINDINGS).write_text("findings:\n  - finding: x\n    releases: 1.21\n")
    with pytest.raises(findings.FindingsError, match="each finding has exactly"):
        findings.findings(tmp_path)
