"""pytest run in the test's own process, answered as a child `python -m pytest` would be.

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
