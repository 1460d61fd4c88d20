"""Claim families are folders (harness/base/families.py): each holds all of its parts, and a new folder is a new
family for pytest, the replay and the report with no other edit."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from harness.base import families
from harness.base.manifests import load_manifest
from harness.core.expectations import load_claims
from harness.core.transport_recording import Recording
from harness.reports import report
from tests.test_recordings import NOT_RECORDED_YET

REPO = Path(__file__).resolve().parent.parent


def test_every_family_folder_holds_all_its_parts() -> None:
    found = families.families()
    assert [f.name for f in found][:3] == ["phase_after_deletion", "active_deadline", "termination_order"]
    for family in found:
        assert family.expectations.is_file(), family.name
        assert load_claims(family.name), family.name
        assert family.modules, f"{family.name}: no test_*.py"
        assert family.recordings.is_dir(), f"{family.name}: no recordings/"
        probes = {
            f"{m.name}::{n}" for m in family.modules for n in re.findall(r"^def (test_\w+)\(probe", m.read_text(), re.M)
        }
        # a family whose probes have not run live yet has no recordings (tests/test_recordings.py names them)
        assert list(family.recordings.glob("*.json")) or probes <= NOT_RECORDED_YET, f"{family.name}: no recordings"
        assert list(family.manifests.glob("*.yaml")), f"{family.name}: no manifests"
        for module in family.modules:  # a module may still name its family in its marker: the folder's
            text = module.read_text()
            assert "pytest.mark.probe" in text, module
            assert "pytest.mark.probe(" not in text or f'pytest.mark.probe("{family.name}")' in text, module


def test_nothing_of_a_family_is_left_outside_its_folder() -> None:
    """The old central folders are gone: a recording or manifest put there would be silently ignored."""
    for old in ("recordings", "expectations", "manifests"):
        assert not (REPO / old).exists(), f"{old}/ is back: its files belong in probes/<family>/{old}"
    assert not list((REPO / "probes").glob("test_*.py")), "a probe module belongs in its family's folder"


def test_manifest_names_are_unique_across_families() -> None:
    names = Counter(p.name for f in families.families() for p in f.manifests.glob("*.yaml"))
    assert [n for n, count in names.items() if count > 1] == []


def test_every_document_cited_is_in_the_registry_with_its_public_citation() -> None:
    """family.yaml and every claim cite a document by an id of probes/documents.yaml, which gives its title,
    site, author, date and address (or says they are not recorded), and every document there is cited."""
    documents = families.documents()
    cited = {f.document for f in families.families()}
    cited |= {c.document for f in families.families() for c in load_claims(f.name).values()}
    assert cited == set(documents)
    for doc in documents.values():
        assert doc.title and doc.title_en and doc.about, doc.id
        assert doc.date[:4].isdigit() or doc.date.startswith("not recorded"), doc.id
        assert doc.address.startswith(("https://", "not recorded")), doc.id


def test_a_registry_entry_without_its_fields_is_refused(tmp_path: Path) -> None:
    (tmp_path / "documents.yaml").write_text('doc-id:\n  title: "T"\n  site: s\n')
    with pytest.raises(families.FamilyError, match="doc-id: needs exactly title, title_en, site"):
        families.documents(tmp_path)


def test_an_overlay_may_take_its_base_from_another_family() -> None:
    """termination_order's 7 s grace variant is an overlay of phase_after_deletion's trapping pod."""
    overlay = families.manifest_path("pod-finalizer-traps-sigterm.grace-7s.yaml")
    assert overlay.parent.parent.name == "termination_order"
    assert load_manifest(overlay.name)["spec"]["terminationGracePeriodSeconds"] == 7


def test_each_caller_gets_its_own_copy_of_a_yaml_file(tmp_path: Path) -> None:
    """A YAML file is parsed once per process; what a caller changes in its copy, nested or not, no other sees."""
    path = tmp_path / "pod.yaml"
    path.write_text("spec: {containers: [{name: main, args: [a]}]}\nwhen: 2024-01-02\nshared: &x [1]\nagain: *x\n")
    first = families.load_yaml(path)
    first["spec"]["containers"][0]["args"].append("b")
    first["when"] = None
    first["again"].append(2)
    second = families.load_yaml(path)
    assert second["spec"]["containers"] == [{"name": "main", "args": ["a"]}]
    assert str(second["when"]) == "2024-01-02" and second["shared"] == second["again"] == [1]
    second["again"].append(3)
    assert second["shared"] == [1]  # an alias is copied apart: changing one leaves the other


NEW_FAMILY = {
    "../documents.yaml": """\
new-document:
  title: "A new document"
  title_en: "A new document, in English"
  site: example.org
  author: not recorded
  date: "2024-01-02"
  address: not recorded
  about: "what a new family folder needs"
""",
    "family.yaml": """\
title: "A family made by a test"
order: 5
document: new-document
""",
    "expectations.yaml": """\
document: new-document
claims:
  pod-name:
    claim: The probe reads the manifest of its own family folder.
    observable: the manifest's pod name
    expect:
      - versions: ">=1.0"
        value: new-family-pod
        sources: ["tests/test_families.py"]
""",
    "manifests/new-family-pod.yaml": """\
apiVersion: v1
kind: Pod
metadata: {name: new-family-pod}
spec: {containers: [{name: main, image: busybox}]}
""",
    "test_new_family.py": """\
import pytest

from harness.core.basis import Basis

pytestmark = pytest.mark.probe


def test_reads_its_own_manifest(probe):
    \"\"\"A pod manifest read from the family's own folder.\"\"\"
    name = probe.manifest("new-family-pod.yaml")["metadata"]["name"]
    probe.check("pod-name", name, Basis.direct("the family's manifest"))
    probe.conclude()
""",
}


@pytest.fixture
def new_family(tmp_path: Path) -> Path:
    """A families root holding one new family folder (made here, nothing else edited); returns the root."""
    root = tmp_path / "probes"
    folder = root / "new_family"
    for relative, text in NEW_FAMILY.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    origin = {"kind": "written for a test", "namespace": "plp-test", "run_id": "test", "node_access": False}
    step = {"call": "server_version", "request": {}, "response": {"gitVersion": "v1.33.1"}, "t_start": 0, "t_end": 0}
    Recording("test_new_family.py::test_reads_its_own_manifest", origin, [step]).write(
        folder / "recordings" / "reads_its_own_manifest--v1.33.1-written.json"
    )
    return root


def test_a_new_family_folder_is_collected_replayed_and_reported(
    new_family: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = tmp_path / "runs"
    plugin = ["-p", "harness.doors.pytest_plugin", "-p", "no:cacheprovider", "--rootdir", str(REPO)]
    options = ["-c", str(REPO / "pyproject.toml"), "--replay", str(new_family), "--run-dir", str(runs), "-q"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *plugin, str(new_family), *options],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
    (run_dir,) = runs.iterdir()
    (record_file,) = (run_dir / "probes").iterdir()
    record = json.loads(record_file.read_text())
    assert record["family"] == "new_family"
    assert [v["status"] for v in record["verdicts"]] == ["pass"]

    monkeypatch.setattr(families, "FAMILIES_ROOT", new_family)  # the report looks where the families are
    matrix = report.write_report([run_dir], tmp_path / "report")
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "A new document" in markdown and "what a new family folder needs" in markdown
    assert "A new document, in English (example.org, 2024-01-02)" in markdown
    assert matrix.scenarios[record["probe"]].order[:2] == (5, "new_family")
    assert matrix.scenarios[record["probe"]].text == "A pod manifest read from the family's own folder."
