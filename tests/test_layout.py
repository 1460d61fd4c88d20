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
    "harness.clusters",
    "harness.nodeimage",
    "harness.commands",
    "harness.cli",
)


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports (`from harness.clusters import kind` counts as harness.clusters.kind)."""
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
    probe.write_text(
        "from harness.clusters import kind\nimport harness.clusters.local.cluster\nfrom harness.views import PodView\n"
    )
    assert reaching([probe], PROVIDERS) == {
        "test_x.py": ["harness.clusters", "harness.clusters.kind", "harness.clusters.local.cluster"]
    }


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


# The front doors and the version axis reach a kind of cluster through its interface and the registry only, never
# one kind's package: a kind's name is said in its own package alone (`make node-image` is kind's own command).
FRONT_DOORS = ("cli.py", "pytest_plugin.py", "probe_fixtures.py", "matrix.py", "janitor.py", "bisect.py")
ONE_KIND = ("harness.clusters.kind", "harness.clusters.local", "harness.clusters.existing")
KINDS_OWN_COMMAND = {"housekeeping.py": ["harness.clusters.kind.node_images"]}
# `cluster == "local"`, `kind.name != "kind"` and the like
NAMED = re.compile(r"""(?:cluster|name|kind)\s*[!=]=\s*["'](?:kind|local|existing)["']""")


def front_doors() -> list[Path]:
    return [REPO / "harness" / name for name in FRONT_DOORS] + sorted((REPO / "harness" / "commands").glob("*.py"))


def kind_packages(paths: list[Path]) -> dict[str, list[str]]:
    """The modules of one kind's package each file imports."""
    out = {}
    for path in paths:
        inside = {m for m in imported_modules(path) if any(m == p or m.startswith(f"{p}.") for p in ONE_KIND)}
        if inside:
            out[path.name] = sorted({".".join(m.split(".")[:4]) for m in inside})
    return out


def test_the_front_doors_know_no_kind_of_cluster_by_its_package() -> None:
    assert kind_packages(front_doors()) == KINDS_OWN_COMMAND


def test_no_front_door_branches_on_a_kinds_name() -> None:
    said = {path.name: NAMED.findall(path.read_text()) for path in front_doors()}
    assert {name: found for name, found in said.items() if found} == {}


def test_the_checks_see_a_kind_by_package_and_by_name(tmp_path: Path) -> None:
    door = tmp_path / "door.py"
    door.write_text("from harness.clusters.local.clusters import check_host\nif args.cluster == 'local':\n    pass\n")
    assert kind_packages([door]) == {"door.py": ["harness.clusters.local.clusters"]}
    assert NAMED.findall(door.read_text()) == ["cluster == 'local'"]
