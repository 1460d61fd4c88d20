"""The layering docs/developing.md describes: probes and the probe core know no cluster provider, and the pytest
plugin does not reach into the make front door."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROBE_CORE = ("probe.py", "probe_helpers.py", "observe.py", "views.py", "expectations.py", "transport.py")
PROVIDERS = (
    "harness.kind",
    "harness.local",
    "harness.lifecycle",
    "harness.nodeimage",
    "harness.commands",
    "harness.cli",
)


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports (`from harness import kind` counts as harness.kind)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def reaching(paths: list[Path], forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    out = {}
    for path in paths:
        bad = sorted(m for m in imported_modules(path) if m.startswith(forbidden))
        if bad:
            out[path.name] = bad
    return out


def test_probes_and_the_probe_core_import_no_cluster_provider() -> None:
    paths = sorted(REPO.glob("probes/*/test_*.py")) + [REPO / "harness" / name for name in PROBE_CORE]
    assert len(paths) > len(PROBE_CORE)  # the families were found
    assert reaching(paths, PROVIDERS) == {}


def test_the_pytest_plugin_does_not_import_the_make_front_door() -> None:
    plugin = [REPO / "harness" / "pytest_plugin.py", REPO / "harness" / "probe_fixtures.py"]
    assert reaching(plugin, ("harness.cli", "harness.commands")) == {}


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    probe = tmp_path / "test_x.py"
    probe.write_text("from harness import kind\nimport harness.local.cluster\nfrom harness.views import PodView\n")
    assert reaching([probe], PROVIDERS) == {"test_x.py": ["harness.kind", "harness.local.cluster"]}


# Distributions whose import name is not their name in lower case with "_" for "-".
IMPORT_NAMES = {"pyyaml": "yaml", "pytest-xdist": "xdist"}
# Used through pytest's configuration (pyproject.toml's [tool.pytest.ini_options]), never imported.
CONFIGURED_PLUGINS = {"pytest-timeout": "timeout"}


def test_every_runtime_dependency_is_used() -> None:
    """A dependency nothing imports only makes every install bigger (a plotting library pulled numpy in)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    names = [re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0].lower() for d in project["project"]["dependencies"]]
    sources = [p for d in ("harness", "tests", "tools", "probes") for p in (REPO / d).rglob("*.py")]
    imported = {m.split(".")[0] for p in [*sources, REPO / "conftest.py"] for m in imported_modules(p)}
    options = project["tool"]["pytest"]["ini_options"]
    unused = [
        n
        for n in names
        if IMPORT_NAMES.get(n, n.replace("-", "_")) not in imported and CONFIGURED_PLUGINS.get(n) not in options
    ]
    assert names and unused == []
