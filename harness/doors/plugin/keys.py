"""What the parts of the suite's pytest plugin share: the keys of what one part stashes on the config (or an item)
for another, and the names of outcomes and of the probe fixture."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from harness.base.run import Run

if TYPE_CHECKING:
    from harness.base.families import Family
    from harness.clusters.owner import RunClusters
    from harness.doors.plugin.choice import ChosenCluster

PROBE_FIXTURE = "probe"  # what makes a test function a probe
UNDECIDED_OUTCOME = "undecided"
NO_PROBE_RAN = "no probe ran"  # a run record's status when pytest ended green but every probe was skipped
RAN = "ran"  # OUTCOMES: probe calls that ran to a verdict

REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()  # an item's reports, by phase (setup, call, teardown)
OUTCOMES = pytest.StashKey[dict[str, int]]()  # failed / undecided probe calls of this session
RUN = pytest.StashKey[Run]()
# pytest -n N (pytest-xdist) without --run-id: the run id the controller gives its workers, so they share one run
SHARED_RUN_ID = pytest.StashKey[str]()
CLUSTER: pytest.StashKey[ChosenCluster] = pytest.StashKey()  # the cluster the options chose, resolved
RUN_CLUSTERS: pytest.StashKey[RunClusters] = pytest.StashKey()  # their owner (harness/clusters/owner.py)
RECORDINGS = pytest.StashKey[dict[str, list[Path]]]()  # --replay: recording files by the probe they are of
# the family of each probe module (and the family its probe marker names, if any), found once a session
MODULE_FAMILIES: pytest.StashKey[dict[tuple[Path, str | None], Family]] = pytest.StashKey()
DURATIONS = pytest.StashKey[dict[str, float]]()  # --schedule: seconds per probe id (harness/doors/schedule.py)
INTERRUPTED_LINE = pytest.StashKey[str]()  # said last, after pytest's own summary
REFUSED_LINE = pytest.StashKey[str]()  # pytest-xdist's controller: why its workers ran no probe (no cluster)
REFUSED_KEY = "plp_refused"  # the same, in a worker's workeroutput
