"""Bounded, event-driven waits and the timeline (harness/core/observe.py, timeline.py, observe_readings.py), on scripted
watch events."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass, field, fields

import pytest

from harness.core.basis import Basis, Gap, Moment
from harness.core.observe import Observer, ProbeImpossible, ProbeTimeout
from harness.core.observe_readings import PodObserver, cannot_start, delete_requested_at
from harness.core.timeline import Sighting, Timeline, order_of
from harness.core.transport import WatchEvent
from harness.core.views import ContainerView, JobView, PodView
from tests.doubles import ScriptedWatch, pod


@dataclass
class Watch:
    """Stands in for a watch as a Basis reads it."""

    kind: str = "Pod"
    gaps: list[Gap] = field(default_factory=list)


TERMINATED = {"terminated": {"exitCode": 137, "reason": "Error", "finishedAt": "2023-12-11T00:00:10Z"}}


def observer(events: list[WatchEvent]) -> tuple[PodObserver, ScriptedWatch, Timeline]:
    watch = ScriptedWatch(events)
    timeline = Timeline()
    return (
        PodObserver(watch, timeline, watch.clock, "Pod", [pod(phase="Pending", ready=False)], focus="running-pod"),
        watch,
        timeline,
    )


def test_wait_returns_as_soon_as_the_condition_holds() -> None:
    obs, watch, _ = observer([WatchEvent(1.0, "MODIFIED", pod()), WatchEvent(9.0, "MODIFIED", pod(rv="3"))])
    obs.wait_for("pod Ready", lambda o: o.latest.ready, within=5)
    assert watch.now == 1.0
    assert obs.latest.phase == "Running"


def test_a_timeout_says_what_was_awaited_and_what_was_last_seen() -> None:
    obs, watch, _ = observer([WatchEvent(1.0, "MODIFIED", pod(ready=False))])
    with pytest.raises(ProbeTimeout) as err:
        obs.wait_for("the containers to stop", lambda o: o.latest.all_containers_terminated, within=7)
    message = str(err.value)
    assert message.startswith("timed out after 7s waiting for the containers to stop")
    assert "last seen pod/running-pod: phase=Running" in message
    assert "[main: running]" in message
    assert "timeline:" in message and "MODIFIED" in message
    assert watch.now == pytest.approx(7.0)


def test_a_veto_stops_the_wait_at_once_with_its_reason() -> None:
    stuck = pod(phase="Pending", ready=False, container_state={"waiting": {"reason": "ImagePullBackOff"}})
    obs, watch, _ = observer([WatchEvent(2.0, "MODIFIED", stuck), WatchEvent(50.0, "MODIFIED", pod())])
    with pytest.raises(ProbeImpossible, match="container main is waiting: ImagePullBackOff"):
        obs.wait_for("pod Ready", lambda o: o.latest.ready, within=180, veto=cannot_start)
    assert watch.now == 2.0


def test_observe_for_keeps_recording_and_phases_show_every_change_after_the_action() -> None:
    deleting = pod(deletion_timestamp="2023-12-11T00:00:10Z", grace=5)
    failed = pod(phase="Failed", ready=False, container_state=TERMINATED, deletion_timestamp="2023-12-11T00:00:10Z")
    obs, _, _ = observer(
        [
            WatchEvent(1.0, "MODIFIED", pod()),
            WatchEvent(5.1, "MODIFIED", deleting),
            WatchEvent(10.4, "MODIFIED", failed),
        ]
    )
    obs.wait_for("Ready", lambda o: o.latest.ready, within=5)
    obs.observe_for(20)
    assert obs.phases(obs.latest, 5.0)[0] == ["Running", "Failed"]
    assert obs.phases(obs.latest, 11.0)[0] == ["Failed"]


def test_phase_that_never_changes_is_one_entry() -> None:
    obs, _, _ = observer([WatchEvent(1.0, "MODIFIED", pod()), WatchEvent(6.0, "MODIFIED", pod(rv="9"))])
    obs.observe_for(10)
    assert obs.phases(obs.latest, 2.0)[0] == ["Running"]


def test_deleted_event_marks_the_pod_gone_with_its_last_state() -> None:
    final = pod(phase="Succeeded", ready=False, container_state=TERMINATED)
    obs, _, _ = observer([WatchEvent(3.0, "DELETED", final)])
    obs.wait_for("gone", lambda o: o.gone, within=10)
    assert obs.latest.phase == "Succeeded"


def test_a_relist_after_a_gap_is_marked_in_the_timeline() -> None:
    obs, _, timeline = observer([WatchEvent(4.0, "RELISTED", {"items": [pod(rv="7")]}, gap="watch expired (410 Gone)")])
    obs.observe_for(5)
    assert timeline.gaps == ["watch expired (410 Gone)"]
    assert "[gap: watch expired (410 Gone)]" in timeline.render()


def test_a_relist_that_finds_nothing_means_gone() -> None:
    obs, _, _ = observer([WatchEvent(4.0, "RELISTED", {"items": []}, gap="watch connection lost")])
    obs.wait_for("gone", lambda o: o.gone, within=10)
    assert obs.gone


def test_a_failed_watch_is_impossible_not_a_timeout() -> None:
    obs, _, _ = observer([WatchEvent(1.0, "ERROR", None, gap="watch failed: 403 Forbidden")])
    with pytest.raises(ProbeImpossible, match="403 Forbidden"):
        obs.wait_for("Ready", lambda o: o.latest.ready, within=10)


def test_timeline_times_are_relative_to_the_anchor_action() -> None:
    timeline = Timeline()
    timeline.action(2.0, "create")
    timeline.action(5.0, "delete", anchor=True)
    timeline.observed(10.5, "pod/p", "MODIFIED", {"phase": "Failed"})
    entries = timeline.to_json()["entries"]
    assert [e["t"] for e in entries] == [-3.0, 0.0, 5.5]
    assert timeline.to_json()["anchor"] == "delete"


def test_a_namespace_watch_tracks_every_pod_and_a_relist_marks_the_missing_ones_gone() -> None:
    watch = ScriptedWatch(
        [
            WatchEvent(1.0, "ADDED", pod(name="job-a")),
            WatchEvent(2.0, "ADDED", pod(name="job-b")),
            WatchEvent(9.0, "RELISTED", {"items": [pod(name="job-b", phase="Failed")]}, gap="watch connection lost"),
        ]
    )
    timeline = Timeline()
    obs = PodObserver(watch, timeline, watch.clock, "Pod")
    obs.wait_for("two pods", lambda o: len(o.names()) == 2, within=5)
    obs.wait_for("job-a gone", lambda o: "u-job-a" in o.deleted, within=10)
    assert obs.names() == ["job-a", "job-b"]
    job_b = obs.named("job-b")
    assert job_b is not None and job_b.phase == "Failed"
    assert obs.phases(job_b, 0.0)[0] == ["Running", "Failed"]
    assert obs.first_seen(job_b, lambda p: p.phase == "Failed") == 9.0
    assert "[gap: watch connection lost]" in timeline.render()


def test_job_views_read_conditions_and_counts() -> None:
    from harness.core.views import JobView

    job = JobView.from_object(
        {
            "metadata": {"name": "job-01", "resourceVersion": "5"},
            "status": {
                "failed": 1,
                "startTime": "2021-06-11T14:01:57Z",
                "conditions": [
                    {"type": "FailureTarget", "status": "True", "reason": "DeadlineExceeded"},
                    {"type": "Failed", "status": "True", "reason": "DeadlineExceeded",
                     "message": "Job was active longer than specified deadline"},
                ],
            },
        }
    )  # fmt: skip
    failed = job.condition("Failed")
    assert failed is not None and failed.message == "Job was active longer than specified deadline"
    assert job.finished and job.failed == 1 and job.active == 0
    assert job.condition("Complete") is None


def test_two_watches_are_merged_in_the_servers_order_not_their_arrival_order() -> None:
    from harness.core.observe_readings import in_server_order

    timeline = Timeline()
    later_arrival = ScriptedWatch([WatchEvent(5.0, "MODIFIED", {"metadata": {"name": "web", "resourceVersion": "12"}})])
    earlier_arrival = ScriptedWatch([WatchEvent(1.0, "ADDED", pod(rv="13"))])
    sets = Observer(later_arrival, timeline, later_arrival.clock, "StatefulSet")
    pods = Observer(earlier_arrival, timeline, earlier_arrival.clock, "Pod")
    sets.observe_for(6.0)
    pods.observe_for(6.0)
    merged = in_server_order(sets, pods)
    assert [(kind, view.resource_version) for _, kind, _, view in merged] == [("StatefulSet", "12"), ("Pod", "13")]


def test_a_name_that_comes_back_is_no_longer_counted_as_deleted() -> None:
    watch = ScriptedWatch([WatchEvent(1.0, "DELETED", pod(rv="3")), WatchEvent(2.0, "ADDED", pod(rv="4", uid="u-2"))])
    observer = Observer(watch, Timeline(), watch.clock, "Pod", focus="running-pod")
    observer.observe_for(1.5)
    assert observer.gone
    observer.wait_for("the pod to come back", lambda o: not o.gone, within=2.0)
    assert [t for _, t, _ in observer.changes] == ["DELETED", "ADDED"]


# ------------------------------------------------------------------------------------- gap bookkeeping


def namespace_watch(events: list[WatchEvent]) -> PodObserver:
    """A namespace's pod watch started at t=0 with pod a (rv 1) and pod b (rv 2), fed `events` up to t=30."""
    watch = ScriptedWatch(events)
    obs = PodObserver(watch, Timeline(), watch.clock, "Pod", [pod(name="a", rv="1"), pod(name="b", rv="2")])
    obs.observe_for(30)
    return obs


