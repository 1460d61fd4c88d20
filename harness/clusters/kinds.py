"""Every kind of cluster the suite runs probes on, behind one interface: `ClusterKind`, a base with defaults.

A kind writes three members: its `name`, `resolve` (what a user gave, VERSION or a kubeconfig, into a `Runnable`)
and `provider` (what makes or reaches one run's cluster, driven by harness/clusters/lifecycle.py; its own defaults
are `ProviderDefaults` there). Everything else has a default it may override: its pytest option (--NAME-version),
what that option asks for, checking the host and making the runnable ready (nothing to do), PARALLEL's default.

What only some kinds can do is an ability of its own, a protocol the front doors look up with isinstance and never
by the kind's name, as kind's provider interface and e2e-framework keep theirs apart:
- `ShutsNodesDown`: a second cluster on which a node shuts down gracefully (the node-shutdown probes; without it
  they are skipped with the kind's `no_node_shutdown`);
- `Reattaches`: more than a kubeconfig for the processes that re-attach to a cluster another one made (make probe
  PARALLEL's workers): the nodes read, the control plane restarted (without it they reach the cluster by its
  kubeconfig, with the origin its maker recorded);
- `LeavesLeftovers`: what interrupted runs left, found and removed by make clean;
- `RunsReleases`: its clusters run a given Kubernetes release, built or made runnable here: the version axis
  (make matrix, bisect and radar, harness/axis/release_axis.py).

Kinds are chosen once, from CLUSTER or a front door's options (harness/clusters/registry.py); the front doors ask
the chosen kind and never branch on its name. The resolved `Runnable` is handed on as it is: from make probe to its
pytest (`--cluster-spec`), so no process resolves a version twice.
"""

from __future__ import annotations

import argparse
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from harness.base import inputs
from harness.base.versions import Release

if TYPE_CHECKING:
    from harness.axis.release_axis import ReleaseAxis
    from harness.base.run import Run
    from harness.clusters.lifecycle import ClusterProvider, Note

Say = Callable[[str], None]
NODE_SHUTDOWN_ROLE = "gns"  # the role of the graceful-node-shutdown cluster beside a run's own (its name's suffix)
Option = Callable[[str], Any]  # a front door's option by its flag (pytest's config.getoption)
AddOption = Callable[..., object]  # declares one option (pytest's parser.addoption)


