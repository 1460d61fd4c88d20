"""The offline recordings: every one is live and says what ran; contradicting ones make probes fail clearly.

The contradiction tests run the probe functions themselves on altered copies of live recordings (altered in
memory, never on disk), through the same Probe/ReplayTransport the `--replay` run uses.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from harness.base.families import all_recordings, families
from harness.base.run import Run
from harness.core.probe import ClaimsFailed, ClaimsUndecided, Probe
from harness.core.transport_recording import Recording
from probes.phase_after_deletion import test_phase_after_deletion as phase_probes
from tests.live import as_version, live


@dataclass(frozen=True)
class Recorded:
    """What the tests below read of one checked-in recording."""

    path: Path
    probe: str
    origin: dict[str, Any]
    server_version: str | None  # None: the probe never asked the server for its version


@pytest.fixture(scope="module")
def recorded() -> tuple[Recorded, ...]:
    """Every checked-in recording, read once for the tests below (about 190 MB of JSON; they only read it): module
    scoped, so they run on one pytest-xdist worker together (tests/conftest.py) and only it reads them."""
    found = []
    for path in all_recordings():
        recording = Recording.load(path)  # refuses a file that is not a recording
        assert Recording.probe_of(path) == recording.probe, f"{path}: --replay's collection reads another probe"
        try:
            version: str | None = recording.server_git_version()
        except ValueError:
            version = None
        found.append(Recorded(path, recording.probe, recording.origin, version))
    return tuple(found)


def test_every_recording_is_live_and_says_what_ran(recorded: tuple[Recorded, ...]) -> None:
    """Every recording under recordings/ is live, kept as recorded; its origin names the cluster and, for a local
    one, the build. Nothing derived from the documents is replayed as if a cluster had shown it."""
    assert recorded
    for recording in recorded:
        path, origin = recording.path, recording.origin
        assert "-live-" in path.name, f"{path.name}: only live recordings belong under recordings/"
        assert origin["kind"] == "live", path
        if origin.get("cluster") == "local":
            assert origin["kubernetes"]["toolchain"] and origin["kubernetes"]["commit"], path
            assert origin["containerd"] and origin["runc"] and origin["kernel"] and origin["images"], path


# Probes written but not run live yet: the replay skips them by name and their claims rest on the expectations
# alone, as on a version no cluster ran. A probe leaves this set with its first adopted recordings.
NOT_RECORDED_YET: set[str] = set()


def test_every_probe_has_recordings_but_those_named_as_not_recorded_yet(recorded: tuple[Recorded, ...]) -> None:
    """A probe that loses its recordings, or a new one without any, fails here until it is named above; a named one
    that got recordings fails here too, so the set says what the replay skips."""
    probes = {recording.probe for recording in recorded}
    modules = [module for f in families() for module in f.modules]
    assert len(modules) >= len(families())
    unrecorded = set()
    for module in modules:
        names = re.findall(r"^def (test_\w+)\(probe", module.read_text(), flags=re.M)
        assert names, module
        unrecorded |= {f"{module.name}::{name}" for name in names} - probes
    assert unrecorded == NOT_RECORDED_YET


def test_every_probe_has_recordings_for_both_sides_of_the_1_27_boundary(recorded: tuple[Recorded, ...]) -> None:
    probes = {n for n in dir(phase_probes) if n.startswith("test_")}
    versions: dict[str, set[str | None]] = {}
    for recording in recorded:
        versions.setdefault(recording.probe.split("::")[1], set()).add(recording.server_version)
    for probe in probes:
        assert versions.get(probe, set()) >= {"v1.26.6", "v1.27.3"}, probe


def load(name: str) -> Recording:
    """A fresh copy of a live recording of the phase family."""
    return live(f"phase_after_deletion/{name}")


ALWAYS_127 = "always_pod_ignoring_sigterm--v1.27.3-live-local.json"
TRAPPING_127 = "always_pod_trapping_sigterm--v1.27.3-live-local.json"


def edit_states(recording: Recording, change: Callable[[dict[str, Any]], None]) -> Recording:
    """A copy of the recording with every watched state after the delete changed."""
    edited = copy.deepcopy(recording)
    for step in edited.interactions:
        for event in step.get("events", []):
            if event["object"]["metadata"].get("deletionTimestamp"):
                change(event["object"])
    return edited


def still_running_on_the_node(recording: Recording) -> Recording:
    """The recording's last node listing replaced by one showing the pod's main container still running."""
    watch = next(s for s in recording.interactions if s["call"] == "watch" and s["request"]["kind"] == "Pod")
    statuses = [e["object"]["status"].get("containerStatuses") or [{}] for e in watch["events"]]
    runtime_id = ""
    for status in reversed(statuses):
        if status[0].get("containerID"):
            runtime_id = status[0]["containerID"].split("//")[-1]
            break
    assert runtime_id, "the recording names no container"
    listing = next(s for s in reversed(recording.interactions) if s["call"] == "node_containers")
    listing["response"] = [{"id": runtime_id, "metadata": {"name": "main"}, "state": "CONTAINER_RUNNING"}]
    return recording


def run_probe(recording: Recording, tmp_path: Path) -> Probe:
    probe = Probe.replaying(recording, "phase_after_deletion", Run.start(tmp_path))
    getattr(phase_probes, recording.probe.split("::")[1])(probe)
    return probe


def test_a_1_27_cluster_whose_deleted_pod_stays_running_fails_and_says_it_behaved_like_1_26(tmp_path: Path) -> None:
    """The live local v1.27.3 Always pod with its phase left Running after the delete."""
    stays_running = edit_states(load(ALWAYS_127), lambda pod: pod["status"].update(phase="Running"))
    with pytest.raises(ClaimsFailed) as err:
        run_probe(stays_running, tmp_path)
    message = str(err.value)
    assert "1 of 5 claims failed on Kubernetes v1.27.3" in message
    assert "always.sigterm-ignored.phases: phases of the pod from the delete" in message
    assert "after its container stopped was ['Running']" in message
    assert "expected ['Running', 'Failed']" in message
    assert "the v1.27.3 cluster behaved like <1.27.0-rc.0" in message
    assert "timeline:" in message and "delete" in message


def test_a_1_26_cluster_that_fails_the_pod_fails_the_probe_the_other_way(tmp_path: Path) -> None:
    """The live local v1.26.6 Always pod with its phase turned Failed once its container stopped."""
    went_failed = edit_states(
        load("always_pod_ignoring_sigterm--v1.26.6-live-local.json"),
        lambda pod: (
            pod["status"].update(phase="Failed")
            if pod["status"]["containerStatuses"][0]["state"].get("terminated")
            else None
        ),
    )
    with pytest.raises(ClaimsFailed, match=r"the v1\.26\.6 cluster behaved like >=1\.27\.0-rc\.0"):
        run_probe(went_failed, tmp_path)


def test_a_container_killed_early_fails_the_grace_claim(tmp_path: Path) -> None:
    def killed_at_delete(pod: dict[str, Any]) -> None:
        state = pod["status"]["containerStatuses"][0]["state"]
        if "terminated" in state:
            state["terminated"]["finishedAt"] = pod["metadata"]["creationTimestamp"]

    with pytest.raises(
        ClaimsFailed, match=r"sigterm-ignored\.killed-after-grace: .* was -\d+\.0, expected between -1\.0 and 3\.0"
    ):
        run_probe(edit_states(load(ALWAYS_127), killed_at_delete), tmp_path)


def test_a_container_still_running_on_the_node_fails_the_node_claim(tmp_path: Path) -> None:
    recording = still_running_on_the_node(load(TRAPPING_127))
    with pytest.raises(ClaimsFailed, match=r"container-stopped-on-node: .* was 'running', expected 'stopped'"):
        run_probe(recording, tmp_path)


def test_a_pod_that_never_stops_is_observed_as_such_not_a_bare_timeout(tmp_path: Path) -> None:
    """The wait for the container to stop is the observation: its end is judged like any other, with evidence."""
    recording = load(ALWAYS_127)
    watch = next(step for step in recording.interactions if step["call"] == "watch")
    watch["events"] = [e for e in watch["events"] if "terminated" not in json.dumps(e["object"]["status"])]
    watch["closed_at"] = watch["events"][-1]["t"] + 100.0
    with pytest.raises(ClaimsFailed) as err:
        run_probe(recording, tmp_path)
    message = str(err.value)
    assert "3 of 5 claims failed on Kubernetes v1.27.3" in message
    assert "sigterm-ignored.exit: main container's terminated exitCode and reason was {'exitCode': None" in message
    assert "always.sigterm-ignored.phases: phases of the pod from the delete" in message
    assert "was ['Running'], expected ['Running', 'Failed']" in message
    assert "the v1.27.3 cluster behaved like <1.27.0-rc.0" in message
    assert "evidence: waited 35s for the deleted pod's containers to stop, which did not happen; " in message
    assert "last seen pod/running-pod: phase=Running" in message


def test_on_a_cluster_without_node_access_the_node_claim_is_not_observable_never_passed(tmp_path: Path) -> None:
    recording = load(TRAPPING_127)
    recording.origin["node_access"] = False
    recording.interactions = [s for s in recording.interactions if s["call"] != "node_containers"]  # no node listing
    with pytest.warns(UserWarning, match="container-stopped-on-node: not observable"):
        probe = run_probe(recording, tmp_path)
    statuses = {v.claim.id: v.status for v in probe.verdicts}
    assert statuses["container-stopped-on-node"] == "not observable"
    assert statuses["exit-status-kept"] == "pass"  # the kubelet kept the container's end: its own claims are read
    assert list(statuses.values()).count("pass") == 4


def test_evidence_of_a_replayed_failure_shows_the_pod_as_last_seen(tmp_path: Path) -> None:
    recording = edit_states(load(ALWAYS_127), lambda pod: pod["status"].update(phase="Running"))
    probe = Probe.replaying(recording, "phase_after_deletion", Run.start(tmp_path))
    with pytest.raises(ClaimsFailed):
        phase_probes.test_always_pod_ignoring_sigterm(probe)
    evidence = probe.save_evidence(live=None)
    last_seen = (evidence / "objects-last-seen.yaml").read_text()
    assert "exitCode: 137" in last_seen
    assert "deletionTimestamp" in last_seen
    assert "no cluster to ask" in (evidence / "README.txt").read_text()


from probes.active_deadline import test_active_deadline as deadline_probes  # noqa: E402


def load_deadline(name: str) -> Recording:
    """A fresh copy of a live recording of the active-deadline family."""
    return live(f"active_deadline/{name}")


def run_deadline_probe(recording: Recording, tmp_path: Path) -> Probe:
    probe = Probe.replaying(recording, "active_deadline", Run.start(tmp_path))
    getattr(deadline_probes, recording.probe.split("::")[1])(probe)
    return probe


def pod_watch(recording: Recording) -> dict[str, Any]:
    step: dict[str, Any] = next(
        s for s in recording.interactions if s["call"] == "watch" and s["request"]["kind"] == "Pod"
    )
    return step


def test_a_job_from_1_31_without_the_interim_failure_target_behaves_like_before_1_31(tmp_path: Path) -> None:
    """The live local v1.37.2 Job past its deadline with its FailureTarget condition taken out."""
    recording = load_deadline("job_deadline--v1.37.2-live-local.json")
    removed = 0
    for step in recording.interactions:
        if step["call"] == "watch" and step["request"]["kind"] == "Job":
            for event in step["events"]:
                conditions = event["object"]["status"].get("conditions", [])
                event["object"]["status"]["conditions"] = [c for c in conditions if c["type"] != "FailureTarget"]
                removed += len(conditions) - len(event["object"]["status"]["conditions"])
    assert removed  # the live recording had it
    with pytest.raises(ClaimsFailed) as err:
        run_deadline_probe(recording, tmp_path)
    assert "job-deadline.conditions-before-failed" in str(err.value)
    assert "the v1.37.2 cluster behaved like <1.31.0" in str(err.value)


def test_a_job_pod_that_is_not_deleted_at_the_job_deadline_fails_the_probe(tmp_path: Path) -> None:
    recording = load_deadline("job_with_shorter_job_deadline--v1.27.3-live-local.json")
    watch = pod_watch(recording)
    watch["events"] = [e for e in watch["events"] if e["type"] != "DELETED"]
    for event in watch["events"]:
        event["object"]["metadata"].pop("deletionTimestamp", None)
    with pytest.raises(ClaimsFailed, match=r"job-shorter\.active-pod-deleted: the pod is gone from the API was False"):
        run_deadline_probe(recording, tmp_path)


def test_a_job_past_its_deadline_whose_pod_keeps_running_fails_its_claims_not_on_a_timeout(tmp_path: Path) -> None:
    """The Job fails at its deadline but its pod is never deleted and keeps running (on the node too): the
    waits for the pod to go end, and what they saw is judged: not deleted, container still on the node.
    The live local v1.27.3 Job, its pod watch cut after the pod first ran and its node listings showing it."""
    recording = load_deadline("job_deadline--v1.27.3-live-local.json")
    watch = pod_watch(recording)
    first_running = next(i for i, e in enumerate(watch["events"]) if e["object"]["status"].get("phase") == "Running")
    watch["events"] = watch["events"][: first_running + 1]  # Running, then nothing more
    watch["closed_at"] = watch["events"][-1]["t"] + 60.0
    pod = watch["events"][-1]["object"]
    running = pod["status"]["containerStatuses"][0]["containerID"].split("//")[-1]
    listing = next(s for s in recording.interactions if s["call"] == "node_containers")
    node = {**listing, "response": [{"id": running, "metadata": {"name": "main"}, "state": "CONTAINER_RUNNING"}]}
    recording.interactions = [s for s in recording.interactions if s["call"] != "node_containers"]
    recording.interactions += [copy.deepcopy(node) for _ in range(51)]  # polled every 3 s for 150 s
    probe = Probe.replaying(recording, "active_deadline", Run.start(tmp_path))
    with pytest.raises(ClaimsFailed) as err:
        deadline_probes.test_job_deadline(probe)
    message = str(err.value)
    assert "2 of 6 claims failed on Kubernetes v1.27.3" in message
    assert "job-deadline.active-pod-deleted: the pod is gone from the API was False, expected True" in message
    assert "evidence: waited 45s for the Job's pods to be gone, or stopped and not being deleted, which did not" in (
        message
    )
    assert f"last seen pod/{pod['metadata']['name']}: phase=Running" in message
    assert "job-deadline.container-removed: " in message and "was 'running', expected 'removed'" in message
    verdicts = {v.claim.id: v for v in probe.verdicts}
    assert verdicts["job-deadline.active-pod-deleted"].detail["evidence"].startswith("waited 45s")
    assert verdicts["job-deadline.failed"].status == "pass"  # the Job itself did fail at its deadline


def job_whose_deadline_timer_was_lost(version: str) -> Recording:
    """What live local v1.24.1 showed of job-01: the Job is never failed, its pod runs on, only SuccessfulCreate.

    The live local v1.27.3 Job as if `version` had answered: its watch cut before the Failed condition, the pod's
    watch after it first ran, the Job's events left with the creation, the node listing the container running.
    Each watch is kept open as long as the probe waits on it (the Job's wait, then the pods' settling).
    """
    recording = as_version(load_deadline("job_deadline--v1.27.3-live-local.json"), version)
    created = next(s for s in recording.interactions if s["call"] == "create")["t_start"]
    jobs = next(s for s in recording.interactions if s["call"] == "watch" and s["request"]["kind"] == "Job")
    jobs["events"] = [e for e in jobs["events"] if not e["object"]["status"].get("conditions")]
    jobs["closed_at"] = created + 120.0  # the Job's wait: 115 s
    pods = pod_watch(recording)
    first_running = next(i for i, e in enumerate(pods["events"]) if e["object"]["status"].get("phase") == "Running")
    pods["events"] = pods["events"][: first_running + 1]
    pods["closed_at"] = created + 170.0  # then 45 s for the pods to settle
    pod = pods["events"][-1]["object"]
    running = pod["status"]["containerStatuses"][0]["containerID"].split("//")[-1]
    events = next(s for s in recording.interactions if s["call"] == "list_events")
    events["response"] = [e for e in events["response"] if e["reason"] == "SuccessfulCreate"]
    listing = next(s for s in recording.interactions if s["call"] == "node_containers")
    node = {**listing, "response": [{"id": running, "metadata": {"name": "main"}, "state": "CONTAINER_RUNNING"}]}
    recording.interactions = [s for s in recording.interactions if s["call"] not in ("list_events", "node_containers")]
    recording.interactions += [copy.deepcopy(events) for _ in range(11)]  # read once a second for 10 s
    recording.interactions += [copy.deepcopy(node) for _ in range(51)]  # polled every 3 s for 150 s
    return recording


def test_a_job_that_lost_its_deadline_timer_is_observed_not_failed_which_only_releases_that_lose_it_expect(
    tmp_path: Path,
) -> None:
    """JobReadyPods on and no k/k#110294 (v1.24.0-beta.0 to v1.24.2): the controller loses the Job's deadline
    timer when the pod is created, and nothing syncs the Job after its deadline. The probe observes that as
    values ("not failed within 115 s of its creation", the pod kept, its container running), not as a timeout,
    and the rows of those releases expect it (so do, as one outcome, those before k/k#110294 and k/k#105214, where a
    rewritten startTime can lose the timer); on v1.24.3 (k/k#110544) the same observations fail."""
    probe = Probe.replaying(job_whose_deadline_timer_was_lost("v1.24.1"), "active_deadline", Run.start(tmp_path / "a"))
    deadline_probes.test_job_deadline(probe)
    verdicts = {v.claim.id: v for v in probe.verdicts}
    assert {claim: v.status for claim, v in verdicts.items()} == dict.fromkeys(verdicts, "pass")
    assert verdicts["job-deadline.failed"].observed == "not failed within 115 s of its creation"
    assert verdicts["job-deadline.failed-after-deadline"].observed == "not failed within 115 s of its creation"
    assert verdicts["job-deadline.active-pod-deleted"].observed is False
    assert verdicts["job-deadline.events"].observed == ["SuccessfulCreate"]
    assert verdicts["job-deadline.container-removed"].observed == "running"
    fixed = Probe.replaying(job_whose_deadline_timer_was_lost("v1.24.3"), "active_deadline", Run.start(tmp_path / "b"))
    with pytest.raises(ClaimsFailed) as err:
        deadline_probes.test_job_deadline(fixed)
    message = str(err.value)
    assert "5 of 6 claims failed on Kubernetes v1.24.3" in message
    assert "job-deadline.failed: reason and message of the Job's Failed condition" in message
    rewrite, ready_pods = (
        ">=1.19,<1.22.12 || >=1.23.0-alpha.0,<1.23.0-alpha.3",
        ">=1.24.0-beta.0,<1.24.3 || >=1.25.0-alpha.0,<1.25.0-alpha.1",
    )
    assert f"the v1.24.3 cluster behaved like {rewrite} / {ready_pods}" in message


def test_a_pod_deadline_container_removed_from_the_node_fails_the_node_claim(tmp_path: Path) -> None:
    recording = load_deadline("pod_deadline--v1.27.3-live-local.json")
    listing = next(s for s in reversed(recording.interactions) if s["call"] == "node_containers")
    listing["response"] = []
    with pytest.raises(ClaimsFailed, match=r"pod-deadline\.container-on-node: .* was 'removed', expected 'exited'"):
        run_deadline_probe(recording, tmp_path)


def killed_after_sigterm(recording: Recording, seconds: float) -> Recording:
    """The recording with its container killed `seconds` after its SIGTERM instant, in every state that shows it.

    Its heartbeat (a beat every 0.1 s on the container's clock) then ends `seconds` after SIGTERM, and
    finishedAt (one-second resolution) moves by as much as the last beat did.
    """
    watch = next(s for s in recording.interactions if s["call"] == "watch")
    altered = 0
    for event in watch["events"]:
        statuses = event["object"]["status"].get("containerStatuses") or [{}]
        terminated = statuses[0].get("state", {}).get("terminated")
        if not terminated or "sigterm " not in terminated.get("message", ""):
            continue
        lines = terminated["message"].splitlines()
        last_beat = float(next(line for line in reversed(lines) if line.startswith("alive ")).split()[1])
        kept = [line for line in lines if not line.startswith("alive ")]
        sigterm = float(next(line for line in kept if line.startswith("sigterm ")).split()[1])
        beats = [round(sigterm + 0.1 * (i + 1), 2) for i in range(round(seconds * 10))]
        terminated["message"] = "".join(f"{line}\n" for line in kept + [f"alive {b:.2f}" for b in beats])
        finished = datetime.strptime(terminated["finishedAt"], "%Y-%m-%dT%H:%M:%SZ")
        moved = finished + timedelta(seconds=round(beats[-1] - last_beat))
        terminated["finishedAt"] = moved.strftime("%Y-%m-%dT%H:%M:%SZ")
        altered += 1
    assert altered, "the recording shows no terminated container with a SIGTERM instant"
    return recording


def test_deadline_kill_five_seconds_after_sigterm_passes_and_nine_seconds_fails(tmp_path: Path) -> None:
    """For the pod past its deadline, the grace (5 s) is judged from the container's own SIGTERM to its
    last heartbeat. Judged from the deadline (finishedAt, one-second resolution, bound 4-10 s) a kill 9 s after
    SIGTERM, 4 s past the grace, passed too; the interval on the container's clock tells 5 s from 9 s.
    The live local v1.27.3 pod-01, its heartbeat and finishedAt altered.
    """
    name = "pod_deadline--v1.27.3-live-local.json"
    five = killed_after_sigterm(load_deadline(name), 5.0)
    probe = Probe.replaying(five, "active_deadline", Run.start(tmp_path / "five"))
    deadline_probes.test_pod_deadline(probe)
    verdicts = {v.claim.id: v for v in probe.verdicts}
    assert verdicts["pod-deadline.killed-after-sigterm"].observed == 5.0
    assert all(v.status == "pass" for v in probe.verdicts)

    nine = killed_after_sigterm(load_deadline(name), 9.0)
    probe = Probe.replaying(nine, "active_deadline", Run.start(tmp_path / "nine"))
    with pytest.raises(ClaimsFailed) as err:
        deadline_probes.test_pod_deadline(probe)
    assert "1 of 7 claims failed" in str(err.value)
    wanted = r"pod-deadline\.killed-after-sigterm: .* was 9\.0, expected between 4\.5 and 5\.5"
    assert re.search(wanted, str(err.value))
    verdicts = {v.claim.id: v for v in probe.verdicts}
    assert verdicts["pod-deadline.killed-after-deadline"].status == "pass"  # the neighbour the old bound let through
    assert verdicts["pod-deadline.killed-after-deadline"].observed == 9.0


from probes.termination_order import test_termination_order as termination_probes  # noqa: E402

OVERRUN = "termination_order/prestop_overrunning_the_grace_period--v1.37.2-live-local.json"


def test_a_kubelet_that_kills_at_once_after_an_overrun_fails_the_two_second_claim(tmp_path: Path) -> None:
    """The live local v1.37.2 overrun, its container's finishedAt moved to the deletion timestamp."""
    recording = live(OVERRUN)
    watch = next(s for s in recording.interactions if s["call"] == "watch")
    last = watch["events"][-1]["object"]
    last["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = last["metadata"]["deletionTimestamp"]
    probe = Probe.replaying(recording, "termination_order", Run.start(tmp_path))
    with pytest.raises(
        ClaimsFailed, match=r"prestop-overrun\.killed-after-delete: .* was 5\.0, expected between 6\.0 and 10\.0"
    ):
        termination_probes.test_prestop_overrunning_the_grace_period(probe)


def test_sigkill_two_seconds_after_sigterm_passes_and_three_seconds_fails(tmp_path: Path) -> None:
    """The overrun claim is about SIGTERM -> SIGKILL (2 s), measured on the container's own clock.

    Judged from the delete (finishedAt, one-second resolution, bound 6-10 s) a kill 3 s after SIGTERM passes
    too (10 s on this recording); the interval from the container's SIGTERM instant to its last heartbeat tells
    2 s from 3 s. The live local v1.37.2 overrun (9 s from the delete), its heartbeat and finishedAt altered.
    """
    probe = Probe.replaying(killed_after_sigterm(live(OVERRUN), 2.0), "termination_order", Run.start(tmp_path / "two"))
    termination_probes.test_prestop_overrunning_the_grace_period(probe)
    verdicts = {v.claim.id: v for v in probe.verdicts}
    assert verdicts["prestop-overrun.killed-after-sigterm"].observed == 2.0
    assert all(v.status == "pass" for v in probe.verdicts)

    three = killed_after_sigterm(live(OVERRUN), 3.0)
    probe = Probe.replaying(three, "termination_order", Run.start(tmp_path / "three"))
    with pytest.raises(ClaimsFailed) as err:
        termination_probes.test_prestop_overrunning_the_grace_period(probe)
    assert "1 of 6 claims failed" in str(err.value)
    wanted = r"prestop-overrun\.killed-after-sigterm: .* was 3\.0, expected between 1\.5 and 2\.5"
    assert re.search(wanted, str(err.value))
    verdicts = {v.claim.id: v for v in probe.verdicts}
    assert verdicts["prestop-overrun.killed-after-delete"].status == "pass"  # the neighbour the old bound let through
    assert verdicts["prestop-overrun.killed-after-delete"].observed == 10.0


def test_a_watch_gap_over_the_transition_makes_the_claim_undecided_never_passed(tmp_path: Path) -> None:
    """The live local v1.27.3 Always pod, its updates from Failed on replaced by a re-list that shows it Failed: the
    phases match, but the watch was down across the transition, which could have hidden any state: undecided."""
    recording = load(ALWAYS_127)
    watch = next(step for step in recording.interactions if step["call"] == "watch")
    failed = next(i for i, e in enumerate(watch["events"]) if e["object"]["status"]["phase"] == "Failed")
    last = copy.deepcopy(watch["events"][-1]["object"])
    relisted = {"t": watch["events"][failed]["t"], "type": "RELISTED", "object": {"items": [last]}}
    watch["events"] = [*watch["events"][:failed], {**relisted, "gap": "watch expired (410 Gone)"}]
    with pytest.raises(ClaimsFailed) as err:
        run_probe(recording, tmp_path)
    assert isinstance(err.value, ClaimsUndecided)
    assert (
        "was ['Running', 'Failed'] as expected, but a watch gap could hide a state that decides it (watch expired "
        "(410 Gone))" in str(err.value)
    )


def test_a_relist_that_still_shows_the_pod_running_cannot_explain_a_missing_failed(tmp_path: Path) -> None:
    """The same, but the re-list shows the pod still Running, and the watch sees it whole from then on: no state
    hidden before that re-list can make the phases end Failed (a gap hides states, it does not reorder them)."""
    recording = load(ALWAYS_127)
    watch = next(step for step in recording.interactions if step["call"] == "watch")
    failed = next(i for i, e in enumerate(watch["events"]) if e["object"]["status"]["phase"] == "Failed")
    last = copy.deepcopy(watch["events"][-1]["object"])
    last["status"]["phase"] = "Running"  # what a re-list shows if the pod never left Running
    relisted = {"t": watch["events"][failed]["t"], "type": "RELISTED", "object": {"items": [last]}}
    watch["events"] = [*watch["events"][:failed], {**relisted, "gap": "watch expired (410 Gone)"}]
    with pytest.raises(ClaimsFailed) as err:
        run_probe(recording, tmp_path)
    assert type(err.value) is ClaimsFailed
    assert "its container stopped was ['Running'], expected ['Running', 'Failed']" in str(err.value)
    assert "the watch gap (watch expired (410 Gone)) cannot explain this" in str(err.value)


def test_a_1_25_server_whose_job_honours_its_pod_failure_policy_says_it_behaved_like_1_26(tmp_path: Path) -> None:
    """A synthetic alteration of the live local v1.27.3 exit-42 Job: reported as v1.25.16, where the policy's
    feature gate is off by default, its FailJob outcome (one pod, PodFailurePolicy) contradicts the version."""
    from probes.job_failure_policy import test_job_failure_policy as policy_probes

    recording = as_version(
        live("job_failure_policy/exit_code_42_fails_the_job_through_its_pod_failure_policy--v1.27.3-live-local.json"),
        "v1.25.16",
    )
    probe = Probe.replaying(recording, "job_failure_policy", Run.start(tmp_path))
    with pytest.raises(ClaimsFailed) as err:
        policy_probes.test_exit_code_42_fails_the_job_through_its_pod_failure_policy(probe)
    assert "failure-policy.failed" in str(err.value) and "the v1.25.16 cluster behaved like >=1.26" in str(err.value)
    assert "failure-policy.pods-run: number of pods the Job created was 1, expected 2" in str(err.value)
