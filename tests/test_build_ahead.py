"""make bisect builds ahead (harness/axis/build_ahead.py, harness/axis/bisect.py): while one candidate's probes run,
the next one builds, one build at a time, and a build the search no longer wants is stopped. Fakes stand in for the
builds and the probes (no Kubernetes is built); events, not sleeps, say what ran when."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
from collections.abc import Sequence

import pytest

from harness.axis.bisect import BAD, GOOD, SKIP, bisect, first_candidates, next_candidates
from harness.axis.build_ahead import BUILD_NICENESS, BuildAhead
from harness.axis.release_axis import Readied
from harness.base.versions import Release

HANG_GUARD_S = 60.0  # a bug would wait forever; a slow machine takes well under this


class FakeBuilds:
    """A kind's ready(): each build waits until the test releases it (or its stop is set), noting what overlapped."""

    def __init__(self, held: Sequence[str] = ()) -> None:
        self.held = set(held)  # builds that wait for `release` (the others end at once)
        self.release_build = {r: threading.Event() for r in held}
        self.started: dict[str, threading.Event] = {}
        self.order: list[str] = []
        self.running = 0
        self.most_at_once = 0
        self.lock = threading.Lock()

    def started_event(self, release: str) -> threading.Event:
        with self.lock:
            return self.started.setdefault(release, threading.Event())

    def __call__(self, release: str, stop: threading.Event, quiet: bool) -> Readied:
        with self.lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            self.order.append(release)
        self.started_event(release).set()
        try:
            if release in self.held:
                while not self.release_build[release].is_set() and not stop.is_set():
                    self.release_build[release].wait(0.01)
            if stop.is_set():
                return Readied(Release.parse(release), why_not="could not be built: stopped")
            return Readied(Release.parse(release), {"version": release})
        finally:
            with self.lock:
                self.running -= 1


def test_the_wanted_releases_build_one_at_a_time_and_a_needed_one_goes_before_those_not_started() -> None:
    builds = FakeBuilds(held=["1.27.3"])
    builder = BuildAhead(builds, say=lambda line: None)
    try:
        builder.want(["1.27.3", "1.27.8", "1.27.5"])
        assert builds.started_event("1.27.3").wait(HANG_GUARD_S)
        threading.Timer(0.05, builds.release_build["1.27.3"].set).start()
        assert builder.ready("1.27.5").record == {"version": "1.27.5"}
        assert builds.order[:2] == ["1.27.3", "1.27.5"]
        assert builder.ready("1.27.8").record == {"version": "1.27.8"}
        assert builder.ready("1.27.3").record == {"version": "1.27.3"}  # built once, kept
        assert builds.order == ["1.27.3", "1.27.5", "1.27.8"] and builds.most_at_once == 1
    finally:
        builder.close()


def test_a_build_no_longer_wanted_is_stopped_and_the_needed_one_builds() -> None:
    builds = FakeBuilds(held=["1.27.8"])
    builder = BuildAhead(builds, say=lambda line: None)
    try:
        builder.want(["1.27.8", "1.27.5"])
        assert builds.started_event("1.27.8").wait(HANG_GUARD_S)
        builder.want(["1.27.5"])  # the outcome went the other way: 1.27.8 is not tried next
        assert builder.ready("1.27.5").record == {"version": "1.27.5"}
        assert builder.stopped == ["1.27.8"] and builds.most_at_once == 1
        builds.release_build["1.27.8"].set()
        assert builder.ready("1.27.8").record == {"version": "1.27.8"}  # wanted again later: built again
    finally:
        builder.close()


def test_ready_for_a_release_not_wanted_yet_waits_behind_the_running_build() -> None:
    builds = FakeBuilds(held=["1.27.8"])
    builder = BuildAhead(builds, say=lambda line: None)
    try:
        builder.want(["1.27.8"])
        assert builds.started_event("1.27.8").wait(HANG_GUARD_S)
        threading.Timer(0.05, builds.release_build["1.27.8"].set).start()
        assert builder.ready("1.27.4").record == {"version": "1.27.4"}
        assert builds.order == ["1.27.8", "1.27.4"] and builder.stopped == [] and builds.most_at_once == 1
    finally:
        builder.close()


def test_a_failed_build_is_raised_where_the_release_is_needed_and_close_stops_the_running_one() -> None:
    def ready(release: str, stop: threading.Event, quiet: bool) -> Readied:
        if release == "1.27.6":
            raise OSError("disk full")
        stop.wait(HANG_GUARD_S)
        return Readied(Release.parse(release))

    builder = BuildAhead(ready, say=lambda line: None)
    builder.want(["1.27.6"])
    with pytest.raises(OSError, match="disk full"):
        builder.ready("1.27.6")
    builder.want(["1.27.7"])
    closing = threading.Thread(target=builder.close)
    closing.start()
    closing.join(HANG_GUARD_S)
    assert not closing.is_alive()  # close stopped the running build instead of waiting it out


