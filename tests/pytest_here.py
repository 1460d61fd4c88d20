"""pytest and `python -m harness` run in the test's own process, answered as a child would be.

For the tests whose subject is what pytest and the suite's plugin do with a selection, a replay or a bad option
(pytest's own way to test a plugin: pytester's in-process run): a child Python costs about 0.45 s of CPU to start
pytest, import the suite and exit (0.1 s in this process, where both are imported). What needs a process stays in a
child: a signal, the real entry point's refusal, a live cluster's threads and client.
"""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Mapping
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def pytest_here(
    *args: str, monkeypatch: pytest.MonkeyPatch, env: Mapping[str, str | None] | None = None, cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    """`python -m pytest -p no:cacheprovider ARGS` from `cwd` with `env` set in the environment (None: unset), run
    here: its exit code and what it wrote. Modules the run imported from outside the suite's harness (its test
    modules) are forgotten after it, as a new process would import them again."""
    argv = ["-p", "no:cacheprovider", *args]
    imported = set(sys.modules)
    out, err = io.StringIO(), io.StringIO()
    with monkeypatch.context() as patched:
        patched.chdir(cwd)
        for name, value in (env or {}).items():
            if value is None:
                patched.delenv(name, raising=False)
            else:
                patched.setenv(name, value)
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = int(pytest.main(argv))
            except SystemExit as exited:  # as the interpreter ends on it: None is 0, a message 1
                code = exited.code if isinstance(exited.code, int) else int(exited.code is not None)
    for name in set(sys.modules) - imported:
        if not name.startswith("harness."):
            del sys.modules[name]
    return subprocess.CompletedProcess([sys.executable, "-m", "pytest", *argv], code, out.getvalue(), err.getvalue())


def harness_here(*args: str, capsys: pytest.CaptureFixture[str]) -> subprocess.CompletedProcess[str]:
    """`python -m harness ARGS` run here, through cli.main as the entry point runs it: its exit code (argparse's
    refusal is a SystemExit, taken as the interpreter ends on it) and what it wrote (read through capsys; what was
    written before it is dropped). For the refusals a child took 0.1-0.2 s of CPU to say in one line; each test of
    an entry point keeps a row in a real child."""
    from harness.doors import cli

    capsys.readouterr()
    try:
        code = cli.main(list(args))
    except SystemExit as exited:
        code = exited.code if isinstance(exited.code, int) else int(exited.code is not None)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess([sys.executable, "-m", "harness", *args], code, out, err)
