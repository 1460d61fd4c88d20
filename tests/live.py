"""Live recordings as checked in, for tests that alter a copy into a contradiction or a version nobody ran.

The alteration happens in memory (or in the test's tmp_path); the files under recordings/ are never edited.
"""

from __future__ import annotations

from harness.base.families import recording_path
from harness.core.transport_recording import Recording


def live(relative: str) -> Recording:
    """A fresh copy of the live recording at `relative` under recordings/ ('family/name.json'): read from its file
    each time, so that no two callers share a part of it."""
    path = recording_path(relative)
    assert "-live-" in path.name, f"{relative}: tests alter live recordings only"
    return Recording.load(path)


def as_version(recording: Recording, version: str) -> Recording:
    """The recording as if its API server had reported `version` (the observations are left as recorded)."""
    for step in recording.interactions:
        if step["call"] == "server_version":
            step["response"]["gitVersion"] = version
    return recording
