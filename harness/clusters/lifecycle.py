"""One owner for a cluster's life, whatever provides the cluster: create → Ready → prepare → use → keep or delete.

A provider says how to make, reach and remove one cluster of one kind (harness/clusters/kinds.py): each kind's
package has its own (kind/provider.py, local/provider.py), and `Reached` is the provider of a cluster this
process did not make (one from --kubeconfig, or the one make probe PARALLEL made for its workers): it reaches
it, and never removes it. `cluster_life` drives any of them the same way, through `ClusterProvider` alone, for
the pytest fixtures and for `make probe PARALLEL=N`, writes what happened into the run's provenance as it goes,
and removes a cluster it created at the end, also after a failure, Ctrl-C or SIGTERM (which the suite turns into
KeyboardInterrupt), unless it is kept.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from harness.base.errors import ClusterFailed
from harness.base.kubeapi import KubeApi
from harness.core.transport import JsonDict

if TYPE_CHECKING:
    from harness.core.transport_live import LiveTransport

Note = Callable[..., None]
NodeLister = Callable[[str], list[JsonDict]]
NodeShutdown = Callable[[str, bool], JsonDict]
ApiserverRestart = Callable[[], JsonDict]


class ClusterProvider(Protocol):
    """How one kind of cluster is made, reached and removed."""

    @property
    def kind(self) -> str:
        """What kind of cluster it is, for messages (harness/clusters/kinds.py ClusterKind.name)."""
        ...

    @property
    def name(self) -> str: ...

    @property
    def created(self) -> bool:
        """Made by this provider and not removed yet: only such a cluster is ever removed."""
        ...

    @property
    def node_shutdown(self) -> NodeShutdown | None:
        """A node's graceful shutdown (the shutdown cluster only)."""
        ...

    @property
    def goes_with_the_run(self) -> bool:
        """The suite made this cluster for the run, which removes it (unless kept): what the probes leave in it
        need only be asked to go, not waited for."""
        ...

    @property
    def node_lister(self) -> NodeLister | None:
        """Every container on a node, as crictl reports it; None where the suite cannot see the nodes."""
        ...

    @property
    def apiserver_restart(self) -> ApiserverRestart | None:
        """Compact etcd and restart the API server (a real watch gap); None where the suite does not run the control
        plane's processes."""
        ...

    @property
    def kubeconfig(self) -> Path: ...

    @property
    def context(self) -> str | None: ...

    def facts(self) -> dict[str, Any]:
        """Provenance known before the cluster exists."""
        ...

    def create(self, logs_dir: Path) -> None:
        """Make the cluster; raise ClusterFailed with what went wrong (the provider cleans up its half)."""
        ...

    def wait_ready(self, core: KubeApi, logs_dir: Path) -> list[str]:
        """Wait until every node is Ready (its names); raise ClusterFailed with what was last seen and where the
        logs are."""
        ...

    def prepare(self, nodes: list[str]) -> dict[str, Any]:
        """Anything to do once the nodes are Ready; provenance to record."""
        ...

    def delete(self) -> Removal:
        """Remove the cluster (nothing when it was never made): what could not be removed, what was done."""
        ...

    def kept(self) -> str:
        """What to tell the user about a cluster kept on purpose."""
        ...

    def keep_logs(self, directory: Path) -> str:
        """The cluster's component logs (the kubelet's above all) kept before it goes, after a probe failed:
        where they are, or why there are none."""
        ...

    def origin(self) -> dict[str, Any]:
        """What the recordings made on this cluster say about what ran."""
        ...


@dataclass
class Removal:
    """What removing a cluster left (`error`, None when nothing) and did (`facts`, for the provenance)."""

    error: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    interrupted: bool = False  # Ctrl-C came while it ran (it ran to its end): raised again once noted


class NodesNotReady(RuntimeError):
    """The nodes did not all become Ready in time; says what was last seen."""


