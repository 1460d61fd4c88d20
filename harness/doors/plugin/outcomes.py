"""A probe's outcome: its verdicts always concluded, a probe that failed only on undecided claims counted apart
(undecided, "U"), and the session's counts the run record's status is read from."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from harness.core.probe import ClaimsUndecided, Probe
from harness.doors.plugin.keys import OUTCOMES, PROBE_FIXTURE, RAN, REPORTS, UNDECIDED_OUTCOME


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """A probe's verdicts are always concluded: what it checked but did not conclude, the harness concludes.

    A probe that checked no claim at all fails: a probe passes only on claims that held.
    """
    __tracebackhide__ = True
    yield  # raises when the probe itself failed or skipped: nothing more to judge then
    probe = getattr(item, "funcargs", {}).get("probe")
    if isinstance(probe, Probe) and (probe.unconcluded or not probe.verdicts):
        probe.conclude(note="(concluded by the harness: the probe did not call probe.conclude() at its end)")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and call.excinfo is not None and call.excinfo.errisinstance(ClaimsUndecided):
        vars(report)[UNDECIDED_OUTCOME] = True  # kept through pytest-xdist's report serialisation
    counts = item.config.stash.setdefault(OUTCOMES, {})
    if report.when == "call" and not report.skipped and PROBE_FIXTURE in getattr(item, "fixturenames", ()):
        counts[RAN] = counts.get(RAN, 0) + 1  # a probe ran (passed, failed or undecided): the record may say passed
    if report.failed:  # for the run record's status: failed, or only undecided
        key = UNDECIDED_OUTCOME if is_undecided(report) else "failed"
        counts[key] = counts.get(key, 0) + 1
    item.stash.setdefault(REPORTS, {})[report.when] = report
    return report


def is_undecided(report: pytest.TestReport | pytest.CollectReport) -> bool:
    """A probe that failed only because claims stayed undecided (no claim failed)."""
    return report.failed and bool(vars(report).get(UNDECIDED_OUTCOME))


def pytest_report_teststatus(
    report: pytest.TestReport | pytest.CollectReport, config: pytest.Config
) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
    """Undecided probes are counted apart from failed ones in pytest's summary (they still fail the run)."""
    if is_undecided(report):
        return UNDECIDED_OUTCOME, "U", ("UNDECIDED", {"yellow": True})
    return None
