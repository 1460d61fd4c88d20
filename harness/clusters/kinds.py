"""Every kind of cluster the suite runs probes on, behind one interface: `ClusterKind`.

A kind owns everything that depends on it: the pytest options that ask for it, resolving what a user gave
(VERSION, IMAGE, a kubeconfig) into something runnable, checking the host and making the runnable ready (the
kind release that built a node image installed; a release built here), the provider that makes or reaches
the cluster of one run (harness/clusters/lifecycle.py drives it), re-attaching to a cluster another process
made (make probe PARALLEL's workers), and finding what interrupted runs left. A kind whose clusters are made
from a Kubernetes release also serves the version axis (make matrix, bisect and radar) through its `ReleaseAxis`
(harness/axis/release_axis.py).

Kinds are chosen once, from CLUSTER or a front door's options (harness/clusters/registry.py); the front doors
ask the chosen kind and never branch on its name. The resolved `Runnable` is handed on as it is: from make
probe to its pytest (`--cluster-spec`), so no process resolves a version twice.
"""

from __future__ import annotations

import argparse
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from harness.axis.release_axis import ReleaseAxis
from harness.base.versions import Release

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
                "version": str(self.version or ""),
                "facts": dict(self.facts),
                "prepared": self.prepared,
            },
            sort_keys=True,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> Runnable:
        data = json.loads(text)
        version = Release.parse(str(data["version"])) if data["version"] else None  # its process's one reading
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
    makes_clusters: ClassVar[bool] = True  # False: it reaches a cluster the user gives and never removes it
    restarts_apiserver: ClassVar[bool] = False  # RESTART_APISERVER_AFTER: the suite runs the control plane itself
    default_parallel: ClassVar[int | str] = 1  # PARALLEL when none is given ("auto": harness/doors/schedule.py)
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
