"""Outputs written safely and make variables passed literally: every dangerous input as a row.

harness/base/outputs.py is the one owner of the folders the suite writes (make atlas, report, matrix, bisect, test's
run records): a path that is empty, the root, the home folder, above either or above the checkout, or a folder of
the user's is refused in one line before anything is written; a folder is replaced only once the new one is whole,
and only when the suite made it. The Makefile puts no variable's value into a shell command line
(harness/doors/make_variables.py): the rows run the real `make` with a stand-in interpreter that prints the
arguments the CLI would get.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.base import outputs
from harness.base.errors import BadInput
from harness.doors.make_variables import TARGETS, make_argv

REPO = Path(__file__).resolve().parent.parent


def make(*args: str, env: dict[str, str] | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", "-s", "STAMP=", f"PY={sys.executable}", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


# ------------------------------------------------------------------------------------------- safe output folders


def a_folder_of_mine(tmp_path: Path) -> Path:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my own notes")
    return mine


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("", "ATLAS is empty"),
        ("   ", "ATLAS is empty"),
        ("/", "is the root folder"),
        ("~", "is your home folder"),
        (str(Path.home()), "is your home folder"),
        (str(Path.home().parent), "a folder above your home or the suite|the root folder"),
        (str(REPO), "is the suite's checkout"),
        (str(REPO.parent), "a folder above your home or the suite|the root folder"),
        ("runs/atlas\nx", "holds a newline"),
        ("/etc/hostname", "is not a folder"),
    ],
    ids=["empty", "blank", "root", "tilde", "home", "above-home", "checkout", "above-checkout", "newline", "a-file"],
)
def test_an_unsafe_output_path_is_refused_in_one_line(given: str, says: str) -> None:
    with pytest.raises(BadInput, match=says) as refused:
        outputs.check_output_dir(given, "ATLAS")
    assert "\n" not in str(refused.value)


def test_a_folder_holding_a_file_of_mine_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    mine = a_folder_of_mine(tmp_path)
    with pytest.raises(BadInput, match="holds files the suite did not write"):
        outputs.check_output_dir(str(mine), "ATLAS")
    assert (mine / "notes.txt").read_text() == "my own notes"


def test_a_new_an_empty_or_the_suites_own_folder_is_accepted(tmp_path: Path) -> None:
    assert outputs.check_output_dir(str(tmp_path / "new" / "atlas"), "ATLAS") == tmp_path / "new" / "atlas"
    (tmp_path / "empty").mkdir()
    assert outputs.check_output_dir(str(tmp_path / "empty"), "ATLAS") == tmp_path / "empty"
    ours = outputs.new_output_dir(tmp_path, "ours")
    (ours / "report.md").write_text("old")
    assert outputs.check_output_dir(str(ours), "ATLAS") == ours


def test_a_folder_is_swapped_in_only_once_whole(tmp_path: Path) -> None:
    target = outputs.new_output_dir(tmp_path, "atlas")
    (target / "report.md").write_text("the last atlas")

    def write_half(failure: BaseException) -> None:
        with outputs.replacing(target) as staging:
            (staging / "report.md").write_text("half")
            raise failure

    with pytest.raises(RuntimeError):
        write_half(RuntimeError("the replay failed"))
    with pytest.raises(KeyboardInterrupt):
        write_half(KeyboardInterrupt())
    assert (target / "report.md").read_text() == "the last atlas"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["atlas"]  # nothing half-written left beside it
    with outputs.replacing(target) as staging:
        (staging / "report.md").write_text("the new atlas")
    assert (target / "report.md").read_text() == "the new atlas" and outputs.is_ours(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["atlas"]


def test_pruning_deletes_only_the_suites_own_folders(tmp_path: Path) -> None:
    mine = a_folder_of_mine(tmp_path)
    made = [outputs.new_output_dir(tmp_path, f"run-{i}") for i in range(4)]
    for age, folder in enumerate(made):  # run-0 the oldest
        os.utime(folder, (1_000_000 + age, 1_000_000 + age))
    deleted = outputs.prune(tmp_path, 2)
    assert sorted(p.name for p in deleted) == ["run-0", "run-1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine", "run-2", "run-3"]
    assert (mine / "notes.txt").read_text() == "my own notes"


def test_pruning_beside_a_starting_run_neither_counts_nor_deletes_it(tmp_path: Path) -> None:
    """make unit prunes while its tests run: the run folder they make meanwhile is not one of the `keep` kept."""
    made = [outputs.new_output_dir(tmp_path, f"run-{i}") for i in range(4)]
    for age, folder in enumerate(made[:3]):
        os.utime(folder, (1_000_000 + age, 1_000_000 + age))
    deleted = outputs.prune(tmp_path, 2, older_than=2_000_000)  # run-3 made after the pruning started
    assert [p.name for p in deleted] == ["run-0"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run-1", "run-2", "run-3"]


def test_a_folder_pruned_halfway_keeps_its_marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Interrupted while deleting, a run folder is still the suite's own (its marker goes last): the next pruning
    deletes the rest of it."""
    folder = outputs.new_output_dir(tmp_path, "run-0")
    for name in ("probes", "evidence"):
        (folder / name).mkdir()
        (folder / name / "record.json").write_text("{}")
    removed: list[str] = []
    rmtree = shutil.rmtree

    def interrupted(path: Path) -> None:
        if removed:
            raise KeyboardInterrupt
        removed.append(Path(path).name)
        rmtree(path)

    monkeypatch.setattr(shutil, "rmtree", interrupted)
    with pytest.raises(KeyboardInterrupt):
        outputs.prune(tmp_path, 0)
    assert len(removed) == 1 and outputs.is_ours(folder)
    monkeypatch.undo()
    assert outputs.prune(tmp_path, 0) == [folder] and not folder.exists()


