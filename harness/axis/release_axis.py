"""The version axis of a kind of cluster that runs a given Kubernetes release: what make matrix, bisect and radar
ask of it (`ReleaseAxis`, made by `ClusterKind.release_axis`), and the releases they plan and make runnable."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from packaging.version import Version

from harness.axis.pinned import pinned_minors, pinned_patch
from harness.axis.releases import bisect_releases
from harness.base.errors import BadInput
from harness.base.run import safe_name
from harness.base.versions import KubeVersion, Release, VersionError


@dataclass(frozen=True)
class PlannedVersion:
    """What a requested version resolves to on the version axis, and why, for any kind."""

    requested: Release  # 1.27 or 1.27.3, as the front door read it
    release: Release  # 1.27.16: what runs (a minor's pinned patch, or the nearest one that can be built)
    note: str = ""  # said when the release is not the one the request names
    runtime: str = ""  # the runtime it runs on, as a matrix entry names it after the version; "" the kind's own

    @property
    def name(self) -> str:
        """The release, and its runtime when one was named: '1.27.16', '1.27.16:containerd=v2.3.4'."""
        return f"{self.release}:{self.runtime}" if self.runtime else str(self.release)

    @property
    def folder(self) -> str:
        """The name of its run directory and log: '1.27.16', '1.27.16-containerd-v2-3-4'."""
        return f"{self.release}-{safe_name(self.runtime)}" if self.runtime else str(self.release)


def matrix_entry(entry: str) -> tuple[str, str]:
    """A make matrix entry as (version, runtime): '1.27.16' -> ('1.27.16', ''), '1.27.16:containerd=2.3.4' ->
    ('1.27.16', 'containerd=2.3.4'); BadInput in one line for one that is neither."""
    version, colon, runtime = entry.partition(":")
    if colon and (not version or not runtime or ":" in runtime):
        raise BadInput(
            f"VERSIONS entry {entry!r} is not VERSION or VERSION:RUNTIME (e.g. 1.27.16 or 1.27.16:containerd=2.3.4)"
        )
    return version, runtime


def patch_of(minor: str, patch: int) -> Release:
    """The patch release `patch` of a minor ('1.27', 3 -> 1.27.3), made from numbers: no text is read."""
    return Release(KubeVersion(Version(f"{minor}.{patch}"), f"{minor}.{patch}"))


def plan_versions(requested: Sequence[Release], served: Callable[[Release], bool]) -> list[PlannedVersion]:
    """Each requested version as the release to run: a minor takes its pinned patch (the same on every kind); when
    that release cannot be made runnable (`served`: the Go module proxy serves its module), the nearest earlier
    patch that can (then later), said in the note. Raises VersionError for a minor without any pinned image."""
    plan = []
    for wanted in requested:
        release = pinned_patch(wanted)
        if served(release):
            plan.append(PlannedVersion(wanted, release))
            continue
        patch = release.version.micro
        nearby = [p for p in range(patch - 1, -1, -1)] + list(range(patch + 1, patch + 6))
        for other in (patch_of(wanted.minor, p) for p in nearby):
            if served(other):
                plan.append(PlannedVersion(wanted, other, f"{release} is not served by the Go module proxy"))
                break
        else:
            plan.append(PlannedVersion(wanted, release, f"{release}: no patch of {wanted.minor} is served nearby"))
    return plan


@dataclass
class Readied:
    """A release made runnable on the version axis: its build's record where one was built or reused (with
    "reused": True when nothing was compiled), or why it cannot run (`why_not`, one line: "could not be built: ...",
    and the error as it was raised)."""

    release: Release
    record: dict[str, Any] = field(default_factory=dict)
    why_not: str = ""
    error: str = ""


class ReleaseAxis(ABC):
    """What a kind whose clusters run one Kubernetes release gives the version axis (make matrix, bisect, radar),
    for one command's options: which releases, how one is made runnable, and how `python -m harness probe` runs
    it. `RunsReleases.release_axis` makes it (harness/clusters/kinds.py); a kind without one (existing) has no
    version axis. It writes `probe_args`; every other member has a default: the pinned minors and their pinned
    patches, every published release between two, each runnable as it is, taking every option."""

    one_at_a_time: ClassVar[bool] = False  # two of its clusters cannot share a host (a matrix then ignores JOBS)
    builds_here: ClassVar[bool] = False  # its releases are built on this host (Go; the matrix builds ahead)
    runtime: str = ""  # the runtime its releases run on, as a matrix entry names it ("" the kind's own)

    @abstractmethod
    def probe_args(self, release: Release) -> list[str]:
        """`python -m harness probe`'s options that run this release on this kind."""

    def default_versions(self) -> list[str]:
        """The versions a matrix runs when none are given."""
        return pinned_minors()

    def matrix_refusal(self) -> str | None:
        """Why this kind's matrix does not take the command's options (one sentence), or None."""
        return None

    def releases(self, requested: list[Release]) -> list[Release]:
        """Each requested version as the release it names on this kind, in seconds (nothing is asked of the Go
        module proxy); raises BadInput for one it cannot run."""
        try:
            return [pinned_patch(version) for version in requested]
        except VersionError as err:
            raise BadInput(str(err)) from err

    def plan(self, requested: list[Release]) -> list[PlannedVersion]:
        """Each requested version as the release that runs (may ask the Go module proxy which it serves)."""
        return plan_versions(requested, served=lambda release: True)

    def check_host(self, one_at_a_time: bool) -> None:
        """What this host must give every release's run, checked once before the first, in seconds; raises
        PrerequisiteMissing."""
        return None  # nothing to check

    def candidates(self, good: Release, bad: Release) -> list[Release]:
        """The releases a bisection tries from GOOD to BAD, both included; raises VersionError."""
        return bisect_releases(good, bad)

    def bisect_refusal(self) -> str | None:
        """Why this kind does not bisect with the command's options (one sentence), or None."""
        return None

    def unbuildable(self, release: Release) -> str:
        """Why a release cannot be made runnable here, known in seconds before any build ("" when it may be)."""
        return ""

    def ready(self, release: Release, stop: threading.Event | None = None, quiet: bool = False) -> Readied:
        """Make one release runnable (built or its node image made, once; reused after). `stop` ends a build on a
        background thread; `quiet`: no progress lines. Raises Interrupted on Ctrl-C."""
        return Readied(release)

    def is_ready(self, release: Release) -> bool:
        """The release runs without anything being built."""
        return True

    def ran_on(self, run_record: Mapping[str, Any]) -> dict[str, Any]:
        """What a run's record (run.json) says its cluster ran, for a bisection's record."""
        return {}

    def runs_as(self, release: Release) -> str:
        """What a run of this release on this axis is, in words that name it once: two matrix entries that read the
        same run the same ("Kubernetes 1.27.16", "Kubernetes 1.27.16:debian")."""
        return f"Kubernetes {release}:{self.runtime}" if self.runtime else f"Kubernetes {release}"

    def on_runtime(self, runtime: str) -> ReleaseAxis | None:
        """This axis with its releases on another runtime, as a make matrix entry names it after its version
        (VERSIONS="1.27.16:debian"; "" is this axis); BadInput in one line for a runtime the kind does not know,
        None when the kind runs each release on one runtime only."""
        return None if runtime else self

    def newest_baseline(self, newest_release: Release) -> Release:
        """The release the radar probes as its fresh baseline, given the newest one the proxy lists."""
        return newest_release
