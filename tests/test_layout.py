"""The layering docs/developing.md describes: harness/'s packages each import only those below them, probes and the
probe core know no cluster, the pytest plugin does not reach into the make front door, and the front doors know no
one kind of cluster."""

from __future__ import annotations

import ast
import re
import tomllib
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROVIDERS = ("harness.clusters", "harness.nodeimage", "harness.doors")
# harness/'s packages from the ground up: each imports only its own and those of the layers below it.
LAYERS = (("base",), ("core", "gobuild"), ("axis",), ("nodeimage",), ("clusters",), ("reports",), ("doors",))


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports (`from harness.clusters import kind` counts as harness.clusters.kind)."""
    return set(imported_by(path.read_text()))


@cache
def imported_by(source: str) -> frozenset[str]:
    """Every module a module's text imports; parsed once for the checks below, which read each module 3-4 times
    (1.8 s of a worker's CPU before)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return frozenset(found)


def reaching(paths: list[Path], forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    out = {}
    for path in paths:
        bad = sorted(m for m in imported_modules(path) if m.startswith(forbidden))
        if bad:
            out[path.name] = bad
    return out


def test_probes_and_the_probe_core_import_no_cluster_provider() -> None:
    core = sorted((REPO / "harness" / "core").glob("*.py"))
    paths = sorted(REPO.glob("probes/*/test_*.py")) + core
    assert len(core) > 5 and len(paths) > len(core)  # the core and the families were found
    assert reaching(paths, PROVIDERS) == {}


def test_the_pytest_plugin_does_not_import_the_make_front_door() -> None:
    plugin = [REPO / "harness" / "doors" / "pytest_plugin.py", *sorted((REPO / "harness/doors/plugin").glob("*.py"))]
    assert len(plugin) > 5
    assert reaching(plugin, ("harness.doors.cli", "harness.doors.commands")) == {}


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    probe = tmp_path / "test_x.py"
    probe.write_text(
        "from harness.clusters import kind\nimport harness.clusters.local.cluster\n"
        "from harness.core.views import PodView\n"
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


def upward(packages: dict[str, list[Path]], root: Path = REPO) -> dict[str, list[str]]:
    """Each file's imports of a package in a higher layer than its own (or of one no layer names)."""
    layer = {name: depth for depth, names in enumerate(LAYERS) for name in names}
    out = {}
    for package, paths in packages.items():
        for path in paths:
            above = sorted(
                m
                for m in imported_modules(path)
                if m.startswith("harness.") and layer.get(m.split(".")[1], len(LAYERS)) > layer[package]
            )
            if above:
                out[path.relative_to(root).as_posix()] = above
    return out


def test_each_package_of_the_harness_imports_only_those_below_it() -> None:
    packages = {name: sorted((REPO / "harness" / name).rglob("*.py")) for names in LAYERS for name in names}
    assert all(packages.values())
    assert upward(packages) == {}
    flat = sorted(p.name for p in (REPO / "harness").glob("*.py"))
    assert flat == ["__init__.py", "__main__.py"]  # every module is in the package of its concern


def test_the_layer_check_sees_an_import_from_above(tmp_path: Path) -> None:
    (tmp_path / "harness" / "core").mkdir(parents=True)
    below = tmp_path / "harness" / "core" / "x.py"
    below.write_text("from harness.reports import report\nfrom harness.base import run\n")
    assert upward({"core": [below]}, tmp_path) == {"harness/core/x.py": ["harness.reports", "harness.reports.report"]}


def import_cycles(root: Path) -> list[list[str]]:
    """The groups of modules under `root`/harness that import each other round (a local import counts too)."""
    files = {}
    for path in sorted((root / "harness").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {
        name: sorted(m for m in imported_modules(path) if m in files and m != name) for name, path in files.items()
    }
    reach: dict[str, set[str]] = {}
    for start in graph:  # what each module reaches, however far
        seen, todo = set(), list(graph[start])
        while todo:
            if (module := todo.pop()) not in seen:
                seen.add(module)
                todo.extend(graph[module])
        reach[start] = seen
    groups = {
        tuple(sorted({m for m in reach[name] if name in reach[m]} | {name})) for name in graph if name in reach[name]
    }
    return [list(group) for group in sorted(groups)]


def test_no_module_of_the_harness_imports_itself_back() -> None:
    assert len(list((REPO / "harness").rglob("*.py"))) > 50 and import_cycles(REPO) == []


def test_the_cycle_check_sees_two_modules_importing_each_other(tmp_path: Path) -> None:
    (tmp_path / "harness" / "reports").mkdir(parents=True)
    (tmp_path / "harness" / "reports" / "a.py").write_text("from harness.reports import b\n")
    (tmp_path / "harness" / "reports" / "b.py").write_text("def f() -> None:\n    from harness.reports.a import f\n")
    (tmp_path / "harness" / "reports" / "c.py").write_text("from harness.reports import a\n")
    assert import_cycles(tmp_path) == [["harness.reports.a", "harness.reports.b"]]


# The front doors and the version axis reach a kind of cluster through its interface and the registry only, never
# one kind's package: a kind's name is said in its own package alone (`make node-image` is kind's own command).
FRONT_DOORS: tuple[str, ...] = ("doors/cli.py", "doors/pytest_plugin.py")
FRONT_DOORS += tuple(f"doors/plugin/{p.name}" for p in sorted((REPO / "harness/doors/plugin").glob("*.py")))
FRONT_DOORS += ("axis/matrix.py", "axis/bisect.py", "axis/radar.py", "clusters/janitor.py")
ONE_KIND = ("harness.clusters.kind", "harness.clusters.local", "harness.clusters.existing")
KINDS_OWN_COMMAND = {"housekeeping.py": ["harness.clusters.kind.node_images"]}
# `cluster == "local"`, `kind.name != "kind"` and the like
NAMED = re.compile(r"""(?:cluster|name|kind)\s*[!=]=\s*["'](?:kind|local|existing)["']""")


def front_doors() -> list[Path]:
    return [REPO / "harness" / name for name in FRONT_DOORS] + sorted((REPO / "harness/doors/commands").glob("*.py"))


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


def test_one_module_starts_a_replay() -> None:
    """make atlas, coverage, upgrade and radar replay the recordings through harness/axis/replay.py alone."""
    starting = [
        path.relative_to(REPO).as_posix()
        for path in sorted((REPO / "harness").rglob("*.py"))
        if "subprocess" in (text := path.read_text()) and '"--replay"' in text
    ]
    assert starting == ["harness/axis/replay.py"]


# kind's node images and what is kind's own on this host, however spelled: the pinned table and kindest/node, node
# images (their tags plp-node:..., their records and work under .tools/), kind's engine, kind's packages
KINDS_OWN = re.compile(
    r"node_images\.yaml|kindest|NodeImage|[Nn]ode[ _-]images?|NODE_IMAGE|plp-node|engine/|\bENGINE\b|engine\.py"
    r"|harness\.(?:clusters|nodeimage)"
)


def test_nothing_the_harness_stands_on_speaks_of_kinds_node_images() -> None:
    """kind's pinned images (harness/node_images.yaml, kindest/node) are read in kind's package, the node images the
    suite builds are named by harness/nodeimage/tags.py, kind's engine by its package; base/ names none of them (in
    code or in words), and axis/pinned.py only the releases they run."""
    base = sorted((REPO / "harness" / "base").glob("*.py"))
    said = {p.name: KINDS_OWN.findall(p.read_text()) for p in base}
    assert len(base) > 5 and {name: found for name, found in said.items() if found} == {}


def test_the_check_sees_a_node_image_said_in_base() -> None:
    said = 'NODE_IMAGES = TOOLS / "node-images"  # records of Node images\nfrom harness.clusters.kind import engine\n'
    assert KINDS_OWN.findall(said) == ["NODE_IMAGE", "node-images", "Node images", "harness.clusters"]


# `cluster.startswith("local")`, `p != "kind"` and the like: what a record ran on is read once, in core/records.py.
SAID_KIND = re.compile(r"""(?:startswith\(|[!=]=\s*)["'](?:kind|local|existing)["']""")


def test_the_reports_and_the_version_axis_never_branch_on_a_kinds_name() -> None:
    """A record's origin says itself what it ran on (core/records.py origin_of), so report, coverage, upgrade and
    the runs across releases read it without comparing a kind's name."""
    paths = sorted((REPO / "harness" / "reports").glob("*.py")) + sorted((REPO / "harness" / "axis").glob("*.py"))
    said = {path.name: SAID_KIND.findall(path.read_text()) for path in paths}
    assert len(paths) > 10 and {name: found for name, found in said.items() if found} == {}
    assert SAID_KIND.findall('if cluster.startswith("local") or p != "kind":') == ['startswith("local"', '!= "kind"']


def test_every_module_marked_mostly_waits_is_found_by_the_scheduler() -> None:
    """The pytest-xdist scheduler (tests/conftest.py) reads a module's text for its `mostly_waits` mark, not its
    markers: a module naming the mark in another way would be scheduled as any other."""
    from tests.conftest import MOSTLY_WAITS

    modules = [p for p in sorted(Path(__file__).parent.glob("test_*.py")) if p != Path(__file__)]
    naming = [p for p in modules if "mark.mostly_waits" in p.read_text()]
    assert len(naming) >= 5
    assert [p.name for p in naming if not MOSTLY_WAITS.search(p.read_text())] == []