# ----------------------------------------------------------------------------------- make atlas, through real make


@pytest.fixture
def last_atlas(tmp_path: Path) -> Path:
    """An atlas a previous make atlas left: the suite's own folder, with its records and report."""
    atlas = outputs.new_output_dir(tmp_path, "atlas")
    (atlas / "records").mkdir()
    (atlas / "report").mkdir()
    (atlas / "report" / "report.md").write_text("the last atlas")
    return atlas


@pytest.mark.parametrize(
    ("variables", "code", "says"),
    [
        (["ATLAS="], 2, "ATLAS is empty"),
        (["ATLAS=/"], 2, "ATLAS=/ is the root folder"),
        (["ATLAS=$HOME"], 2, "is your home folder"),
        (["ATLAS=$MINE"], 2, "holds files the suite did not write"),
        (["ATLAS=$LAST", "PROBE=nosuchprobe"], 2, "PROBE 'nosuchprobe' matches none of the"),
        (["ATLAS=$LAST", "FROM=1.26"], 2, "no TO given"),
        (["ATLAS=$LAST", "FROM=1.26.99", "TO=1.28"], 2, "no such Kubernetes release was published"),
        (["ATLAS=$LAST", "PROBE=$(shell touch $LAST/pwned)"], 2, "cannot select probes"),
    ],
    ids=[
        "empty",
        "root",
        "home",
        "a-folder-of-mine",
        "probe-matches-nothing",
        "from-without-to",
        "unpublished-from",
        "make-expression",
    ],
)
def test_make_atlas_refuses_before_it_deletes_anything(
    variables: list[str], code: int, says: str, tmp_path: Path, last_atlas: Path
) -> None:
    mine = a_folder_of_mine(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    (home / "records").mkdir()  # what `rm -rf "$(ATLAS)/records"` once took from ATLAS=$HOME
    given = [
        v.replace("$HOME", str(home)).replace("$MINE", str(mine)).replace("$LAST", str(last_atlas)) for v in variables
    ]
    proc = make("atlas", *given, env={"HOME": str(home)})
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and lines[0].startswith("error: ") and says in lines[0], proc.stderr
    assert len(lines) == 2 and re.match(r"make(\[\d+\])?: \*\*\*", lines[1]), proc.stderr  # one line, then make's
    assert (mine / "notes.txt").read_text() == "my own notes"
    assert (last_atlas / "report" / "report.md").read_text() == "the last atlas"
    assert (home / "records").is_dir() and not (last_atlas / "pwned").exists()
    assert "Traceback" not in proc.stderr


def test_make_atlas_replaces_the_last_atlas_only_once_the_new_one_is_whole(tmp_path: Path, last_atlas: Path) -> None:
    proc = make("atlas", f"ATLAS={last_atlas}", "PROBE=test_pod_deadline", "TEST_WORKERS=0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"report: {last_atlas}/report/report.html" in proc.stdout
    assert "the last atlas" not in (last_atlas / "report" / "report.md").read_text()
    assert outputs.is_ours(last_atlas) and sorted(p.name for p in tmp_path.iterdir()) == ["atlas"]


# -------------------------------------------------------------------------------- make variables passed literally

DANGEROUS = {
    "backticks": "`touch {pwned}`",
    "dollar-paren": "$(shell touch {pwned})",
    "shell-dollar-paren": "$$(touch {pwned})",
    "braces": "${{shell touch {pwned}}}",
    "single-quote": "a'b",
    "double-quote": 'a"b',
    "semicolon": "a; touch {pwned}",
    "hash": "a#b",
    "backslash": "a\\",
    "leading-dash": "-k",
}


@pytest.fixture
def stand_in_python(tmp_path: Path) -> Path:
    """An interpreter for make's PY that runs nothing: for `python -m harness make <target>` it prints the target
    and the environment make gave it, from which `cli_argv` works out the arguments the CLI would get. A shell
    script: one in Python, importing the harness, took more CPU than make itself (31 rows)."""
    script = tmp_path / "python"
    script.write_text(
        f'#!/bin/sh\n[ "$1 $2 $3" = "-m harness make" ] || exit 0\nprintf "{STAND_IN}\\0%s\\0" "$4"\nenv -0\n'
    )
    script.chmod(0o755)
    return script


STAND_IN = "stand-in python for: python -m harness make"


def cli_argv(printed: str) -> list[str]:
    """The arguments `python -m harness make <target>` passes to the CLI (harness/doors/make_variables.py on its
    environment), for the target and environment the stand-in interpreter printed."""
    target, *environ = printed.split(f"{STAND_IN}\0", 1)[1].split("\0")
    return make_argv(target, dict(entry.split("=", 1) for entry in environ if entry))


@pytest.mark.parametrize("name", sorted(DANGEROUS))
@pytest.mark.parametrize(
    ("target", "variable", "option"),
    [("probe", "PROBE", "--probe"), ("probe", "VERSION", "--version"), ("atlas", "ATLAS", "--atlas")],
)
def test_a_make_variable_reaches_the_cli_literally(
    name: str, target: str, variable: str, option: str, tmp_path: Path, stand_in_python: Path
) -> None:
    pwned = tmp_path / "pwned"
    value = DANGEROUS[name].format(pwned=pwned)
    proc = subprocess.run(
        ["make", "--no-print-directory", "-s", target, f"{variable}={value}", "STAMP=", f"PY={stand_in_python}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"{option}={value}" in cli_argv(proc.stdout)
    assert not pwned.exists()


def test_pytest_args_are_split_as_words_and_run_nothing(tmp_path: Path, stand_in_python: Path) -> None:
    pwned = tmp_path / "pwned"
    value = f'--junitxml="a b.xml" `touch {pwned}` $(touch {pwned})'
    proc = make("probe", f"PYTEST_ARGS={value}", f"PY={stand_in_python}")
    argv = cli_argv(proc.stdout)
    assert argv[argv.index("--") :] == ["--", "--junitxml=a b.xml", "`touch", f"{pwned}`", "$(touch", f"{pwned})"]
    assert not pwned.exists()


def test_a_newline_in_a_make_variable_is_refused_in_one_line() -> None:
    proc = make("probe", "PROBE=a\nb")
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0] == "error: bad input: PROBE holds a newline, which no option takes: 'a\\nb'"
    with pytest.raises(BadInput, match="cannot be split into words"):
        make_argv("probe", {"PYTEST_ARGS": "'unbalanced"})


def test_a_variable_not_given_is_not_passed_and_one_given_empty_is() -> None:
    assert make_argv("matrix", {}) == ["matrix"]
    assert make_argv("matrix", {"VERSIONS": ""}) == ["matrix", "--versions="]
    assert make_argv("report", {}) == ["report", "runs"]
    assert make_argv("node-image", {}) == ["node-image", "--version="]
    assert make_argv("probe", {"KUBECONFIG_FILE": "", "PROBE": "trapping"}) == ["probe", "--probe=trapping"]


def test_no_recipe_puts_a_variables_value_into_a_shell_command_line() -> None:
    """Every recipe line refers only to the interpreter and make itself (PY, PYTHON, MAKE; PYTHON a command by
    design); a value a user gives reaches a recipe through the environment alone."""
    makefile = (REPO / "Makefile").read_text()
    recipes = [line for line in makefile.splitlines() if line.startswith("\t")]
    referred = {m for line in recipes for m in re.findall(r"(?<!\$)\$[({]([^)}\s]+)", line)}
    assert referred <= {"PY", "PYTHON", "VENV", "MAKE"}, referred
    taken = {p.variable for passed in TARGETS.values() for p in passed}
    help_text = subprocess.run(["make", "-s", "help"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    for variable in taken - {"TEST_WORKERS"}:
        assert re.search(rf"\b{variable}\b", help_text), variable