@dataclass(frozen=True)
class Request:
    """What a front door was asked for, in the same fields for every kind (empty when not given)."""

    version: Release | None = None  # VERSION, read once by the front door that was given it
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
    version: Release | None
    facts: Mapping[str, str] = field(default_factory=dict)
    prepared: bool = False

    def with_facts(self, **facts: str) -> Runnable:
        """The same runnable, made ready, with these facts added."""
        return Runnable(self.kind, self.version, {**self.facts, **facts}, prepared=True)

    def to_json(self) -> str:
        return json.dumps(
            {
                "kind": self.kind,
                "version": self.version.spelled if self.version else "",  # its canonical spelling, never a tag
                "facts": dict(self.facts),
                "prepared": self.prepared,
            },
            sort_keys=True,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> Runnable:
        data = json.loads(text)
        version = Release.spelled_as(str(data["version"])) if data["version"] else None  # read back as written
        return cls(str(data["kind"]), version, dict(data["facts"]), bool(data.get("prepared")))


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
    pytest_option: ClassVar[str]  # the pytest option that asks for this kind (default --NAME-version)
    described: ClassVar[str]  # what that option makes or reaches, in the plugin's messages ("a new NAME cluster")
    makes_clusters: ClassVar[bool] = True  # False: it reaches a cluster the user gives and never removes it
    restarts_apiserver: ClassVar[bool] = False  # RESTART_APISERVER_AFTER: the suite runs the control plane itself
    default_parallel: ClassVar[int | str] = 1  # PARALLEL when none is given ("auto": harness/doors/schedule.py)
    no_node_shutdown: ClassVar[str]  # why the node-shutdown probes are skipped on a kind without ShutsNodesDown

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in vars(cls):
            return  # (an abstract layer between this base and the kinds)
        defaults = {
            "pytest_option": f"--{cls.name}-version",
            "described": f"a new {cls.name} cluster",
            "no_node_shutdown": f"live probe: graceful node shutdown needs a second cluster whose node shuts down, "
            f"which {cls.name} clusters cannot give",
        }
        for attribute, default in defaults.items():
            if not hasattr(cls, attribute):
                setattr(cls, attribute, default)

    # ----- what a kind must write

    @abstractmethod
    def resolve(self, request: Request, warn: Say) -> Runnable:
        """Check what the user gave and resolve it, in seconds and before anything slow; raises BadInput."""

    @abstractmethod
    def provider(self, runnable: Runnable, run: Run, note: Note) -> ClusterProvider:
        """The provider of this run's cluster; readies what `prepare` has not (raises PrerequisiteMissing,
        NotRunnable or ClusterFailed)."""

    # ----- asked for: its pytest option, a VERSION, unless it says otherwise

    def declare_options(self, add: AddOption) -> None:
        """Declare its own pytest options (besides the shared ones of harness/base/inputs.py)."""
        add(self.pytest_option, metavar="VERSION", help=f"Kubernetes version for {self.described}")

    def asked(self, option: Option) -> bool:
        """The pytest options ask for a cluster of this kind."""
        return bool(option(self.pytest_option))

    def request(self, option: Option) -> Request:
        """What its pytest options ask for (VERSION read once, here)."""
        return Request(version=inputs.requested_release(option(self.pytest_option)))

    # ----- made ready: nothing to check or make, unless it says otherwise

    def check_host(self, runnable: Runnable) -> None:
        """What a run needs of this host (or of the cluster), checked once before any probe and in seconds, with
        nothing installed or built: raises PrerequisiteMissing or BadInput. (pytest asks it where make probe did
        not prepare the runnable.)"""
        return None  # nothing to check

    def prepare(self, runnable: Runnable, say: Say, warn: Say) -> Runnable:
        """Check the host in seconds, then make the runnable ready (install, build); raises PrerequisiteMissing,
        BadInput or NotRunnable, and Interrupted (saying what stopping undid) on Ctrl-C."""
        return runnable.with_facts()


# ----- the abilities only some kinds have, each looked up with isinstance


@runtime_checkable
class ShutsNodesDown(Protocol):
    """A second cluster of the kind, beside a run's own, on which a node shuts down gracefully: the node-shutdown
    probes run there (make probe PARALLEL starts their pytest beside its own)."""

    def shutdown_provider(self, runnable: Runnable, run: Run, note: Note) -> ClusterProvider:
        """The provider of the node-shutdown cluster (its name's role NODE_SHUTDOWN_ROLE)."""
        ...


@runtime_checkable
class Reattaches(Protocol):
    """What a process that re-attaches to a cluster of the kind another process made reads beyond its kubeconfig
    (its nodes, its control plane): make probe PARALLEL's workers, and pytest given --kubeconfig with its option."""

    def attach_options(self, provider: ClusterProvider) -> list[str]:
        """The pytest options with which another process re-attaches to the cluster `provider` made."""
        ...

    def attached(self, option: Option) -> bool:
        """The pytest options re-attach to a cluster of this kind that another process made."""
        ...

    def attach(self, kubeconfig: Path, context: str, option: Option, run_record: Path) -> ClusterProvider:
        """A provider that reaches the cluster of `context`, made by another process (never creates or removes)."""
        ...


@runtime_checkable
class LeavesLeftovers(Protocol):
    """Interrupted runs of the kind can leave something behind (clusters, processes, namespaces)."""

    def leftovers(self, request: Request) -> Leftovers:
        """Find and remove what interrupted runs of this kind left (make clean)."""
        ...


@runtime_checkable
class RunsReleases(Protocol):
    """Its clusters run a given Kubernetes release, made runnable here: make matrix, bisect and radar."""

    def release_axis(self, args: argparse.Namespace, tools: Path) -> ReleaseAxis:
        """This kind's version axis for one command's options (`tools`: where builds go)."""
        ...


def reattached(kind: ClusterKind, kubeconfig: Path, context: str, option: Option, run_record: Path) -> ClusterProvider:
    """The cluster of `context`, made by another process (never created or removed here): as the kind re-attaches
    to it where it can read more of it, else by its kubeconfig alone, saying in its recordings the origin its
    maker recorded in the run's record (make probe PARALLEL writes it there)."""
    if isinstance(kind, Reattaches):
        return kind.attach(kubeconfig, context, option, run_record)
    from harness.clusters.lifecycle import Reached

    recorded = json.loads(run_record.read_text()) if run_record.is_file() else {}
    origin = recorded.get("origin") if kind.makes_clusters else None
    said = {"cluster": kind.name, **(origin if isinstance(origin, dict) else {}), "context": context}
    label = f"{kind.name} (created by make probe)" if kind.makes_clusters else kind.name
    return Reached(kubeconfig, context, label, said, goes_with_the_run=kind.makes_clusters, kind=kind.name)
