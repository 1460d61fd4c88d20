"""Job pod deleted while running: is its replacement created before the old pod is terminal?

"[Kubernetes 1.27] Pod 停止時のフェーズ遷移の変更" (pod-phase-on-stop-1.27) explains why Jobs used to start a
replacement while the old pod was still terminating, and how KEP-3329 (podFailurePolicy) and KEP-3939
(podReplacementPolicy, `status.terminating`) changed that. Four Jobs, one per combination: no policy, a
podFailurePolicy, podReplacementPolicy TerminatingOrFailed, podReplacementPolicy Failed. Each pod takes 20 s to
stop after SIGTERM, so the order of "replacement created" and "old pod terminal (or gone)" shows plainly in the
one pod watch that sees both (a single watch delivers events in the server's order).

Why 20 s: from 1.27 the controller counts a deleted pod as failed at once and holds the replacement for its
pod-failure back-off, 10 s after that first failure (k/k#114768, pkg/controller/job/backoff_utils.go at
v1.27.3; absent at v1.26.6). The first live run on 1.27.3 had the pod stop 8 s after SIGTERM and saw the
replacement 0.2 s after the old pod was Failed: a race between the back-off and the pod's exit, not the
controller's rule about terminating pods, which is what the claims are about.

Where the server does not know podReplacementPolicy (or podFailurePolicy: 1.24.0-beta.0 and 1.25.0-alpha.3 to
1.25.0-beta.0, before k/k#111113), the Strict create (harness/core/transport.py) is refused as an unknown field;
the probe records that as the claim `<variant>.policy-field` and then creates the Job without the field
(manifests/*.without-policy-field.yaml), as a client with the default field validation (Warn: unknown fields
dropped) would have it, so the remaining claims show the default behaviour there.
"""

from __future__ import annotations

import pytest

from harness.core.basis import Basis, Moment
from harness.core.identity import controller_uid, running_ready, successor
from harness.core.observe import Observer, ProbeTimeout
from harness.core.probe import Probe
from harness.core.probe_helpers import POD_START_BUDGET_S, pod_failure_policy_kept
from harness.core.timeline import Sighting, order_of
from harness.core.transport import JsonDict, Rejected
from harness.core.views import JobView, PodView

pytestmark = pytest.mark.probe("job_replacement")

# The old pod stops 20 s after SIGTERM (grace 30 s); the replacement comes at once (10 s later from 1.27: the
# back-off) or after the old pod is terminal.
REPLACEMENT_BUDGET_S = 60.0
TERMINAL = ("Failed", "Succeeded")
POLICY_FIELDS = ("podReplacementPolicy", "podFailurePolicy")  # a variant's manifest sets one at most


def create_job(probe: Probe, manifest: JsonDict, without_field: str | None, field: str | None) -> str:
    """Create the Job; return what the server kept of its policy `field` ('rejected' if refused): the
    podReplacementPolicy, or the podFailurePolicy's rule actions (pod_failure_policy_kept); 'None' when dropped.

    Refused, the Job is created from `without_field`: the same manifest without the field.
    """
    try:
        created = probe.create(manifest, anchor=False)
    except Rejected as rejected:
        if field is None or field not in rejected.message or without_field is None:
            raise
        probe.create(probe.manifest(without_field))
        return "rejected"
    if field == "podFailurePolicy":
        return pod_failure_policy_kept(created)
    return str(created["spec"].get(field))


def terminal_or_gone(pods: Observer[PodView], pod: PodView) -> Sighting[PodView] | None:
    """When the pod (by uid) was first seen in a terminal phase or deleted (a re-list included)."""
    return pods.first_sighting(
        lambda type_, view: view.uid == pod.uid and (type_ in ("DELETED", "GONE") or view.phase in TERMINAL)
    )


def replacement(pods: Observer[PodView], old: PodView, act: Moment) -> Sighting[PodView] | None:
    """The Job's replacement for the deleted pod, by the harness's rule (harness/core/identity.py): a pod of the
    same Job created after the delete and not known deleted, seen in any way (an event, or only a re-list)."""
    return successor(pods, controller_uid(old), act)


def max_terminating(jobs: Observer[JobView]) -> int | None:
    """The largest status.terminating the Job reported (None: the server never set the field)."""
    values = [view.terminating for _, view in jobs.history if view.terminating is not None]
    return max(values) if values else None


