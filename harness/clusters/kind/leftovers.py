"""What interrupted runs left of kind (make clean): the clusters named `plp-…` (the names the suite gives:
`plp-<minor>-<run>`), deleted with kind; a cluster of any other name is never touched."""

from __future__ import annotations

import os
from pathlib import Path

from harness.base.paths import CLUSTER_PREFIX, TOOLS
from harness.base.process import Runner, run_command
from harness.clusters.kinds import Leftovers


def installed_kind(tools: Path = TOOLS) -> str | None:
    """A kind the suite installed or built (`.tools/kind-<release>`) when none is on PATH: any release lists and
    deletes clusters (kind finds them by its container labels)."""
    found = [p for p in tools.glob("kind-v*") if p.is_file() and os.access(p, os.X_OK) and p.suffix != ".json"]
    return str(max(found, key=lambda p: p.stat().st_mtime)) if found else None


def clean_kind_clusters(kind_bin: str = "kind", runner: Runner = run_command) -> Leftovers:
    """Delete every kind cluster the suite named; what was deleted, left alone, and what failed."""
    found = Leftovers()
    listing = runner([kind_bin, "get", "clusters"], 60)
    if listing.returncode != 0:
        found.errors.append(f"kind get clusters failed: {listing.output}")
        return found
    deleted, left = [], []
    for name in (line.strip() for line in listing.stdout.splitlines()):
        if not name:
            continue
        if not name.startswith(CLUSTER_PREFIX):
            left.append(name)
            continue
        done = runner([kind_bin, "delete", "cluster", "--name", name], 180)
        if done.returncode == 0:
            deleted.append(name)
        else:
            found.errors.append(f"kind delete cluster --name {name}: {done.output}")
    found.lines.append(f"kind clusters deleted: {', '.join(deleted) or 'none'}")
    if left:
        found.lines.append(f"kind clusters left alone (not the suite's): {', '.join(left)}")
    return found
