"""The front page and the manual: a short README that leads into docs/, links that resolve, documents cited by
their public titles with no path outside the repository, no work log in the tree, and `make help`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.base import families

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
# Folders that hold no source of the suite: tools, caches, run output, evidence that is never edited.
NOT_THE_TREE = {".git", ".venv", ".tools", "runs", "node_modules", "recordings", "bisections", "__pycache__"}
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".j2", ".toml", ".json", ".mjs", ".txt", ""}


def tree_files() -> list[Path]:
    """The suite's own text files: what git tracks or would add (not ignored), without NOT_THE_TREE."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file but the ignored folders
        listed = [p.relative_to(REPO).as_posix() for p in REPO.rglob("*") if p.is_file()]
    paths = [REPO / f for f in listed]
    return [
        p
        for p in paths
        if p.is_file()
        and p.suffix in TEXT_SUFFIXES
        and not NOT_THE_TREE & set(p.relative_to(REPO).parts)
        and not any(part.startswith((".mypy_cache", ".ruff_cache", ".pytest_cache")) for part in p.parts)
        and not p.relative_to(REPO).parts[0].endswith(".egg-info")
    ]


def markdown_links(path: Path) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", path.read_text())


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings."""
    out = set()
    for heading in re.findall(r"^#+ (.+)$", path.read_text(), flags=re.M):
        text = re.sub(r"[^\w\- ]", "", heading.lower().replace("`", ""))
        out.add(text.replace(" ", "-"))
    return out


def test_the_readme_is_a_front_page() -> None:
    """What the suite is and for whom first, then the two set-up commands, the atlas, and links into docs/."""
    lines = README.read_text().splitlines()
    assert len(lines) <= 150, len(lines)
    assert lines[0] == "# pod-lifecycle-probes"
    assert "Kubernetes" in lines[1] and " for " in " ".join(lines[1:3]), lines[1:3]
    commands = [line.split("#")[0].split() for line in lines if line.startswith("    make ")]
    assert commands[:2] == [["make", "probe", "VERSION=1.27"], ["make", "test"]]
    assert ["make", "atlas"] in commands
    assert len([link for link in markdown_links(README) if link.startswith("docs/")]) >= len(list(DOCS.glob("*.md")))


def test_ci_runs_the_readmes_test_command() -> None:
    assert re.search(r"^CI=1 make test$", (REPO / ".ci" / "run").read_text(), flags=re.M)


@pytest.mark.parametrize("page", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: p.name)
def test_every_link_into_the_repository_resolves(page: Path) -> None:
    links = [link for link in markdown_links(page) if not link.startswith(("http://", "https://"))]
    for link in links:
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        assert path.is_file(), f"{page.name}: {link}"
        if anchor:
            assert anchor in anchors(path), f"{page.name}: {link}: no such heading"


def test_every_document_is_cited_in_the_manual_by_title_date_and_address() -> None:
    manual = (DOCS / "claims-and-documents.md").read_text()
    for doc in families.documents().values():
        section = " ".join(manual.split(f"### {doc.id}\n", 1)[1].split("\n### ", 1)[0].split())
        assert f'"{doc.title}"' in section and f'"{doc.title_en}"' in section, doc.id
        published = doc.date if doc.date[:4].isdigit() else "not recorded"
        assert published in section and ("Address: not recorded" in section or doc.address in section), doc.id


def test_no_path_outside_the_repository_is_cited() -> None:
    """The documents are cited by title; a path into the workplace that held copies of them means nothing in
    a clone."""
    outside = re.compile(r"\.\./shared|shared/seeds|shared/research|/work/")
    found = [
        f"{p.relative_to(REPO)}:{n}"
        for p in tree_files()
        if p != Path(__file__).resolve()
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
        if outside.search(line)
    ]
    assert found == []


def test_the_checks_see_the_files_they_check() -> None:
    files = {p.relative_to(REPO).as_posix() for p in tree_files()}
    assert {"README.md", "Makefile", "harness/reports/report.py", "probes/documents.yaml", "docs/verdicts.md"} <= files
    assert not any("/recordings/" in f or f.startswith(("bisections/", "runs/")) for f in files)


def test_no_work_log_in_the_prose() -> None:
    """History belongs to git log and to the recordings' origins: no issue numbers or sessions in the tree."""
    work_log = re.compile(r"\bissues? #?\d|\bsession \d|\bthis week\b|\blast time\b", re.IGNORECASE)
    found = [
        f"{p.relative_to(REPO)}:{n}: {line.strip()[:80]}"
        for p in tree_files()
        if p != Path(__file__).resolve()
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
        if work_log.search(line)
    ]
    assert found == []


def make(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=REPO, capture_output=True, text=True, timeout=600
    )


def test_make_alone_lists_every_target_and_variable_in_one_screen() -> None:
    bare, help_ = make(), make("help")
    assert bare.returncode == help_.returncode == 0, bare.stderr
    assert bare.stdout == help_.stdout
    lines = help_.stdout.splitlines()
    assert 10 < len(lines) <= 40 and max(map(len, lines)) <= 110
    makefile = (REPO / "Makefile").read_text()
    targets = re.search(r"^\.PHONY: (.+)$", makefile, flags=re.M)
    assert targets
    for target in set(targets.group(1).split()) - {"help", "refuse-cluster"}:
        assert re.search(rf"\b{re.escape(target)}\b", help_.stdout), target
    for variable in re.findall(r"^([A-Z_]+) \?=", makefile, flags=re.M):
        assert re.search(rf"\b{variable}\b", help_.stdout), variable


def test_make_atlas_reports_the_shipped_recordings_without_a_cluster(tmp_path: Path) -> None:
    """The atlas of one probe (PROBE narrows it as it does make probe): replayed, reported. test_pod_deadline's
    76 recordings span the releases and the document that the family's 415 do (51 MB: 3.8 s of CPU against 1.9 s)."""
    atlas = tmp_path / "atlas"
    proc = make(
        "atlas", f"ATLAS={atlas}", "PROBE=test_pod_deadline", "STAMP=", f"PY={sys.executable}", "TEST_WORKERS=0"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 fail" in proc.stdout and f"report: {atlas}/report/report.html" in proc.stdout
    markdown = (atlas / "report" / "report.md").read_text()
    assert "**KubernetesのactiveDeadlineSecondsはJobとPodでちょっと違う**" in markdown
    assert "v1.21.14" in markdown and "v1.37.2" in markdown
