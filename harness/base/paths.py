"""Where the suite keeps what it installs and builds, and the names it gives what it makes: the `.tools/` folder,
the runs, and the clusters' names. What is one kind of cluster's own under `.tools/` (what it installs, the images
it builds) its own package names.

    .tools/                       never in git; `make clean` leaves it (a cache)
      go/                         Go toolchains and the module cache of the builds
      kubernetes/v<X.Y.Z>/        Kubernetes built from its Go modules (harness/gobuild/)
      ...                         what each kind of cluster installs or builds for itself (its package says)
"""

from __future__ import annotations

from pathlib import Path

from harness.base.run import safe_name

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / ".tools"
RUNS = REPO / "runs"

CLUSTER_PREFIX = "plp-"  # every cluster the suite makes; `make clean` removes only these


def cluster_name(minor: str, run_id: str, role: str = "") -> str:
    """`plp-<minor>-<last 4 of the run id>[-<role>]`: the name of a cluster a run makes (role "gns": the
    graceful-node-shutdown cluster). `minor` is made name-safe ('1.27' -> '1-27')."""
    return f"{CLUSTER_PREFIX}{safe_name(minor)}-{run_id[-4:]}{f'-{role}' if role else ''}"


def in_checkout(path: Path, repo: Path = REPO) -> str:
    """How a committed record names a path: relative to the checkout ("runs/bisect-…/1.28.4"), so a record means
    the same on every clone; a path outside the checkout (a --run-dir elsewhere) stays as given."""
    resolved = path.resolve()
    try:
        return str(resolved.relative_to(repo.resolve()))
    except ValueError:
        return str(path)


def from_record(text: str, repo: Path = REPO) -> Path:
    """A path a committed record names, as a path here: relative ones are under the checkout; an absolute one (old
    records were written with the recording machine's absolute paths) is kept, though it may
    name nothing on this machine."""
    path = Path(text)
    return path if path.is_absolute() else repo / path
