"""harness/core/probe_helpers.py: the readings every family's probes share."""

from __future__ import annotations

from harness.core.probe_helpers import lost_exit_status
from harness.core.views import PodView
from tests.doubles import pod

DELETED = "2026-11-26T12:00:05Z"


def test_a_container_whose_end_the_kubelet_lost_is_told_apart_from_one_that_ended() -> None:
    """ContainerStatusUnknown (1.22-1.26) and `waiting` after the delete (1.21) are lost ends; a real exit, a
    container still running, or a pod not deleted are not."""
    unknown = {"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown"}}
    lost = PodView.from_object(pod(container_state=unknown, deletion_timestamp=DELETED, grace=5))
    assert "ContainerStatusUnknown, exit 137" in (lost_exit_status(lost) or "")
    waiting = {"waiting": {"reason": "ContainerCreating"}}
    lost_on_121 = PodView.from_object(pod(container_state=waiting, deletion_timestamp=DELETED, grace=5))
    assert "waiting (ContainerCreating) after it had run" in (lost_exit_status(lost_on_121) or "")
    ended = {"terminated": {"exitCode": 137, "reason": "Error", "finishedAt": DELETED}}
    assert lost_exit_status(PodView.from_object(pod(container_state=ended, deletion_timestamp=DELETED))) is None
    assert (
        lost_exit_status(PodView.from_object(pod(container_state={"running": {}}, deletion_timestamp=DELETED))) is None
    )
    assert lost_exit_status(PodView.from_object(pod(container_state=waiting))) is None  # not deleted: still starting
    assert lost_exit_status(PodView.from_object(pod(container_state=ended)), container="sidecar") is None
