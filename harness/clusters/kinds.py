"""Every kind of cluster the suite runs probes on, behind one interface: `ClusterKind`.

A kind owns everything that depends on it: the pytest options that ask for it, resolving what a user gave
(VERSION, IMAGE, a kubeconfig) into something runnable, checking the host and making the runnable ready (the
kind release that built a node image installed; a release built here), the provider that makes or reaches
the cluster of one run (harness/clusters/lifecycle.py drives it), re-attaching to a cluster another process
made (make probe PARALLEL's workers), and finding what interrupted runs left. A kind whose clusters are made
from a Kubernetes release also serves the version axis (`ReleaseAxis`: make matrix, bisect and radar).

Kinds are chosen once, from CLUSTER or a front door's options (harness/clusters/registry.py); the front doors
ask the chosen kind and never branch on its name. The resolved `Runnable` is handed on as it is: from make
probe to its pytest (`--cluster-spec`), so no process resolves a version twice.
"""

from __future__ import annotations

import argparse
import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from harness.base.versions import KubeVersion, pinned_patch

if TYPE_CHECKING:
    from harness.base.run import Run
    from harness.clusters.lifecycle import ClusterProvider, Note

Say = Callable[[str], None]
NODE_SHUTDOWN_ROLE = "gns"  # the role of the graceful-node-shutdown cluster beside a run's own (its name's suffix)
Option = Callable[[str], Any]  # a front door's option by its flag (pytest's config.getoption)
AddOption = Callable[..., object]  # declares one option (pytest's parser.addoption)


@dataclass(frozen=True)
class Request:
    """What a front door was asked for, in the same fields for every kind (empty when not given)."""

    version: str = ""  # VERSION
    image: str = ""  # IMAGE
    kubeconfig: str = ""  # KUBECONFIG_FILE
    context: str = ""  # CONTEXT
    cluster: str = ""  # CLUSTER as given ("" where the front door has none)
    kind_bin: str = "kind"  # the kind executable