def test_a_gap_keeps_the_stretch_it_may_hide_and_what_its_relist_showed_changed() -> None:
    obs = namespace_watch(
        [
            WatchEvent(3.0, "MODIFIED", pod(name="a", rv="5")),
            WatchEvent(9.0, "RELISTED", {"items": [pod(name="a", rv="5"), pod(name="c", rv="8")]}, gap="410 Gone"),
            WatchEvent(12.0, "MODIFIED", pod(name="c", rv="9")),
            WatchEvent(20.0, "RELISTED", {"items": [pod(name="a", rv="5"), pod(name="c", rv="9")]}, gap="lost"),
        ]
    )
    assert obs.gaps == [
        Gap(since=3.0, since_version=5, until=9.0, why="410 Gone", changed=frozenset({"u-b", "u-c"})),  # b gone, c new
        Gap(since=12.0, since_version=9, until=20.0, why="lost", changed=frozenset()),  # nothing changed
    ]
    assert obs.deleted == {"u-b"}


def test_gaps_are_given_only_to_the_stretches_they_may_hide() -> None:
    obs = namespace_watch(
        [
            WatchEvent(3.0, "MODIFIED", pod(name="a", rv="5")),
            WatchEvent(9.0, "RELISTED", {"items": [pod(name="a", rv="5"), pod(name="c", rv="8")]}, gap="410 Gone"),
            WatchEvent(12.0, "MODIFIED", pod(name="c", rv="9")),
            WatchEvent(20.0, "RELISTED", {"items": [pod(name="a", rv="5"), pod(name="c", rv="9")]}, gap="lost"),
        ]
    )

    def hiding(since: float | Moment, until: float | Moment, objects: list[str] | None = None) -> list[str]:
        return [gap.why for gap in obs.during(since, until, objects).hiding()]

    assert hiding(0.0, 30.0) == ["410 Gone", "lost"]  # any object: every gap of the stretch
    assert hiding(9.5, 30.0) == ["lost"]  # the first gap ended before
    assert hiding(21.0, 30.0) == []
    assert hiding(0.0, 2.0) == []  # before either gap began
    assert hiding(4.0, 5.0) == ["410 Gone"]
    assert hiding(10.0, 11.0) == []  # between the gaps: every event was delivered
    assert hiding(8.0, 13.0) == ["410 Gone", "lost"]
    assert hiding(0.0, 30.0, ["u-a"]) == []  # a re-list that showed a as it was hid nothing about it
    # a change at rv 7, seen (on another watch) at 6.0: the first gap began at rv 5 and ended at 9.0, and
    # re-listed b gone: it may have hidden b's deletion before rv 7, learned only after it
    at_7 = Moment(6.0, 7)
    assert hiding(at_7, at_7, ["u-a", "u-b"]) == ["410 Gone"]
    assert hiding(at_7, at_7, ["u-a"]) == []  # a came back unchanged: nothing hidden about it
    assert hiding(Moment(2.0, 4), Moment(2.0, 4), ["u-b"]) == []  # the gap began after rv 4
    assert hiding(Moment(9.5, 7), Moment(9.5, 7), ["u-b"]) == []  # b's deletion was known before the change was seen
    assert hiding(Moment(15.0, 10), Moment(15.0, 10), ["u-a", "u-c"]) == []  # the second re-list changed nothing
    assert hiding(Moment(6.0), Moment(6.0), ["u-b"]) == ["410 Gone"]  # no integer version: by arrival


