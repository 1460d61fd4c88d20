"""What a probe works with: apply a manifest, act, observe, and check claims against expectations.

A `Probe` is handed to each probe function by the `probe` fixture. It talks to the cluster only
through its transport (live, or a replayed recording), keeps the timeline, evaluates every claim
against the expectation for the version the API server reports, and writes the probe's record.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.base.families import family as family_folder
from harness.base.json_copy import json_copy
from harness.base.manifests import family_manifest
from harness.base.run import RUN_LABEL, SUITE_LABEL, Run, safe_name
from harness.base.versions import KubeVersion
from harness.core.basis import Basis, Moment
from harness.core.evidence import write_evidence
from harness.core.expectations import (
    FAIL,
    NOT_OBSERVABLE,
    PASS,
    UNDECIDED,
    Verdict,
    evaluate,
    load_claims,
    not_observable,
)
from harness.core.node_containers import container_state_on_node
from harness.core.observe import Observer, key_of
from harness.core.observe_readings import PodObserver, cannot_start
from harness.core.timeline import Timeline
from harness.core.transport import JsonDict, Transport
from harness.core.transport_recording import Recording
from harness.core.transport_replay import ReplayTransport
from harness.core.views import PodView

# Budget for a pod to be scheduled, pull its (small, pinned) image and become Ready on a fresh node.
POD_START_BUDGET_S = 180.0
# Node state cannot be watched: it is polled this often.
NODE_POLL_S = 3.0


class ClaimsFailed(AssertionError):
    """At least one claim did not hold (or could not be decided) on this cluster.

    The timeline it is given (a copy: entries added after the failure are not its) is rendered after its message
    when the failure is read: the tests that alter recordings raise thousands of failures and read none of them.
    """

    def __init__(self, message: str, timeline: Timeline | None = None) -> None:
        super().__init__(message)
        self._timeline = None if timeline is None else replace(timeline, entries=list(timeline.entries))
        self._text: str | None = None

    def __str__(self) -> str:
        if self._text is None:
            told = super().__str__()
            self._text = told if self._timeline is None else f"{told}\ntimeline:\n{self._timeline.render()}"
        return self._text


class ClaimsUndecided(ClaimsFailed):
    """No claim failed, but at least one could not be decided (a watch gap could hide the deciding state).

    It fails the test as any ClaimsFailed does (an undecided claim is never a pass); reports keep it apart.
    """


class NoClaimChecked(ClaimsFailed):
    """The probe ended without checking a single claim: there is nothing it could have passed on."""


class NothingObserved(NoClaimChecked):
    """Every claim the probe checked was "not observable": nothing was compared with an expectation, so it fails.

    A check that passes when nothing was checked would be a pass on no evidence; the verdicts are still
    recorded and reported as not observable.
    """


class NotServed(RuntimeError):
    """The API server does not serve the API version the suite uses for this kind (e.g. before it went GA)."""


class NotObservableWarning(UserWarning):
    """A claim could not be observed on this cluster: it is reported, never counted as passed."""


class Probe:
    def __init__(
        self,
        name: str,
        family: str,
        transport: Transport,
        namespace: str,
        run: Run,
        run_id: str,
        record_name: str = "",
        families_root: Path | None = None,
    ) -> None:
        self.name = name
        self.record_name = safe_name(record_name or name)
        self.family = family
        self.family_dir = family_folder(family, families_root).directory  # its expectations and manifests
        self.transport = transport
        self.namespace = namespace
        self.run = run
        self.run_id = run_id
        self.claims = load_claims(family, families_root)
        self.timeline = Timeline()
        self.verdicts: list[Verdict] = []
        self._concluded = 0  # how many verdicts conclude() has judged
        self._created: dict[str, PodView] = {}
        self._acts: dict[float, Moment] = {}  # when each act was sent -> that instant with its write's version
        self._observers: list[Observer[Any]] = []
        self._server_version: KubeVersion | None = None
        self._started = transport.now()

    @classmethod
    def replaying(
        cls, recording: Recording, family: str, run: Run, record_name: str = "", families_root: Path | None = None
    ) -> Probe:
        """A probe whose cluster is a recording: everything but the transport is as in a live run."""
        namespace, run_id = recording.origin["namespace"], recording.origin["run_id"]
        transport = ReplayTransport(recording)
        probe = cls(recording.probe, family, transport, namespace, run, run_id, record_name, families_root)
        probe.server_version  # noqa: B018 - a recording starts with the server's version, as a live run does
        return probe

    # ------------------------------------------------------------------------------------ acting

    @property
    def server_version(self) -> KubeVersion:
        """The version the API server reports: expectations are chosen by it, not by what was asked for."""
        if self._server_version is None:
            self._server_version = KubeVersion.parse(str(self.transport.server_version()["gitVersion"]))
        return self._server_version

    def manifest(self, filename: str) -> JsonDict:
        """A manifest of the family's manifests/ (a file, or an overlay of one: harness/base/manifests.py), labelled as
        the suite's; a name not there is looked for in the other families' folders."""
        return labelled(json_copy(family_manifest(self.family_dir, filename)), self.run_id)

    def create_pod(self, manifest: JsonDict) -> PodView:
        return PodView.from_object(self.create(manifest))

    def watch_pod(self, pod: PodView) -> PodObserver:
        """Watch a pod from the version last seen, so no later change is missed."""
        handle = self.transport.watch("Pod", self.namespace, pod.name, pod.resource_version)
        observer = PodObserver(
            handle, self.timeline, self.transport.now, "Pod", [pod.raw], pod.name, self.transport.views
        )
        self._observers.append(observer)
        return observer

    @property
    def watches(self) -> list[Observer[Any]]:
        """Every watch the probe opened, in the order opened."""
        return list(self._observers)

    @property
    def pods(self) -> dict[str, PodView]:
        """Every pod the probe created or saw (by uid), as last seen (through a watch, or as created)."""
        seen = {uid: view for o in self._observers if o.kind == "Pod" for uid, view in o.states.items()}
        return {**self._created, **seen}

    def close(self) -> None:
        """Stop every watch the probe opened (a recording notes when each stopped)."""
        for observer in self._observers:
            observer.close()

    def start_pod(self, manifest: JsonDict) -> PodObserver:
        """Create a pod and wait until it runs and is Ready; the returned observer keeps watching it."""
        pod = self.create_pod(manifest)
        observer = self.watch_pod(pod)
        try:
            observer.wait_for(
                f"pod {pod.name} to be Running and Ready",
                lambda o: o.latest.phase == "Running" and o.latest.ready,
                within=POD_START_BUDGET_S,
                veto=cannot_start,
            )
        except BaseException:
            observer.close()
            raise
        return observer

    def create(self, manifest: JsonDict, anchor: bool = False) -> JsonDict:
        """Create any object the transport handles; `anchor` makes its creation the timeline's zero."""
        created = self.transport.create(self.namespace, json_copy(manifest))
        t = self.transport.last_call_started()
        self.timeline.action(t, "create", {manifest["kind"].lower(): created["metadata"]["name"]}, anchor=anchor)
        if manifest["kind"] == "Pod":
            view = PodView.from_object(created)
            self._created[key_of(view)] = view
        return created

    def watch_all(self, kind: str, focus: str | None = None) -> Observer[Any]:
        """Watch every object of a kind in the probe's namespace, from now on (start it before acting)."""
        listing = self.transport.list_objects(kind, self.namespace)
        if listing.get("notServed"):
            raise NotServed(f"the API server ({self.server_version}) does not serve the API version used for {kind}")
        handle = self.transport.watch(kind, self.namespace, None, listing["metadata"]["resourceVersion"])
        observer_class = PodObserver if kind == "Pod" else Observer
        items = listing.get("items", [])
        observer = observer_class(handle, self.timeline, self.transport.now, kind, items, focus, self.transport.views)
        self._observers.append(observer)
        return observer

    def watch_pods(self, focus: str | None = None) -> PodObserver:
        """Watch every pod of the probe's namespace (start it before creating what makes them)."""
        observer = self.watch_all("Pod", focus)
        assert isinstance(observer, PodObserver)
        return observer

    def events(self) -> list[JsonDict]:
        """The namespace's events, oldest first (the controllers' and the kubelet's account of what they did)."""
        return sorted(self.transport.list_events(self.namespace), key=_event_time)

    def logs(self, pod: str, container: str) -> str:
        return self.transport.read_log(self.namespace, pod, container)

    def wait_on_node(self, pod: PodView, container: str, until: set[str], within: float) -> str | None:
        """Poll the node (the only way to see it) until the container's state is in `until`, for at most `within` s.

        Returns the last state seen, or None when the suite cannot reach this cluster's nodes. A removed
        container never comes back, so "removed" ends the wait whatever was awaited.
        """
        deadline = self.transport.now() + within
        while True:
            state = self.node_container_state(pod, container)
            if state in (None, "removed") or state in until or self.transport.now() >= deadline:
                return state
            self.transport.pause(min(NODE_POLL_S, max(deadline - self.transport.now(), 0.0)))

    def delete_pod(self, pod: PodView, grace_period_seconds: int | None = None) -> float:
        """Delete a pod; the time the request was sent becomes the timeline's zero."""
        answer = self.transport.delete("Pod", self.namespace, pod.name, grace_period_seconds)
        t = self.transport.last_call_started()
        version = str(((answer or {}).get("metadata") or {}).get("resourceVersion", ""))
        self._acts[t] = Moment(t, int(version) if version.isdigit() else None)
        self.timeline.action(t, "delete", {"pod": pod.name, "gracePeriodSeconds": grace_period_seconds}, anchor=True)
        return t

    def act(self, at: float) -> Moment:
        """The act the probe sent at `at` (a delete, an eviction, a node shutdown: what a successor is created after,
        harness/core/identity.py), with the resourceVersion of the write the server answered a delete with."""
        return self._acts.get(at, Moment(at))

    def patch(self, kind: str, name: str, patch: JsonDict, label: str) -> JsonDict:
        """Merge-patch an object of the probe's namespace; `label` names the action on the timeline."""
        patched = self.transport.patch(kind, self.namespace, name, patch)
        self.timeline.action(self.transport.last_call_started(), label, {kind.lower(): name, "patch": patch})
        return patched

    def evict(self, pod: str) -> float:
        """Evict a pod through the Eviction API (policy/v1 from 1.22, policy/v1beta1 before); returns when."""
        api_version = "policy/v1" if self.server_version.satisfies(">=1.22.0-alpha.0") else "policy/v1beta1"
        self.transport.evict(self.namespace, pod, api_version)
        t = self.transport.last_call_started()
        self.timeline.action(t, "evict", {"pod": pod, "apiVersion": api_version}, anchor=True)
        return t

    def shutdown_node(self, node: str, starting: bool) -> JsonDict:
        """Announce (True) or cancel (False) a graceful shutdown of a node of the shutdown cluster.

        Starting one anchors the timeline at the signal (`signalled_after_s` into the call: a kubelet restarted for
        its lock comes first; recordings without it anchor at the call). The answer says whether the kubelet
        held its inhibitor lock, and `signalled_at` the signal's instant (transport clock).
        """
        answer = self.transport.node_shutdown(node, starting)
        label = "node shutdown" if starting else "node shutdown cancelled"
        detail = {"node": node, "kubeletInhibitor": answer.get("kubelet_inhibitor")}
        if answer.get("kubelet_restarted_for_its_lock"):
            detail["kubeletRestartedForItsLock"] = True
        if "kubelet_took_back_its_pods" in answer:
            detail["kubeletTookBackItsPods"] = answer["kubelet_took_back_its_pods"]
        signalled = self.transport.last_call_started() + float(answer.get("signalled_after_s") or 0.0)
        self.timeline.action(signalled, label, detail, anchor=starting)
        return {**answer, "signalled_at": signalled}

    @contextmanager
    def node_shut_down(self, node: str) -> Iterator[JsonDict]:
        """Announce a graceful shutdown of `node` and cancel it on the way out, whatever happens in between (the
        undo next to the act: a node left shutting down would spoil every later probe on that cluster).

        Yields the announcement's answer. When the block raises, the cancel is still sent; an error of the
        cancel itself is then noted in the timeline, so the block's own error is the one reported.
        """
        answer = self.shutdown_node(node, starting=True)
        try:
            yield answer
        except BaseException:
            try:
                self.shutdown_node(node, starting=False)
            except Exception as err:
                self.timeline.observed(self.transport.now(), f"node/{node}", "cancel failed", {"error": str(err)})
            raise
        self.shutdown_node(node, starting=False)

    def why_not_on_node(self, pod: PodView, container: str) -> str:
        """Why node_container_state() had no answer: no access to the nodes, or no container id to look for."""
        if not self.transport.node_access:
            return "the suite has no access to this cluster's nodes"
        if not pod.node_name:
            return f"pod {pod.name} names no node"
        if not pod.container(container).runtime_id:
            return (
                f"pod {pod.name}'s status names no container id for {container} (the kubelet reported it without "
                "one, e.g. ContainerStatusUnknown after the container was removed): nothing to look for on the node"
            )
        return f"the node's container list could not be read for pod {pod.name}"

    def node_container_state(self, pod: PodView, container: str) -> str | None:
        """The container's state on its node (running / exited / removed), or None if nodes are not reachable."""
        runtime_id = pod.container(container).runtime_id
        if not self.transport.node_access or not pod.node_name or not runtime_id:
            return None
        t = self.transport.now()
        listing = self.transport.node_containers(pod.node_name)
        if listing is None:
            return None
        state = container_state_on_node(listing, runtime_id)
        self.timeline.observed(
            t, f"node/{pod.node_name}", "crictl", {"container": container, "id": runtime_id[:13], "state": state}
        )
        return state

    # ---------------------------------------------------------------------------------- checking

    def check(self, claim_id: str, observed: Any, rests_on: Basis, evidence: str | None = None) -> Verdict:
        """Judge an observation against the claim's expectation for the server's version.

        `rests_on`: what the observation rests on (harness/core/basis.py: the watches, objects and stretch of time its
        deciding states lie in, or what was read outside every watch); the harness chooses from it the watch gaps
        that could hide those states, and a claim is undecided exactly when one could. A probe never names gaps.
        `evidence`: what the observation rests on, shown with a mismatch (e.g. the offending status update).
        """
        verdict = self.judge(claim_id, observed, rests_on, evidence)
        self.verdicts.append(verdict)
        return verdict

    def judge(self, claim_id: str, observed: Any, rests_on: Basis, evidence: str | None = None) -> Verdict:
        """The verdict `check` records, without recording it (tests judge a verdict again with a gap added)."""
        if not isinstance(rests_on, Basis):
            raise TypeError(f"claim {claim_id}: say what the observation rests on (a harness.core.basis.Basis)")
        verdict = evaluate(self.claims[claim_id], self.server_version, observed, rests_on.doubt(), evidence)
        verdict.rests_on = rests_on
        return verdict

    def check_not_observable(self, claim_id: str, why: str) -> Verdict:
        verdict = not_observable(self.claims[claim_id], self.server_version, why)
        self.verdicts.append(verdict)
        return verdict

    @property
    def unconcluded(self) -> list[Verdict]:
        """Verdicts recorded since the last conclude(): the harness concludes them if the probe did not."""
        return self.verdicts[self._concluded :]

    def conclude(self, note: str = "") -> None:
        """Fail with every claim that did not hold or stayed undecided; warn about claims that could not be observed.

        A probe that checked no claim fails too, and so does one whose every claim was not observable.
        `note` is added to the failure (e.g. who concluded).
        """
        __tracebackhide__ = True
        self._concluded = len(self.verdicts)
        suffix = f"\n{note}" if note else ""
        if not self.verdicts:
            raise NoClaimChecked(f"the probe checked no claim: nothing was compared with an expectation{suffix}")
        for verdict in self.verdicts:
            if verdict.status == NOT_OBSERVABLE:
                warnings.warn(NotObservableWarning(verdict.message), stacklevel=2)
        if all(verdict.status == NOT_OBSERVABLE for verdict in self.verdicts):
            raise NothingObserved(
                f"the probe observed no claim: all {len(self.verdicts)} were not observable, so nothing was "
                "compared with an expectation:\n" + "\n".join(f"- {v.message}" for v in self.verdicts) + suffix
            )
        undecided = [v for v in self.verdicts if v.status == UNDECIDED]
        # anything else that is not a pass is a failure (a status the harness does not know included)
        failed = [v for v in self.verdicts if v.status not in (PASS, NOT_OBSERVABLE, UNDECIDED)]
        if not failed and not undecided:
            return
        sections = [
            f"{title}:\n" + "\n".join(f"- {v.message}" for v in group)
            for title, group in (("failed", failed), ("undecided", undecided))
            if group
        ]
        error = ClaimsFailed if failed else ClaimsUndecided
        raise error(
            f"{self.headline()} on Kubernetes {self.server_version}:\n" + "\n".join(sections) + suffix, self.timeline
        )

    def headline(self) -> str:
        """'2 of 7 claims failed, 1 undecided': failed and undecided counted apart, out of every claim checked."""
        counts = self.counts()
        failed, undecided, total = counts[FAIL], counts[UNDECIDED], len(self.verdicts)
        if failed and undecided:
            return f"{failed} of {total} claims failed, {undecided} undecided"
        if undecided:
            return f"{undecided} of {total} claims undecided (none failed; undecided is never a pass)"
        return f"{failed} of {total} claims failed"

    def counts(self) -> dict[str, int]:
        """How many verdicts have each status (pass, fail, undecided, not observable)."""
        counts = dict.fromkeys((PASS, FAIL, UNDECIDED, NOT_OBSERVABLE), 0)
        for verdict in self.verdicts:
            key = verdict.status if verdict.status in counts else FAIL
            counts[key] += 1
        return counts

    # ----------------------------------------------------------------------------------- records

    def record(self, outcome: str, transport_kind: str, origin: JsonDict | None = None) -> JsonDict:
        return {
            "probe": self.name,
            "family": self.family,
            "outcome": outcome,
            "duration_s": round(self.transport.now() - self._started, 2),
            "namespace": self.namespace,
            "server_version": str(self._server_version) if self._server_version else None,
            "transport": transport_kind,
            "recording_origin": origin,
            "provenance": self.run.provenance,
            "claims": self.counts(),
            "verdicts": [v.to_json() for v in self.verdicts],
            "timeline": self.timeline.to_json(),
        }

    def write_record(self, outcome: str, transport_kind: str, origin: JsonDict | None = None) -> Path:
        """The probe's record in the run's probes/: a live run's indented for a reader; a replay's on one line,
        read by the reports and tests only, through json's C encoder (an indent takes json's pure-Python encoder,
        five times slower: 1.0 s of CPU against 0.2 s for the records of every shipped recording)."""
        path = self.run.path("probes", f"{self.record_name}.json")
        record = self.record(outcome, transport_kind, origin)
        indent = None if transport_kind == "replay" else 1
        path.write_text(json.dumps(record, indent=indent, default=str) + "\n")
        return path

    def save_evidence(self, live: Transport | None) -> Path:
        """Objects, events, container logs, the node's containers and the timeline of a failed probe
        (harness/core/evidence.py); `live` is the cluster behind the probe, None when it replayed a recording."""
        directory = self.run.path("evidence", self.record_name, "timeline.txt").parent
        return write_evidence(directory, self.timeline, list(self.pods.values()), self.namespace, live)


def labelled(manifest: JsonDict, run_id: str) -> JsonDict:
    """The suite's labels on an object and on the pods its template makes (so leftovers can be found)."""
    targets = [manifest.setdefault("metadata", {})]
    template = (manifest.get("spec") or {}).get("template")
    if isinstance(template, dict):
        targets.append(template.setdefault("metadata", {}))
    for metadata in targets:
        metadata.setdefault("labels", {}).update({SUITE_LABEL: "true", RUN_LABEL: run_id})
    return manifest


def _event_time(event: JsonDict) -> str:
    return str(
        event.get("eventTime") or event.get("firstTimestamp") or event["metadata"].get("creationTimestamp") or ""
    )
