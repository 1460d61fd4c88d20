"""How the harness refuses: one line `error: <class>: <what is wrong>` on stderr and the class's exit code (make
turns every failure into its own exit code 2, so the line says the class in words). Ctrl-C is one line saying what
was stopped (harness/base/errors.py `stopping`, said by harness/doors/cli.py).
"""

from __future__ import annotations

import argparse
import sys

from harness.base.errors import BAD_INPUT_CLASS, PREREQUISITE_MISSING_CLASS, PREREQUISITE_MISSING_EXIT
from harness.doors import selection

BAD_INPUT, PREREQUISITE_MISSING = 2, PREREQUISITE_MISSING_EXIT

NO_TESTS_COLLECTED = 5  # pytest's exit code when a selection matches nothing; also ours for "nothing to do"

# The classes of refusal, as each error line names them, and their exit codes.
BAD, MISSING, NOTHING_TO_RUN, NOTHING_TO_REPORT = (
    BAD_INPUT_CLASS,
    PREREQUISITE_MISSING_CLASS,
    "nothing to run",
    "nothing to report",
)

EXIT_CODE = {BAD: BAD_INPUT, MISSING: PREREQUISITE_MISSING, NOTHING_TO_RUN: NO_TESTS_COLLECTED, NOTHING_TO_REPORT: 5}

EXIT_CODES = f"""\
exit codes (make turns every non-zero one into 2: the error line says which it was):
  0  done; for probe, every probe passed
  1  a probe failed or left a claim undecided; a build, a bisection or a cleanup failed; radar: a claim changed
     on the pre-release as no expectation states yet
  {BAD_INPUT}  {BAD}: an argument the harness cannot use, or a KUBECONFIG_FILE whose API server is not Kubernetes
     ('error: {BAD}: ...'), refused before anything starts
  {PREREQUISITE_MISSING}  {MISSING}: Docker, kind, Go, root, an API server that cannot be reached ...
     ('error: {MISSING}: ...')
  {NO_TESTS_COLLECTED}  {NOTHING_TO_RUN} / {NOTHING_TO_REPORT}: PROBE matches no probe, or RUNS holds no run records
     ('error: {NOTHING_TO_RUN}: ...', 'error: {NOTHING_TO_REPORT}: ...')
  6  radar: no pre-release newer than the newest release builds here (nor is served); one line says why, and no
     older pre-release is probed in its place
  130  interrupted (Ctrl-C) in the harness itself: one line says what was stopped ('interrupted: stopped ...')
  other: pytest's own, for a probe run that started (2 interrupted, 4 pytest usage error)"""


def refuse(kind: str, problem: str) -> int:
    """Say why the harness will not go on, as `error: <class>: <problem>`; return the class's exit code."""
    print(f"error: {kind}: {problem}", file=sys.stderr)
    return EXIT_CODE[kind]


class Refused(Exception):
    """An input the harness will not run with: the class of refusal (BAD, ...) and what is wrong."""

    def __init__(self, kind: str, problem: str) -> None:
        super().__init__(problem)
        self.kind, self.problem = kind, problem


def missing_arguments(args: argparse.Namespace, names: dict[str, str]) -> str | None:
    """'BAD (--bad) is missing' for required values make passes as empty strings; None when all are given."""
    missing = [
        f"{variable} (--{dest.replace('_', '-')})" for dest, variable in names.items() if not getattr(args, dest)
    ]
    if not missing:
        return None
    return f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing"


def selection_problem(expression: str, run_dir: str) -> tuple[str, str] | None:
    """(class, why) when PROBE selects no probe or is not a -k expression; None when it selects some.

    pytest collects in a child process (harness/doors/selection.py), in about a second, before any cluster.
    """
    return refusal_of_selection(expression, selection.select(expression, run_dir))


def refusal_of_selection(expression: str, found: selection.Selection) -> tuple[str, str] | None:
    """(class, why) when what PROBE selected (`found`) is nothing or an error; None when it selected some."""
    if found.exit_code == NO_TESTS_COLLECTED or (found.exit_code == 0 and not found.selected):
        names = ", ".join(found.probe_names())
        return NOTHING_TO_RUN, (
            f"PROBE {expression!r} matches none of the {found.total} probes (a probe name or a pytest -k "
            f"expression; probes include {names}, ...)"
        )
    if found.exit_code != 0:
        return BAD, f"PROBE {expression!r} cannot select probes (pytest says: {found.errors})"
    return None