def wait_nodes_ready(core: KubeApi, timeout_s: float = 180) -> list[str]:
    """Wait until every node reports Ready=True (kind's --wait exits 0 even when it times out); their names."""
    from harness.core.transport_raw import raw_call, watch_until  # (with the API's retries: where a cluster is reached)

    def states() -> dict[str, str]:
        return {n["metadata"]["name"]: _ready(n) for n in raw_call(core.list_node).get("items") or []}

    def all_ready() -> bool:
        seen = states()
        return bool(seen) and all(s == "True" for s in seen.values())

    if not all_ready() and not watch_until(core.list_node, lambda _t, _o: all_ready(), timeout_s):
        seen = ", ".join(f"{k}: Ready={v}" for k, v in states().items())
        raise NodesNotReady(f"nodes not Ready after {timeout_s:.0f}s; last seen: {seen or 'no nodes'}")
    return list(states())


def _ready(node: JsonDict) -> str:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return str(condition.get("status"))
    return "Unknown"


@dataclass
class LiveTarget:
    """A cluster probes run on: its transport, a core client for the fixtures, and the recordings' origin."""

    transport: LiveTransport
    core: KubeApi
    origin: dict[str, Any]
    apiserver_restart: ApiserverRestart | None = None
    goes_with_the_run: bool = False  # see ClusterProvider.goes_with_the_run


class MadeCluster(Protocol):
    """What a cluster this run makes offers its provider (KindCluster, LocalCluster)."""

    @property
    def name(self) -> str: ...

    @property
    def kubeconfig(self) -> Path: ...

    def node_containers(self, node: str) -> list[JsonDict]: ...


class ProviderDefaults:
    """What a provider of a cluster this run makes need not write: it writes `kind`, `name`, `kubeconfig`,
    `created`, `create` and `delete`; its nodes are waited for until Ready, nothing is done once they are, the
    suite sees neither its nodes nor its control plane, and its recordings say its kind and name."""

    @property
    def context(self) -> str | None:
        return None  # the kubeconfig's current context

    @property
    def node_shutdown(self) -> NodeShutdown | None:
        return None

    @property
    def node_lister(self) -> NodeLister | None:
        return None

    @property
    def apiserver_restart(self) -> ApiserverRestart | None:
        return None

    @property
    def goes_with_the_run(self) -> bool:
        return True

    def facts(self: ClusterProvider) -> dict[str, Any]:
        return {"cluster": self.kind, "cluster_name": self.name, "kubeconfig": str(self.kubeconfig)}

    def wait_ready(self, core: KubeApi, logs_dir: Path) -> list[str]:
        try:
            return wait_nodes_ready(core)
        except NodesNotReady as err:
            raise ClusterFailed(str(err)) from err

    def prepare(self, nodes: list[str]) -> dict[str, Any]:
        return {}

    def kept(self: ClusterProvider) -> str:
        return f"kept {self.kind} cluster {self.name}; kubeconfig: {self.kubeconfig} (make clean removes it)"

    def keep_logs(self, directory: Path) -> str:
        return "(its kind keeps no component logs)"

    def origin(self: ClusterProvider) -> dict[str, Any]:
        return {"cluster": self.kind, "cluster_name": self.name}


class MadeHere(ProviderDefaults):
    """A provider whose cluster this run makes, and removes when the run ends (unless kept): kind and local."""

    cluster: MadeCluster

    @property
    def name(self) -> str:
        return self.cluster.name

    @property
    def kubeconfig(self) -> Path:
        return self.cluster.kubeconfig

    @property
    def node_lister(self) -> NodeLister:
        return self.cluster.node_containers