def test_an_object_known_only_from_a_relist_is_sighted_with_the_gaps_stretch() -> None:
    obs = namespace_watch(
        [
            WatchEvent(3.0, "MODIFIED", pod(name="a", rv="5")),
            WatchEvent(9.0, "RELISTED", {"items": [pod(name="a", rv="5"), pod(name="c", rv="8")]}, gap="410 Gone"),
            WatchEvent(12.0, "MODIFIED", pod(name="a", rv="9", phase="Failed")),
        ]
    )
    new = obs.first_sighting(lambda _, view: view.name == "c")
    assert new is not None and (new.t, new.not_before, new.type, new.why) == (9.0, 3.0, "RELISTED", "410 Gone")
    gone = obs.first_sighting(lambda type_, view: view.name == "b" and type_ == "GONE")
    assert gone is not None and (gone.t, gone.not_before) == (9.0, 3.0)
    failed = obs.first_sighting(lambda _, view: view.phase == "Failed")
    assert failed is not None and (failed.t, failed.not_before, failed.gap) == (12.0, 12.0, None)
    assert order_of(new, failed) is True  # the whole stretch ended before a failed: for certain
    assert Basis.order(new, failed, obs).hiding() == []
    assert order_of(failed, new) is False
    assert [gap.why for gap in obs.sighted(new, 0.0).hiding()] == ["410 Gone"]  # when in the gap c came
    assert obs.sighted(failed, 0.0).hiding() == []  # seen as it happened
    assert obs.first_sighting(lambda _, view: view.name == "z") is None


