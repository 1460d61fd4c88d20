"""An existing cluster's kubeconfig, checked before the suite uses it: one clear sentence for each way it can be wrong.

The file is only read, never written. The check is the shape the official client needs (YAML, a Config with
named contexts whose cluster and user exist); it runs no credential plugin and contacts no server, so it is
instant and has no side effect. What it cannot see (a server that does not answer, a token that expired)
shows when the suite first asks the server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

SHAPE = "a kubeconfig is YAML with kind: Config and lists of clusters, users and contexts"


def kubeconfig_problem(path: str, context: str) -> str | None:
    """Why the suite cannot use `context` of the kubeconfig at `path`, or None when it can."""
    if not context:
        return (
            "--kubeconfig needs an explicit --context (CONTEXT=...): without one the suite acts only on clusters "
            "it creates itself"
        )
    data, problem = _load(path)
    if problem is not None:
        return problem
    contexts = {c["name"]: c.get("context") for c in data.get("contexts") or [] if isinstance(c, dict) and "name" in c}
    if context not in contexts:
        return f"context {context!r} is not in {path}; it has: {', '.join(map(str, contexts)) or 'none'}"
    entry = contexts[context]
    if not isinstance(entry, dict):
        return f"context {context!r} in {path} names no cluster and user"
    for kind in ("cluster", "user"):
        names = [c.get("name") for c in data.get(f"{kind}s") or [] if isinstance(c, dict)]
        if entry.get(kind) not in names:
            return f"context {context!r} in {path} uses {kind} {entry.get(kind)!r}, which is not in its {kind}s"
    return None


def _load(path: str) -> tuple[dict[str, Any], str | None]:
    """The file as a mapping, or why it is not a kubeconfig (missing, unreadable, not text, not YAML ...)."""
    file = Path(path).expanduser()
    if not file.exists():
        return {}, f"kubeconfig {path} not found"
    if file.is_dir():
        return {}, f"kubeconfig {path} is a directory, not a file"
    try:
        text = file.read_bytes().decode("utf-8")
    except OSError as err:
        return {}, f"cannot read kubeconfig {path}: {err.strerror or err}"
    except UnicodeDecodeError:
        return {}, f"{path} is not a kubeconfig: it is not a text file ({SHAPE})"
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        where = getattr(err, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        return {}, f"{path} is not a kubeconfig: it is not valid YAML{line} ({SHAPE})"
    if not isinstance(data, dict) or not isinstance(data.get("contexts"), list):
        return {}, f"{path} is not a kubeconfig: it has no list of contexts ({SHAPE})"
    if data.get("kind", "Config") != "Config":
        return {}, f"{path} is not a kubeconfig: its kind is {data.get('kind')!r}, not Config"
    return data, None
