"""The plugin's options and their checks, once, before collection: the shared ones of make probe
(harness/base/inputs.py), each kind of cluster's own (harness/clusters/kinds.py), make probe's hand-offs, and the
choice of one cluster (harness/doors/plugin/clusters.py)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from harness.base import inputs
from harness.base.errors import (
    BAD_INPUT_CLASS,
    PREREQUISITE_MISSING_CLASS,
    PREREQUISITE_MISSING_EXIT,
    PrerequisiteMissing,
    one_line,
)
from harness.base.inputs import BadInput
from harness.base.process import sigterm_as_interrupt
from harness.clusters.registry import KINDS, asked_kinds, attached_kind, one_of
from harness.doors.plugin.choice import chosen_cluster
from harness.doors.plugin.collection import recordings_under
from harness.doors.plugin.keys import CLUSTER, DURATIONS, RECORDINGS
from harness.doors.schedule import read_durations


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pod-lifecycle-probes", "pod-lifecycle probes")
    for option in inputs.SHARED_OPTIONS:  # make probe's too (harness/base/inputs.py); KEEP in the environment: checked
        option.declare(group.addoption, {"--repeat": None})
    for kind in KINDS:  # each kind of cluster its own: --kind-version, --local-version, ...
        kind.declare_options(group.addoption)
    group.addoption(
        "--cluster-spec",
        metavar="JSON",
        help="the cluster make probe resolved and readied (a Runnable, harness/clusters/kinds.py), resolved no more",
    )
    group.addoption(
        "--cluster-gate",
        metavar="FILE",
        help="wait until the process making the --kubeconfig cluster opens this gate (make probe PARALLEL's workers)",
    )
    group.addoption(
        "--manifests-checked",
        metavar="MINOR",
        help="make probe checked every manifest against this minor's schema (1.27): on a server of that minor they "
        "are not checked again",
    )
    group.addoption("--run-id", help="share this run's directory (the parallel workers of one make probe)")
    group.addoption(
        "--replay", metavar="PATH", help="run the probes on recordings (a directory or one file) instead of a cluster"
    )
    group.addoption(
        "--schedule",
        metavar="FILE",
        help="run the probes longest first by the durations in FILE, and with -n hand each worker its share of the "
        "longest-first packing (harness/doors/schedule.py; make probe PARALLEL writes it)",
    )


# Probes whose timing claims the suite's own load moves: make probe with PARALLEL runs them after every other
# probe of the run has ended, one at a time, on the same cluster (harness/doors/commands/probe.py run_parallel).
ALONE_MARKER = (
    "alone(why): a probe with a timing claim that many probes at once move past its bound (why: the mechanism); "
    "make probe PARALLEL runs it after the others, one at a time"
)

# --repeat / REPEAT: a whole number of 1 or more (0, negatives and words are refused, not taken as 1)
_repeat_count = inputs.count("--repeat (REPEAT)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", ALONE_MARKER)
    asked = asked_kinds(config.getoption)
    if config.getoption("--replay") and (asked or config.getoption("--cluster-spec")):
        raise pytest.UsageError(f"--replay runs on recordings; it cannot be combined with {one_of(described=False)}")
    if len(asked) > 1:
        raise pytest.UsageError(
            f"choose one cluster: {one_of()}, not {' and '.join(kind.pytest_option for kind in asked)}"
        )
    try:
        _check_inputs(config)
    except BadInput as err:
        raise pytest.UsageError(f"{BAD_INPUT_CLASS}: {err}") from err
    except PrerequisiteMissing as err:  # a cluster the options name cannot be had here: said once, not per probe
        pytest.exit(f"error: {PREREQUISITE_MISSING_CLASS}: {one_line(str(err))}", returncode=PREREQUISITE_MISSING_EXIT)
    # CI cancels with SIGTERM: turned into the same path as Ctrl-C, so fixture teardown (finalizer removal,
    # namespace and cluster deletion) still runs. pytest-timeout uses the signal method for the same reason (its
    # thread method exits without teardown).
    sigterm_as_interrupt()


def _check_inputs(config: pytest.Config) -> None:
    """The options' checks shared with `make probe` (harness/base/inputs.py), and the plugin's own; raises BadInput, or
    PrerequisiteMissing when the cluster they name cannot be had (checked once, by the controller, in seconds)."""
    controller = not hasattr(config, "workerinput")  # a pytest-xdist worker's controller checked the same
    option = config.getoption
    if not option("--kubeconfig") or (attached_kind(option) and not option("--cluster-gate")):
        # (an existing cluster's kubeconfig is checked by its kind; behind the gate, it is written there first)
        inputs.check_existing_cluster(option("--kubeconfig"), option("--context"))
    config.option.keep_cluster = option("--keep-cluster") or inputs.yes_or_no("KEEP", os.environ.get("KEEP"))
    if option("--repeat") is None:
        try:
            config.option.repeat = _repeat_count(os.environ.get("REPEAT") or "1")
        except argparse.ArgumentTypeError as err:
            raise BadInput(str(err)) from err
    if option("--replay"):
        sent = getattr(config, "workerinput", {}).get("plp_recordings")  # a pytest-xdist worker: the controller's
        config.stash[RECORDINGS] = (
            recordings_under(Path(option("--replay")))
            if sent is None
            else {probe: [Path(p) for p in paths] for probe, paths in sent.items()}
        )
    if option("--schedule"):
        try:
            config.stash[DURATIONS] = read_durations(Path(option("--schedule")))
        except ValueError as err:
            raise BadInput(str(err)) from err
    inputs.check_run_dir(option("--run-dir"))
    chosen = chosen_cluster(option)
    inputs.check_apiserver_restart(
        option("--restart-apiserver-after"), chosen is not None and chosen.kind.restarts_apiserver
    )
    if chosen is None:
        return
    config.stash[CLUSTER] = chosen
    runnable = chosen.runnable
    if runnable is not None and not runnable.prepared and controller and not option("--replay"):
        chosen.kind.check_host(runnable)  # make probe prepared what it hands on; plain pytest is checked here
