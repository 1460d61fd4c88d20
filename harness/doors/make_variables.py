"""What each make target passes to `python -m harness`: its make variables, read from the environment as given.

The Makefile puts no variable's value into a shell command line. It exports every variable given on make's
command line unexpanded (`override V := $(value V)`, then `export V`), and each recipe runs
`python -m harness make <target>`, with no value in it; this module turns the variables into the command's
arguments. So a value reaches the CLI literally: backticks, `$(...)`, quotes, `;` and spaces are text, never
run, and a `$(...)` no longer empties a variable (`PROBE='$(x)'` selecting every probe instead of a subset). A
value no option can take, one holding a newline, is refused in one line.

A variable not given is not passed (the CLI's default applies); given empty, it is passed empty, and refused where
empty means nothing (VERSIONS="", ATLAS=).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from harness.base.errors import BadInput

# How a variable is passed: "given": its option with the value whenever the variable is given (empty too);
# "nonempty": only when not empty; "always": always, empty when not given (a required option the CLI refuses
# empty, saying which variable is missing); "words": split as a shell would split words (quotes group, nothing is
# run: shlex), after the option; "args": split the same, after "--" (PYTEST_ARGS).
GIVEN, NONEMPTY, ALWAYS, WORDS, ARGS = "given", "nonempty", "always", "words", "args"


@dataclass(frozen=True)
class Passed:
    """One make variable of a target, the option it becomes and how."""

    variable: str
    option: str
    how: str = GIVEN


PROBE_ARGS = (
    Passed("VERSION", "--version"),
    Passed("IMAGE", "--image"),
    Passed("PROBE", "--probe"),
    Passed("CLUSTER", "--cluster"),
    Passed("KEEP", "--keep"),
    Passed("REPEAT", "--repeat"),
    Passed("PARALLEL", "--parallel"),
    Passed("KUBECONFIG_FILE", "--kubeconfig", NONEMPTY),
    Passed("CONTEXT", "--context", NONEMPTY),
    Passed("RESTART_APISERVER_AFTER", "--restart-apiserver-after", NONEMPTY),
    Passed("PYTEST_ARGS", "--", ARGS),
)

# Every make target that runs the CLI, and its variables.
TARGETS: dict[str, tuple[Passed, ...]] = {
    "probe": PROBE_ARGS,
    "matrix": (
        Passed("VERSIONS", "--versions"),
        Passed("JOBS", "--jobs"),
        Passed("CLUSTER", "--cluster"),
        Passed("PARALLEL", "--parallel", NONEMPTY),
        Passed("PROBE", "--probe", NONEMPTY),
        Passed("OVERLAP", "--overlap"),
    ),
    "clean": (
        Passed("CLUSTER", "--cluster"),
        Passed("KUBECONFIG_FILE", "--kubeconfig", NONEMPTY),
        Passed("CONTEXT", "--context", NONEMPTY),
    ),
    "report": (Passed("RUNS", "", WORDS), Passed("FROM", "--from"), Passed("TO", "--to")),
    "atlas": (
        Passed("ATLAS", "--atlas"),
        Passed("PROBE", "--probe"),
        Passed("FROM", "--from"),
        Passed("TO", "--to"),
        Passed("TEST_WORKERS", "--workers"),
    ),
    "upgrade": (
        Passed("FROM", "--from"),
        Passed("TO", "--to"),
        Passed("RUNS", "--runs", WORDS),
        Passed("DETAIL", "--detail", NONEMPTY),
    ),
    "coverage": (Passed("UNCOVERED", "--uncovered"), Passed("PLAN", "--plan")),
    "runtimes": (
        Passed("VERSION", "--version", ALWAYS),
        Passed("VALUES", "--values"),
        Passed("MARKDOWN", "--markdown"),
        Passed("RUNS", "--runs", WORDS),
    ),
    "node-image": (
        Passed("VERSION", "--version", ALWAYS),
        Passed("SOURCE", "--source"),
        Passed("PARTS", "--parts"),
        Passed("CONTAINERD", "--containerd"),
        Passed("KIND", "--kind"),
    ),
    "bisect": (
        Passed("PROBE", "--probe", ALWAYS),
        Passed("GOOD", "--good", ALWAYS),
        Passed("BAD", "--bad", ALWAYS),
        Passed("BUILD", "--build"),
        Passed("CLUSTER", "--cluster"),
        Passed("CLAIM", "--claim", NONEMPTY),
        Passed("PRE", "--pre-releases"),
        Passed("NAME", "--name", NONEMPTY),
        Passed("REPEAT", "--runs"),
    ),
    "radar": (
        Passed("CLUSTER", "--cluster"),
        Passed("SOURCE", "--source"),
        Passed("TRIES", "--tries"),
        Passed("BASELINE", "--baseline", NONEMPTY),
        Passed("FRESH_BASELINE", "--fresh-baseline"),
        Passed("PROBE", "--probe", NONEMPTY),
    ),
    "versions": (),
}
# The default of a variable the CLI has none for (report reads runs/ when RUNS is not given).
DEFAULTS = {("report", "RUNS"): "runs"}


def make_argv(target: str, environ: Mapping[str, str]) -> list[str]:
    """`python -m harness` arguments for `make <target>`, from the variables in `environ`; BadInput when a value
    cannot be passed (a newline, or unbalanced quotes where words are split)."""
    if target not in TARGETS:
        raise BadInput(f"make {target} does not run the harness (targets: {', '.join(TARGETS)})")
    argv, extra = [target], []
    for passed in TARGETS[target]:
        value = environ.get(passed.variable, DEFAULTS.get((target, passed.variable)))
        if value is None and passed.how != ALWAYS:
            continue
        value = value or ""
        if "\n" in value or "\r" in value or "\0" in value:
            raise BadInput(f"{passed.variable} holds a newline, which no option takes: {value!r}")
        if passed.how == NONEMPTY and not value:
            continue
        if passed.how in (WORDS, ARGS):
            try:
                words = shlex.split(value)
            except ValueError as err:
                raise BadInput(f"{passed.variable}={value} cannot be split into words: {err}") from err
            if passed.how == ARGS:
                extra = ["--", *words] if words else []
            else:
                argv += [passed.option, *words] if passed.option else words
            continue
        argv.append(f"{passed.option}={value}")  # one argument: a value starting with - stays the option's value
    return argv + extra