def test_two_sightings_whose_stretches_overlap_are_ordered_by_arrival_and_name_the_gap() -> None:
    view = PodView.from_object(pod())
    down = Gap(3.0, None, 9.0, "410 Gone", frozenset({"u-running-pod"}))
    relisted = Sighting(9.0, 3.0, "RELISTED", view, down)
    seen = Sighting(5.0, 5.0, "MODIFIED", view)
    assert order_of(seen, relisted) is True
    assert order_of(relisted, seen) is False
    assert Basis.order(seen, relisted, Watch()).hiding() == [down]
    assert Basis.order(relisted, relisted, Watch()).hiding() == [down]  # one gap named once


def test_the_delete_instant_is_read_from_the_first_deletion_view() -> None:
    first = pod(deletion_timestamp="2023-12-11T00:00:15Z", grace=10, rv="2")
    rewritten = pod(deletion_timestamp="2023-12-11T00:00:14Z", grace=0, rv="3", phase="Failed", ready=False)
    watch = ScriptedWatch([WatchEvent(1.0, "MODIFIED", first), WatchEvent(10.0, "MODIFIED", rewritten)])
    obs = PodObserver(watch, Timeline(), watch.clock, "Pod", [pod()], focus="running-pod")
    obs.observe_for(20)
    deleted = obs.as_deleted(obs.latest)
    assert deleted is not None and deleted.resource_version == "2"
    requested = delete_requested_at(deleted)
    assert requested is not None and requested.isoformat() == "2023-12-11T00:00:05+00:00"
    assert obs.latest.deletion_grace_period_seconds == 0  # what the old reading took: 14 s - 0 s


