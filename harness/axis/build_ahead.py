"""Releases made runnable ahead of the probes that need them: one build at a time, on one background thread.

make bisect asks for the release it probes next and the ones it may try after it (`want`), so that while one
candidate's probes run the next one builds; a build no longer wanted (the outcome went the other way) is stopped,
so at most the time of one probe run is spent on a build the search does not take. Go's build cache keeps what a
stopped build compiled.

A build ahead runs at the lowest CPU priority: it yields the CPU to the probes running beside it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence

from harness.axis.release_axis import Readied

# The niceness of a build ahead. Seen live, a build at the probes' priority delayed the kubelet's status reports by
# seconds and failed timing-bound probes; a bisection's probe runs beside a build took 103-140 s, 47-60 s niced.
BUILD_NICENESS = 19


def yield_the_cpu(niceness: int = BUILD_NICENESS) -> None:
    """Lower the calling thread's CPU priority: Linux keeps a niceness per thread, and the processes the thread
    starts (go and its compilers, a node image build) inherit it. The rest of the process keeps its own."""
    if niceness:
        os.nice(niceness)


# A kind's ReleaseAxis.ready: make one release runnable; `stop` ends its build, `quiet` keeps progress lines out.
Ready = Callable[[str, threading.Event, bool], Readied]


class BuildAhead:
    """Builds the wanted releases in order, one at a time, on one background thread; `ready` waits for one."""

    def __init__(
        self, ready: Ready, is_ready: Callable[[str], bool] = lambda release: False, say: Callable[[str], None] = print
    ) -> None:
        self._ready, self._is_ready, self._say = ready, is_ready, say
        self._changed = threading.Condition()
        self._wanted: list[str] = []  # not started yet, in order
        self._done: dict[str, Readied] = {}
        self._failed: dict[str, BaseException] = {}
        self._building: str = ""  # the release being built now ("" when idle)
        self._stop_current = threading.Event()
        self._closed = False
        self.stopped: list[str] = []  # builds stopped because the search went the other way
        self._thread = threading.Thread(target=self._work, name="build-ahead", daemon=True)
        self._thread.start()

    def want(self, releases: Sequence[str]) -> None:
        """Build these releases next, in this order; a build running now for a release not among them is stopped."""
        with self._changed:
            wanted = [r for r in dict.fromkeys(releases) if r not in self._done and r not in self._failed]
            if self._building and self._building not in wanted:
                self._stop_current.set()
            self._wanted = [r for r in wanted if r != self._building]
            self._changed.notify_all()

    def ready(self, release: str) -> Readied:
        """The release made runnable: at once when built ahead, else after the running build and its own."""
        with self._changed:
            if release not in self._done and release not in self._failed and release != self._building:
                self._wanted = [release, *(r for r in self._wanted if r != release)]
                self._changed.notify_all()
            while release not in self._done and release not in self._failed:
                if self._closed:
                    raise RuntimeError(f"the builds ended before {release} was made runnable")
                self._changed.wait()
            if release in self._failed:
                raise self._failed[release]
            return self._done[release]

    def close(self) -> None:
        """Stop the running build, start no other, and wait for the thread (its build's processes end with it)."""
        with self._changed:
            self._closed = True
            self._wanted = []
            self._stop_current.set()
            self._changed.notify_all()
        self._thread.join()

    def _work(self) -> None:
        yield_the_cpu()
        while True:
            with self._changed:
                while not self._wanted and not self._closed:
                    self._changed.wait()
                if self._closed:
                    return
                release = self._wanted.pop(0)
                self._building, stop = release, threading.Event()
                self._stop_current = stop
            building = not self._is_ready(release)  # a build, not a reuse
            if building:
                self._say(f"making {release} runnable in the background")
            started = time.monotonic()
            try:
                readied: Readied | None = self._ready(release, stop, True)
                failure: BaseException | None = None
            except Exception as err:  # a crash of one release's build is that release's, said when it is needed
                readied, failure = None, err
            with self._changed:
                self._building = ""
                if stop.is_set():  # stopped: not wanted any more, or closing; a later want builds it again
                    if not self._closed:
                        self.stopped.append(release)
                        took = time.monotonic() - started
                        self._say(f"stopped the build of {release} after {took:.0f} s: not wanted")
                elif failure is not None:
                    self._failed[release] = failure
                elif readied is not None:
                    self._done[release] = readied
                    if building:
                        made = "not made runnable" if readied.why_not else "made runnable"
                        self._say(f"{release} {made} in {time.monotonic() - started:.0f} s")
                self._changed.notify_all()
