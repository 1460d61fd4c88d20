"""existing as a kind of cluster (harness/clusters/kinds.py): a cluster the user gives by KUBECONFIG_FILE and
CONTEXT, whose kubeconfig is only read. The suite never makes, waits for or removes it, cannot see its nodes (node
claims are "not observable"), and leaves only its probes' labelled namespaces there, which make clean removes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness.base import inputs
from harness.base.inputs import BadInput
from harness.base.run import SUITE_LABEL, Run
from harness.clusters.kinds import AddOption, ClusterKind, Leftovers, Option, Request, Runnable, Say
from harness.clusters.lifecycle import ClusterProvider, Note, Reached

if TYPE_CHECKING:
    from harness.base.kubeapi import KubeApi


class ExistingClusters(ClusterKind):
    """The cluster of a context in a kubeconfig the user gives."""

    name = "existing"
    makes_clusters = False
    pytest_option = "--kubeconfig"
    described = "an existing one"
    no_node_shutdown = (
        "live probe: graceful node shutdown needs a second kind cluster the suite creates from its "
        "shutdown-capable node image, which it does not make next to an existing cluster "
        "(run these probes with make probe VERSION=...)"
    )

    def declare_options(self, add: AddOption) -> None:
        """--kubeconfig and --context are options both front doors share (harness/base/inputs.py)."""

    def asked(self, option: Option) -> bool:
        return bool(option("--kubeconfig"))

    def request(self, option: Option) -> Request:
        return Request(kubeconfig=option("--kubeconfig") or "", context=option("--context") or "")

    def resolve(self, request: Request, warn: Say) -> Runnable:
        if request.version or request.image or request.cluster:
            raise BadInput(
                "KUBECONFIG_FILE (--kubeconfig) probes an existing cluster, VERSION, IMAGE and CLUSTER=local make a "
                "new one: give one or the other",
            )
        inputs.check_existing_cluster(request.kubeconfig, request.context)
        return Runnable(self.name, None, {"kubeconfig": request.kubeconfig, "context": request.context})

    def check_host(self, runnable: Runnable) -> None:
        inputs.check_api_server(runnable.facts["kubeconfig"], runnable.facts["context"])

    def prepare(self, runnable: Runnable, say: Say, warn: Say) -> Runnable:
        """Its API server asked once, before any probe: one that cannot be reached is one line, not a traceback for
        every probe."""
        context = runnable.facts["context"]
        say(f"API server of context {context}: {inputs.check_api_server(runnable.facts['kubeconfig'], context)}")
        return runnable.with_facts()

    def provider(self, runnable: Runnable, run: Run, note: Note) -> ClusterProvider:
        """The cluster of the context: its kubeconfig only read, its nodes not seen, nothing of it ever removed."""
        kubeconfig, context = runnable.facts["kubeconfig"], runnable.facts["context"]
        return Reached(Path(kubeconfig), context, self.name, {"cluster": self.name, "context": context}, kind=self.name)

    def leftovers(self, request: Request) -> Leftovers:
        """On the cluster of KUBECONFIG_FILE and CONTEXT: the namespaces of the suite's probes (clean_namespaces)."""
        if not request.kubeconfig:
            return Leftovers()
        import urllib3  # the Kubernetes client with it (a few tenths of a second): only when asked
        from kubernetes import config
        from kubernetes.client.exceptions import ApiException

        from harness.base.kubeapi import KubeApi

        try:
            return clean_namespaces(
                KubeApi(config.new_client_from_config(config_file=request.kubeconfig, context=request.context))
            )
        except (config.ConfigException, ApiException, urllib3.exceptions.HTTPError, OSError, ValueError) as err:
            said = f"cannot clean namespaces on context {request.context!r} of {request.kubeconfig}: {err}"
            return Leftovers(errors=[said])


def clean_namespaces(core: KubeApi) -> Leftovers:
    """The namespaces labelled `<suite label>=true`: their pods first lose the suite's own finalizer (and only
    that one), then the namespaces are deleted."""
    from harness.core.namespaces import cleanup_probe_namespace  # (with the API's retries: only when cleaning)
    from harness.core.transport_raw import raw_call

    found = Leftovers()
    for namespace in raw_call(core.list_namespace, label_selector=f"{SUITE_LABEL}=true").get("items") or []:
        cleaned = cleanup_probe_namespace(core, namespace["metadata"]["name"])
        found.lines.append(
            f"namespace {cleaned.namespace}: finalizers removed from {len(cleaned.finalizers_removed)} pod(s), "
            f"{'deleted' if cleaned.namespace_deleted else 'NOT deleted'}"
        )
    return found
