"""tools/adopt_recordings.py: a live run's passing recordings become offline tests, unchanged, beside the
family's other live recordings; failing ones are left for a person to resolve."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from adopt_recordings import adopt


def live_run(tmp_path: Path, outcome: str) -> Path:
    run = tmp_path / "runs" / "r1"
    (run / "recordings").mkdir(parents=True)
    (run / "probes").mkdir()
    recording = {
        "format": "pod-lifecycle-probes/recording/v1",
        "probe": "test_active_deadline.py::test_pod_deadline",
        "origin": {"kind": "live", "cluster": "local"},
        "interactions": [{"call": "server_version", "request": {}, "response": {"gitVersion": "v1.27.3"}}],
    }
    (run / "recordings" / "test-pod-deadline.json").write_text(json.dumps(recording))
    (run / "probes" / "test-pod-deadline.json").write_text(json.dumps({"outcome": outcome}))
    return run


def test_a_passing_live_recording_is_adopted_byte_for_byte_beside_the_others(tmp_path: Path) -> None:
    families = tmp_path / "probes"
    (families / "active_deadline" / "recordings").mkdir(parents=True)
    other = families / "active_deadline" / "recordings" / "pod_deadline--v1.26.6-live-local.json"
    other.write_text("{}")
    run = live_run(tmp_path, "passed")
    said = adopt(run, families=families)
    adopted = families / "active_deadline" / "recordings" / "pod_deadline--v1.27.3-live-local.json"
    assert adopted.read_bytes() == (run / "recordings" / "test-pod-deadline.json").read_bytes()
    assert other.read_text() == "{}"  # another version's recording is left as it was
    assert said == ["adopted probes/active_deadline/recordings/pod_deadline--v1.27.3-live-local.json"]


def test_a_failing_probes_recording_is_not_adopted_unless_asked(tmp_path: Path) -> None:
    families = tmp_path / "probes"
    run = live_run(tmp_path, "failed")
    assert adopt(run, families=families) == ["skipped test-pod-deadline.json: the probe failed"]
    assert not families.exists()
    adopt(run, include_failing=True, families=families)
    assert (families / "active_deadline" / "recordings" / "pod_deadline--v1.27.3-live-local.json").is_file()


def test_a_recording_goes_to_the_family_its_probe_record_names(tmp_path: Path) -> None:
    run = live_run(tmp_path, "passed")
    (run / "probes" / "test-pod-deadline.json").write_text(json.dumps({"outcome": "passed", "family": "elsewhere"}))
    adopt(run, families=tmp_path / "probes")
    assert (tmp_path / "probes" / "elsewhere" / "recordings" / "pod_deadline--v1.27.3-live-local.json").is_file()


def test_a_run_that_restarted_the_api_server_on_purpose_is_adopted_beside_the_plain_one(tmp_path: Path) -> None:
    run = live_run(tmp_path, "passed")
    path = run / "recordings" / "test-pod-deadline.json"
    recording = json.loads(path.read_text())
    recording["origin"]["disruptions"] = [{"after_s": 12.0, "apiserver_pid_after": 7062}]
    path.write_text(json.dumps(recording))
    said = adopt(run, families=tmp_path / "probes")
    name = "pod_deadline--v1.27.3-live-local-apiserver-restarted.json"
    assert said == [f"adopted probes/active_deadline/recordings/{name}"]


def test_a_recording_of_a_version_already_adopted_gets_the_next_free_name_and_replaces_nothing(tmp_path: Path) -> None:
    families = tmp_path / "probes"
    recordings = families / "active_deadline" / "recordings"
    recordings.mkdir(parents=True)
    earlier = recordings / "pod_deadline--v1.27.3-live-local.json"
    earlier.write_text('{"an": "earlier run"}')
    (recordings / "pod_deadline--v1.27.3-live-local-2.json").write_text('{"another": "run"}')
    run = live_run(tmp_path, "passed")
    said = adopt(run, families=families)
    assert earlier.read_text() == '{"an": "earlier run"}'
    third = recordings / "pod_deadline--v1.27.3-live-local-3.json"
    assert third.read_bytes() == (run / "recordings" / "test-pod-deadline.json").read_bytes()
    assert said == [f"adopted {third.relative_to(tmp_path)}"]
    assert adopt(run, families=families) == [f"already adopted as {third.relative_to(tmp_path)}"]
