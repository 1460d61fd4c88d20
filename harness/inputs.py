"""What a user gives the suite, checked once for both front doors: `make ...` (harness/cli.py refuses it with
`error: bad input: ...`, exit 2) and pytest (harness/pytest_plugin.py: a usage error, exit 4).

Each check raises BadInput with one sentence that names the make variable and the option; the shape of a
kubeconfig itself is harness/kubeconfig.py's.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path

from harness.kubeconfig import kubeconfig_problem
from harness.local.build import release_text
from harness.manifest_check import check_manifests
from harness.versions import KubeVersion, NodeImage, VersionError, resolve_image


class BadInput(ValueError):
    """An input neither front door runs with; the message says what is wrong."""


def count(variable: str) -> Callable[[str], int]:
    """An argparse type for a count of 1 or more; the message names the make variable too."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"{variable} must be a whole number of 1 or more, not {text!r}")
        return value

    return parse


def seconds(variable: str) -> Callable[[str], float]:
    """An argparse type for a number of seconds above 0; the message names the make variable too."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = 0.0
        if not 0 < value < 3600:
            raise argparse.ArgumentTypeError(f"{variable} must be a number of seconds above 0, not {text!r}")
        return value

    return parse


def check_apiserver_restart(after_s: float | None, local_cluster: bool) -> None:
    """RESTART_APISERVER_AFTER (--restart-apiserver-after) only where the suite runs the control plane itself."""
    if after_s is not None and not local_cluster:
        raise BadInput(
            "RESTART_APISERVER_AFTER (--restart-apiserver-after) restarts the API server of a local cluster the "
            "suite makes: give CLUSTER=local (--local-version)"
        )


def check_run_dir(run_dir: str | Path) -> None:
    """Run records can be written under `run_dir` (created if need be)."""
    try:
        Path(run_dir).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=run_dir):
            pass
    except OSError as err:
        raise BadInput(f"the run directory {run_dir} is not writable: {err.strerror or err}") from err


def check_existing_cluster(kubeconfig: str | None, context: str | None) -> None:
    """An existing cluster is named by a kubeconfig the suite can read and an explicit context in it."""
    if context and not kubeconfig:
        raise BadInput("--context (CONTEXT) names a context of --kubeconfig (KUBECONFIG_FILE), which is not given")
    if kubeconfig and (problem := kubeconfig_problem(kubeconfig, context or "")):
        raise BadInput(problem)


def local_release(version: str) -> str:
    """The release a local cluster is built from, as `v1.27.3`."""
    try:
        return release_text(version)
    except VersionError as err:
        raise BadInput(str(err)) from err


def kind_image(version: str | None, image: str | None) -> NodeImage:
    """The kind node image for a version (its pinned image) or an image reference."""
    try:
        return resolve_image(version, image)
    except VersionError as err:
        raise BadInput(str(err)) from err


def check_manifests_for(version: KubeVersion) -> str:
    """Every manifest is valid for this version's schema; returns what was checked."""
    problems, checked = check_manifests(version)
    if problems:
        listed = "\n  ".join(str(p) for p in problems)
        raise BadInput(f"manifests invalid for Kubernetes {version}:\n  {listed}")
    return checked