def delete_running_pod_and_watch(
    probe: Probe, manifest_file: str, variant: str, without_field: str | None = None, timed: bool = False
) -> None:
    """Create the Job, delete its running pod, and check the `variant`'s claims (expectations/job_replacement.yaml).

    `without_field`: the manifest to create instead where the server refuses its policy field; `timed`: the
    variant also claims when the replacement came (`<variant>.replacement-after-delete`).
    """
    manifest = probe.manifest(manifest_file)
    name = manifest["metadata"]["name"]
    jobs: Observer[JobView] = probe.watch_all("Job", focus=name)
    pods = probe.watch_pods()
    field = next((field for field in POLICY_FIELDS if field in manifest["spec"]), None)
    kept = create_job(probe, manifest, without_field, field)
    if field is not None:
        probe.check(f"{variant}.policy-field", kept, Basis.direct("the API server's answer to the create"))
    pods.wait_for(f"Job {name}'s pod to run", lambda o: running_ready(o) is not None, within=POD_START_BUDGET_S)
    old = running_ready(pods)
    assert old is not None
    deleted_at = probe.delete_pod(old)
    act = probe.act(deleted_at)
    waited = pods.await_outcome(
        f"pod {old.name} to be terminal or gone, and a replacement to be created",
        lambda o: terminal_or_gone(o, old) is not None and replacement(o, old, act) is not None,
        within=REPLACEMENT_BUDGET_S,
    )
    jobs.catch_up()
    old_done, new = terminal_or_gone(pods, old), replacement(pods, old, act)
    if old_done is None and new is None:  # neither happened: nothing to order
        raise ProbeTimeout(waited or f"pod {old.name} neither ended nor was replaced")
    if new is None:  # never replaced in time; a replacement that came and went unseen in a gap would say otherwise
        before, rests_on = False, pods.during(deleted_at)
    elif old_done is None:  # the replacement came, the old pod never ended: its sighting decides
        before, rests_on = True, pods.sighted(new, deleted_at)
    else:  # both seen: ordered for certain unless a gap's stretch, where one was only re-listed, spans the other
        before, rests_on = order_of(new, old_done), Basis.order(new, old_done, pods)
    probe.check(f"{variant}.before-old-pod-terminal", before, rests_on, evidence=waited)
    if timed:  # the Job's pod-failure back-off (k/k#114768): when the replacement came after the delete
        after = None if new is None else round(new.t - deleted_at, 2)
        probe.check(f"{variant}.replacement-after-delete", after, pods.sighted(new, deleted_at))
    # the largest status.terminating: every state of the Job since the delete
    probe.check(f"{variant}.terminating-reported", max_terminating(jobs), jobs.during(deleted_at, None, jobs.latest))
    probe.conclude()


def test_job_without_policies_replaces_a_deleted_pod(probe: Probe) -> None:
    """The document: without policies the Job controller counts a terminating pod as gone and replaces it (from 1.27
    after its pod-failure back-off, k/k#114768)."""
    delete_running_pod_and_watch(probe, "job-pod-replaced-default.yaml", "default", timed=True)


def test_job_with_pod_failure_policy_replaces_a_deleted_pod(probe: Probe) -> None:
    """The document / KEP-3329: with a podFailurePolicy the replacement waits for the old pod (on some versions)."""
    delete_running_pod_and_watch(
        probe,
        "job-pod-replaced-with-failure-policy.yaml",
        "failure-policy",
        without_field="job-pod-replaced-with-failure-policy.without-policy-field.yaml",
    )


def test_job_replacing_terminating_or_failed_pods(probe: Probe) -> None:
    """KEP-3939: podReplacementPolicy TerminatingOrFailed replaces a pod as soon as it is terminating."""
    delete_running_pod_and_watch(
        probe,
        "job-pod-replaced-terminating-or-failed.yaml",
        "terminating-or-failed",
        without_field="job-pod-replaced-terminating-or-failed.without-policy-field.yaml",
    )


def test_job_replacing_failed_pods_only(probe: Probe) -> None:
    """KEP-3939: podReplacementPolicy Failed replaces a pod only once it is terminal."""
    delete_running_pod_and_watch(
        probe,
        "job-pod-replaced-when-failed.yaml",
        "failed",
        without_field="job-pod-replaced-when-failed.without-policy-field.yaml",
    )
