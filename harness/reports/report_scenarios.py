"""The probes as a reader of the matrix knows them: a title from a probe's name, the scenario from its docstring (read
without importing its module), and its place in the report (its family's order, then its line in the module).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from harness.base import families

# How Kubernetes spells the words a probe's name writes in lower case.
WORDS = {
    "daemonset": "DaemonSet",
    "statefulset": "StatefulSet",
    "replicaset": "ReplicaSet",
    "sigterm": "SIGTERM",
    "sigkill": "SIGKILL",
    "prestop": "preStop",
    "onfailure": "OnFailure",
}


@dataclass(frozen=True)
class Scenario:
    """A probe as a reader knows it: a title from its name and the scenario from its docstring."""

    probe: str
    family: str
    title: str
    text: str
    order: tuple[int, str, int]


@cache
def _probe_functions(path: Path) -> dict[str, tuple[int, str]]:
    """A probe module's functions: name -> (line, docstring), read without importing it."""
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, ValueError):
        return {}
    return {
        node.name: (node.lineno, ast.get_docstring(node) or "")
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
    }


def scenario(probe: str, family: str) -> Scenario:
    """The probe's title (its name) and scenario (its docstring's first paragraph)."""
    module, _, function = probe.partition("::")
    function = function.split("[", 1)[0]
    try:  # the family's folder says where the family comes in the report, and holds the module
        folder = families.family(family)
        rank, line, doc = folder.order, *_probe_functions(folder.directory / module).get(function, (10**6, ""))
    except families.FamilyError:  # a record of a family this checkout does not have: last
        rank, line, doc = 10**6, 10**6, ""
    title = " ".join(WORDS.get(word, word) for word in function.removeprefix("test_").split("_"))
    text = " ".join(doc.split("\n\n", 1)[0].split())
    return Scenario(probe, family, title[:1].upper() + title[1:], text, (rank, family, line))