@dataclass
class Reached:
    """A cluster this process did not make: one from --kubeconfig, or the one `make probe PARALLEL=N` made for its
    workers (its kind re-attaches to it with what that kind can read of it). It is reached, never created,
    waited for or removed."""

    kubeconfig_file: Path
    context_name: str
    label: str  # run.json's `cluster`
    recorded: dict[str, Any]  # the recordings' origin
    node_lister: NodeLister | None = None
    apiserver_restart: ApiserverRestart | None = None
    goes_with_the_run: bool = False  # made for this run by another process: see ClusterProvider.goes_with_the_run
    kind: str = ""  # its ClusterKind.name, for messages
    node_shutdown: NodeShutdown | None = None
    created: bool = False

    @property
    def name(self) -> str:
        return self.context_name

    @property
    def kubeconfig(self) -> Path:
        return self.kubeconfig_file

    @property
    def context(self) -> str:
        return self.context_name

    def facts(self) -> dict[str, Any]:
        return {"cluster": self.label, "kubeconfig": str(self.kubeconfig_file), "context": self.context_name}

    def create(self, logs_dir: Path) -> None:
        """Nothing to make: the cluster exists."""

    def wait_ready(self, core: KubeApi, logs_dir: Path) -> list[str]:
        return []  # not the suite's to wait for (its nodes may not even be readable)

    def prepare(self, nodes: list[str]) -> dict[str, Any]:
        return {}

    def delete(self) -> Removal:
        return Removal()  # never the suite's to remove

    def kept(self) -> str:
        return f"the cluster of context {self.context_name} is not the suite's: left as it was"

    def keep_logs(self, directory: Path) -> str:
        return "(not the suite's to collect: its owner keeps them)"

    def origin(self) -> dict[str, Any]:
        return self.recorded


@dataclass
class ScheduledRestart:
    """`restart` run on a thread `after_s` seconds after `start`; `finish()` cancels it if it has not begun, waits
    for it if it has, and says what happened (its record, its error, or that the probe ended first)."""

    after_s: float
    restart: ApiserverRestart
    outcome: JsonDict = field(default_factory=dict)
    _timer: threading.Timer | None = None

    def start(self) -> ScheduledRestart:
        self._timer = threading.Timer(self.after_s, self._run)
        self._timer.daemon = True
        self._timer.start()
        return self

    def _run(self) -> None:
        self.outcome["began"] = True
        try:
            self.outcome.update(self.restart())
        except Exception as err:  # whatever went wrong is the probe's evidence, not a crash of the run
            self.outcome["error"] = f"{type(err).__name__}: {err}"

    def finish(self) -> JsonDict:
        assert self._timer is not None, "start() first"
        self._timer.cancel()
        self._timer.join()
        if not self.outcome.pop("began", False):
            return {"after_s": self.after_s, "not_done": "the probe ended first"}
        return {"after_s": self.after_s, **self.outcome}


@contextmanager
def cluster_life(
    provider: ClusterProvider, note: Note, keep: bool, logs_dir: Path, failed: Callable[[], bool] = lambda: False
) -> Iterator[LiveTarget]:
    """Create the provider's cluster, wait for it, yield it, and remove it unless `keep` (see module docstring);
    when `failed()` says a probe failed, its component logs are kept first (a kind cluster's go with it: seen,
    a kubelet's ContainerStatusUnknown on kind v1.26.6 whose kubelet log was gone with the cluster)."""
    from kubernetes import config

    from harness.core.transport_live import LiveTransport  # (with the API's retries: only where a cluster is reached)

    note(**provider.facts())
    started = time.monotonic()
    try:
        provider.create(logs_dir)
        api = config.new_client_from_config(config_file=str(provider.kubeconfig), context=provider.context)
        core = KubeApi(api)
        nodes = provider.wait_ready(core, logs_dir)
        if provider.created:  # from create to every node Ready: said of the clusters made here only
            note(cluster_ready_after_s=round(time.monotonic() - started, 1))
        note(**provider.prepare(nodes))
        transport = LiveTransport(api, node_lister=provider.node_lister, node_shutdown=provider.node_shutdown)
        note(**({"nodes": nodes} if nodes else {}), server_version=transport.server_version())
        yield LiveTarget(transport, core, provider.origin(), provider.apiserver_restart, provider.goes_with_the_run)
    except ClusterFailed as err:
        note(cluster_error=str(err))
        raise
    finally:
        if provider.created and failed():
            note(component_logs=provider.keep_logs(logs_dir))
        if keep and provider.created:
            note(cluster_kept=True, cluster_kept_message=provider.kept())
        else:
            was_created = provider.created
            removal = provider.delete()
            if removal.error is not None:
                note(cluster_delete_error=removal.error)
            elif was_created:
                note(cluster_deleted=True)
            if removal.facts:
                note(**removal.facts)
            if removal.interrupted:
                raise KeyboardInterrupt