def test_the_next_candidates_are_those_the_search_may_take_if_good_bad_or_skipped() -> None:
    versions = [f"1.27.{p}" for p in range(10)]
    assert first_candidates(versions) == ["1.27.0", "1.27.9", "1.27.4"]
    assert first_candidates(versions[:2]) == ["1.27.0", "1.27.1"]
    found = bisect(versions, lambda v: GOOD if v < "1.27.6" else BAD, say=lambda line: None)
    state = type(found)(versions, {"1.27.0": GOOD, "1.27.9": BAD})
    # Probing 1.27.4 between 0 and 9: good -> 1.27.6 (the larger side first), bad -> 1.27.2, skip -> 1.27.3.
    assert next_candidates(state, versions, 0, 9, 4) == ["1.27.6", "1.27.2", "1.27.3"]


def test_after_a_skip_the_release_tried_next_was_built_ahead() -> None:
    """A candidate the proxy refuses is a skip at once; the search then tries the nearest untried release, and
    that one was wanted (so built) while the skip was on its way, as the good and bad branches are."""
    versions = [f"1.23.{p}" for p in range(4, 18)]  # GOOD 1.23.4, BAD 1.23.17: the middle is 1.23.10
    refused = {"1.23.10", "1.23.11", "1.23.13", "1.23.16"}
    wanted: list[list[str]] = []

    def run(version: str) -> str:
        if version in refused:
            return SKIP
        return BAD if int(version.split(".")[-1]) >= 7 else GOOD

    found = bisect(versions, run, say=lambda line: None, ahead=lambda releases: wanted.append(list(releases)))
    assert found.first_bad == "1.23.7"
    ran = [w[0] for w in wanted][2:]  # after GOOD and BAD, what the search probed, in order
    assert ran[0] == "1.23.10" and ran[1] in wanted[2][1:]  # 1.23.10 is a skip: its successor was asked for
    for before, after in itertools.pairwise(ran):
        assert after in next(w for w in wanted if w[0] == before), f"{after} was not wanted while {before} ran"


def test_while_a_candidate_is_probed_the_one_tried_next_builds() -> None:
    """Every candidate after the first was wanted before the previous one's probe began, and its build had
    started by the time that probe ended: the probes wait for the next build to start, not for it to end."""
    versions = [f"1.27.{p}" for p in range(12)]
    first_bad = "1.27.7"
    builds = FakeBuilds()
    builder = BuildAhead(builds, say=lambda line: None)
    wanted: list[list[str]] = []
    ran: list[str] = []

    def ahead(releases: Sequence[str]) -> None:
        wanted.append(list(releases))
        builder.want(releases)

    def run(version: str) -> str:
        assert not builder.ready(version).why_not
        ran.append(version)
        following = wanted[-1][1:2]  # the build the search wants next while this probe runs
        for release in following:
            assert builds.started_event(release).wait(HANG_GUARD_S), f"{release} did not build during {version}"
        return BAD if int(version.split(".")[-1]) >= int(first_bad.split(".")[-1]) else GOOD

    try:
        found = bisect(versions, run, say=lambda line: None, ahead=ahead)
    finally:
        builder.close()
    assert found.first_bad == first_bad
    assert builds.most_at_once == 1
    for before, after in itertools.pairwise(ran):
        asked = next(w for w in wanted if w[0] == before)
        assert after in asked, f"{after} was not built ahead while {before} ran (asked: {asked})"


def test_it_says_when_a_build_ends_or_is_stopped_and_a_close_is_no_stop_of_the_search() -> None:
    """The log of a bisection shows each build's end and each build the search went past; a build that close()
    ends is not one the search went past (the record's builds_stopped)."""
    builds = FakeBuilds(held=["1.27.8", "1.27.9"])
    said: list[str] = []
    builder = BuildAhead(builds, say=said.append)
    builder.want(["1.27.8", "1.27.5"])
    assert builds.started_event("1.27.8").wait(HANG_GUARD_S)
    builder.want(["1.27.5"])
    assert not builder.ready("1.27.5").why_not
    builder.want(["1.27.9"])
    assert builds.started_event("1.27.9").wait(HANG_GUARD_S)
    builder.close()
    assert builder.stopped == ["1.27.8"]
    assert said[0] == "making 1.27.8 runnable in the background"
    assert any(line.startswith("stopped the build of 1.27.8 after ") for line in said)
    assert any(line.startswith("1.27.5 made runnable in ") for line in said)
    assert not any("1.27.9" in line for line in said[1:] if "background" not in line)


def test_a_build_ahead_and_its_processes_yield_the_cpu_to_the_probes_and_the_rest_of_the_process_does_not() -> None:
    niceness_of_child: list[int] = []

    def build(release: str, stop: threading.Event, quiet: bool) -> Readied:
        child = subprocess.run(
            [sys.executable, "-c", "import os; print(os.nice(0))"], capture_output=True, text=True, check=True
        )
        niceness_of_child.append(int(child.stdout))
        return Readied(Release.parse(release), {"version": release})

    before = os.nice(0)
    builder = BuildAhead(build, say=lambda line: None)
    try:
        builder.ready("1.27.3")
    finally:
        builder.close()
    assert niceness_of_child == [min(before + BUILD_NICENESS, 19)]
    assert os.nice(0) == before  # the thread that probes keeps its priority