def test_the_timeline_keeps_each_views_fields_under_their_api_names() -> None:
    pod = PodView.from_object(
        {
            "metadata": {
                "name": "p",
                "namespace": "n",
                "uid": "u",
                "resourceVersion": "1",
                "deletionTimestamp": "2026-11-26T00:00:00Z",
                "deletionGracePeriodSeconds": 5,
            },
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [
                    {
                        "name": "main",
                        "containerID": "containerd://c1",
                        "state": {
                            "terminated": {"exitCode": 137, "reason": "Error", "finishedAt": "2026-11-26T00:00:05Z"}
                        },
                    }
                ],
            },
        }
    )
    assert pod.timeline_fields() == {
        "phase": "Running",
        "reason": None,
        "deletionTimestamp": "2026-11-26T00:00:00Z",
        "deletionGracePeriodSeconds": 5,
        "conditions": {"Ready": "True"},
        "containers": [
            {
                "name": "main",
                "state": "terminated",
                "exitCode": 137,
                "reason": "Error",
                "finishedAt": "2026-11-26T00:00:05Z",
                "containerID": "containerd://c1",
            }
        ],
    }
    job = JobView.from_object(
        {
            "metadata": {"name": "j", "namespace": "n", "uid": "u", "resourceVersion": "1"},
            "status": {"active": 1, "failed": 2, "conditions": [{"type": "Failed", "status": "True", "reason": "X"}]},
        }
    )
    assert job.timeline_fields() == {
        "active": 1,
        "succeeded": 0,
        "failed": 2,
        "terminating": None,
        "conditions": {"Failed": "True/X"},
    }


def test_a_view_made_from_an_object_is_the_one_its_dataclass_makes() -> None:
    """PodView and ContainerView set their fields at once (views.made), not through the frozen dataclass's __init__:
    every field is set, nothing else, the view equals the one __init__ makes of the same values and stays frozen."""
    made = PodView.from_object(
        {
            **pod(deletion_timestamp="2026-12-07T00:00:00Z", grace=3),
            "status": {
                "phase": "Running",
                "containerStatuses": [{"name": "main", "state": {"running": {}}, "containerID": "containerd://c"}],
                "initContainerStatuses": [{"name": "side", "state": {"terminated": {"exitCode": 1, "message": "m"}}}],
                "conditions": [{"type": "Ready", "status": "False"}],
            },
        }
    )
    views: list[PodView | ContainerView] = [made, *made.containers, *made.init_containers]
    assert len(views) == 3
    for view in views:
        names = [f.name for f in fields(view)]
        assert list(vars(view)) == names
        assert type(view)(**{name: getattr(view, name) for name in names}) == view
    assert isinstance(made.init_containers[0], ContainerView) and made.init_containers[0].message == "m"
    assert (made.deletion_grace_period_seconds, made.containers[0].runtime_id) == (3, "c")
    with pytest.raises(FrozenInstanceError):
        setattr(made, "phase", "Failed")  # noqa: B010 - the assignment a frozen view refuses