@dataclass(frozen=True)
class Runnable:
    """A version resolved by its kind into what runs it, once, and handed on as JSON: the Kubernetes version it
    runs ("" where only the server will say) and what the kind needs (a node image and the kind that built it,
    a build's directory, a kubeconfig). `prepared` says the host was checked and the runnable made ready."""

    kind: str
    version: str
    facts: Mapping[str, str] = field(default_factory=dict)
    prepared: bool = False

    def with_facts(self, **facts: str) -> Runnable:
        """The same runnable, made ready, with these facts added."""
        return Runnable(self.kind, self.version, {**self.facts, **facts}, prepared=True)

    def to_json(self) -> str:
        return json.dumps(
            {"kind": self.kind, "version": self.version, "facts": dict(self.facts), "prepared": self.prepared},
            sort_keys=True,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> Runnable:
        data = json.loads(text)
        return cls(str(data["kind"]), str(data["version"]), dict(data["facts"]), bool(data.get("prepared")))


@dataclass
class Leftovers:
    """What `make clean` found and did for one kind: lines of the report, notes on what it could not look at
    (said on stderr), and what could not be removed."""

    lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class ClusterKind(ABC):
    """One kind of cluster: kind (a kind cluster from a node image), local (Kubernetes built here and run as
    processes) or existing (a cluster the user gives, never made or removed by the suite)."""

    name: ClassVar[str]  # CLUSTER's value, and the `cluster` of run.json and of the recordings' origins
    makes_clusters: ClassVar[bool] = True  # False: it reaches a cluster the user gives and never removes it
    restarts_apiserver: ClassVar[bool] = False  # RESTART_APISERVER_AFTER: the suite runs the control plane itself
    default_parallel: ClassVar[int | str] = 1  # PARALLEL when none is given ("auto": harness/reports/schedule.py)
    pytest_option: ClassVar[str]  # the pytest option that asks for this kind (--kind-version)
    described: ClassVar[str]  # what that option makes or reaches, in the plugin's messages ("a new kind cluster")
    has_release_axis: ClassVar[bool] = False  # it runs a given release: make matrix, bisect and radar (release_axis)
    # Why the graceful-node-shutdown probes cannot run on it (they are skipped with this); None: they can, on a
    # second cluster of this kind made for them (make probe PARALLEL starts their pytest beside its own).
    no_node_shutdown: ClassVar[str | None] = None

    # ----- asked for

    @abstractmethod
    def declare_options(self, add: AddOption) -> None:
        """Declare its own pytest options (besides the shared ones of harness/base/inputs.py)."""

    @abstractmethod
    def asked(self, option: Option) -> bool:
        """The pytest options ask for a cluster of this kind."""

    @abstractmethod
    def request(self, option: Option) -> Request:
        """What its pytest options ask for."""

    # ----- resolved and made ready

    @abstractmethod
    def resolve(self, request: Request, warn: Say) -> Runnable:
        """Check what the user gave and resolve it, in seconds and before anything slow; raises BadInput."""

    @abstractmethod
    def check_host(self, runnable: Runnable) -> None:
        """What a run needs of this host (or of the cluster), checked once before any probe and in seconds, with
        nothing installed or built: raises PrerequisiteMissing or BadInput. (pytest asks it where make probe did
        not prepare the runnable.)"""

    @abstractmethod
    def prepare(self, runnable: Runnable, say: Say, warn: Say) -> Runnable:
        """Check the host in seconds, then make the runnable ready (install, build); raises PrerequisiteMissing,
        BadInput or NotRunnable, and Interrupted (saying what stopping undid) on Ctrl-C."""

    # ----- one run's cluster

    @abstractmethod
    def provider(self, runnable: Runnable, run: Run, note: Note, role: str = "") -> ClusterProvider:
        """The provider of this run's cluster (`role` "gns": the graceful-node-shutdown one); readies what
        `prepare` has not (raises PrerequisiteMissing, NotRunnable or ClusterFailed)."""

    @abstractmethod
    def attach_options(self, provider: ClusterProvider) -> list[str]:
        """The pytest options with which another process re-attaches to the cluster `provider` made."""

    @abstractmethod
    def attached(self, option: Option) -> bool:
        """The pytest options re-attach to a cluster of this kind that another process made."""

    @abstractmethod
    def attach(self, kubeconfig: Path, context: str, option: Option, run_record: Path) -> ClusterProvider:
        """A provider that reaches the cluster of `context`, made by another process (never creates or removes)."""

    # ----- what interrupted runs left

    @abstractmethod
    def leftovers(self, request: Request) -> Leftovers:
        """Find and remove what interrupted runs of this kind left (make clean)."""

    # ----- the version axis (make matrix, bisect, radar): an ability of kinds that run a given release

    def release_axis(self, args: argparse.Namespace, tools: Path) -> ReleaseAxis | None:
        """This kind's version axis for one command's options (`tools`: where builds go), or None."""
        return None


@dataclass(frozen=True)
class PlannedVersion:
    """What a requested version resolves to on the version axis, and why, for any kind."""

    requested: str  # "1.27" or "1.27.3"
    release: str  # "1.27.16": what runs (a minor's pinned patch, or the nearest one that can be built)
    note: str = ""  # said when the release is not the one the request names


def plan_versions(requested: Sequence[str], served: Callable[[str], bool]) -> list[PlannedVersion]:
    """Each requested version as the release to run: a minor takes its pinned patch (the same on every kind); when
    that release cannot be made runnable (`served`: the Go module proxy serves its module), the nearest earlier
    patch that can (then later), said in the note. Raises VersionError for a version that is not a version or a
    minor without any pinned image."""
    plan = []
    for text in requested:
        parsed = KubeVersion.requested(text)
        release = pinned_patch(text.lstrip("v"))
        if served(release):
            plan.append(PlannedVersion(text, release))
            continue
        patch = KubeVersion.parse(release).version.micro
        nearby = [p for p in range(patch - 1, -1, -1)] + list(range(patch + 1, patch + 6))
        for other in (f"{parsed.minor}.{p}" for p in nearby):
            if served(other):
                plan.append(PlannedVersion(text, other, f"{release} is not served by the Go module proxy"))
                break
        else:
            plan.append(PlannedVersion(text, release, f"{release}: no patch of {parsed.minor} is served nearby"))
    return plan


@dataclass
class Readied:
    """A release made runnable on the version axis: its build's record where one was built or reused (with
    "reused": True when nothing was compiled), or why it cannot run (`why_not`, one line: "could not be built: ...",
    and the error as it was raised)."""

    release: str
    record: dict[str, Any] = field(default_factory=dict)
    why_not: str = ""
    error: str = ""


class ReleaseAxis(ABC):
    """What a kind whose clusters run one Kubernetes release gives the version axis (make matrix, bisect, radar),
    for one command's options: which releases, how one is made runnable, and how `python -m harness probe` runs
    it. `ClusterKind.release_axis` makes it; a kind without one (existing) has no version axis."""

    one_at_a_time: ClassVar[bool] = False  # two of its clusters cannot share a host (a matrix then ignores JOBS)
    builds_here: ClassVar[bool] = False  # its releases are built on this host (Go; the matrix builds ahead)

    @abstractmethod
    def default_versions(self) -> list[str]:
        """The versions a matrix runs when none are given."""

    @abstractmethod
    def matrix_refusal(self) -> str | None:
        """Why this kind's matrix does not take the command's options (one sentence), or None."""

    @abstractmethod
    def releases(self, requested: list[str]) -> list[str]:
        """Each requested version as the release it names on this kind, in seconds (nothing is asked of the Go
        module proxy); raises BadInput for one it cannot run."""

    @abstractmethod
    def plan(self, requested: list[str]) -> list[PlannedVersion]:
        """Each requested version as the release that runs (may ask the Go module proxy which it serves)."""

    @abstractmethod
    def check_host(self, one_at_a_time: bool) -> None:
        """What this host must give every release's run, checked once before the first, in seconds; raises
        PrerequisiteMissing."""

    @abstractmethod
    def candidates(self, good: str, bad: str) -> list[str]:
        """The releases a bisection tries from GOOD to BAD, both included; raises VersionError."""

    @abstractmethod
    def bisect_refusal(self) -> str | None:
        """Why this kind does not bisect with the command's options (one sentence), or None."""

    @abstractmethod
    def unbuildable(self, release: str) -> str:
        """Why a release cannot be made runnable here, known in seconds before any build ("" when it may be)."""

    @abstractmethod
    def ready(self, release: str, stop: threading.Event | None = None, quiet: bool = False) -> Readied:
        """Make one release runnable (built or its node image made, once; reused after). `stop` ends a build on a
        background thread; `quiet`: no progress lines. Raises Interrupted on Ctrl-C."""

    @abstractmethod
    def is_ready(self, release: str) -> bool:
        """The release runs without anything being built."""

    @abstractmethod
    def probe_args(self, release: str) -> list[str]:
        """`python -m harness probe`'s options that run this release on this kind."""

    @abstractmethod
    def ran_on(self, run_record: Mapping[str, Any]) -> dict[str, Any]:
        """What a run's record (run.json) says its cluster ran, for a bisection's record."""

    @abstractmethod
    def newest_baseline(self, newest_release: str) -> str:
        """The release the radar probes as its fresh baseline, given the newest one the proxy lists."""
