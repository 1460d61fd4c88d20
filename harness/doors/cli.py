"""The `make ...` entry points: check every input and the host in seconds, then start the slow work.

Everything the harness refuses, it refuses before anything slow starts (no cluster, no build, no download)
with one line on stderr, `error: <class>: <what is wrong>`; the class is said in words because make turns
every failure into its own exit code 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from harness.base import paths
from harness.base.errors import INTERRUPTED, Interrupted
from harness.base.inputs import SHARED_OPTIONS, BadInput, count, yes_no
from harness.base.process import sigterm_as_interrupt
from harness.base.versions import VersionError
from harness.doors.commands.refusal import (
    BAD,
    BAD_INPUT,
    EXIT_CODES,
    refuse,
)
from harness.doors.make_variables import make_argv
from harness.gobuild.go import build_cache_budget
from harness.gobuild.toolchain import toolchain_policy

# Every command, with its help, in the order `--help` lists them. A run builds only its own command's arguments and
# imports only its module (_dispatch): a child process that refuses a bad FROM loads no kind of cluster, no report.
COMMANDS = {
    "probe": "run the probes on a new kind cluster (or an existing one)",
    "versions": "list the Kubernetes versions with a pinned node image",
    "clean": "remove the suite's leftovers: its kind clusters and labelled namespaces",
    "report": "the behaviour matrix of run records as Markdown and HTML",
    "atlas": "the behaviour matrix of the shipped recordings, replayed offline, into a folder",
    "upgrade": "what changes for the claims between two releases, from the shipped recordings",
    "node-image": "build a node image for a Kubernetes release kind does not publish (kind build node-image)",
    "bisect": "the first release on which a probe fails, or a claim observes what BAD did",
    "runtimes": "one release's kind recordings (shipped, or of RUNS) side by side by the runtime they ran on",
    "coverage": "each claim version range with the live recordings inside it, or 'not seen live'",
    "radar": "the newest pre-release the Go module proxy serves, probed beside the newest release, claim by claim",
    "matrix": "run the probes on several versions, one cluster each",
}


class _Parser(argparse.ArgumentParser):
    """argparse, refusing a bad argument like every other bad input: `error: bad input: ...`, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(BAD_INPUT, f"error: {BAD}: {message}\n")


def parallel_count(text: str) -> int | str:
    """PARALLEL: a count of 1 or more, `auto` (workers chosen from durations, harness/doors/schedule.py), or empty for
    the cluster's default (auto for a cluster make probe makes, kind or local; 1 on an existing one)."""
    from harness.doors.commands.probe import AUTO

    if text.strip().lower() in (AUTO, ""):
        return text.strip().lower()
    try:
        return count("PARALLEL")(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"PARALLEL must be a whole number of 1 or more or auto, not {text!r}"
        ) from None


def yes_no_option(parser: argparse.ArgumentParser, flag: str, variable: str, help_text: str) -> None:
    """A make variable taken as yes or no (1/yes/true, 0/no/false or empty; anything else refused), given as the
    flag alone or with its value as make passes it."""
    parser.add_argument(flag, nargs="?", const=True, default=False, type=yes_no(variable), help=help_text)


def cluster_option(
    parser: argparse.ArgumentParser, help_text: str, default: str | None = "", version_axis: bool = False
) -> None:
    """CLUSTER (--cluster): the kinds of cluster the suite makes (harness/clusters/registry.py), as every command
    that takes it names them; for the version axis, those that run a given release. Default: the registry's."""
    from harness.clusters.registry import DEFAULT_CLUSTER, cluster_choices

    chosen = DEFAULT_CLUSTER if default == "" else default
    parser.add_argument("--cluster", choices=cluster_choices(version_axis), default=chosen, help=help_text)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = _Parser(
        prog="python -m harness",
        description=__doc__,
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name, help=help_text, description=help_text, epilog=EXIT_CODES, formatter_class=parser.formatter_class
        )

    only = argv[0] if argv and argv[0] in COMMANDS else None  # else every command (--help, or refused)
    for name, help_text in COMMANDS.items():
        sub = command(name, help_text)
        if only in (None, name) and name in ARGUMENTS:
            ARGUMENTS[name](sub)
    return parser.parse_args(argv)


def _probe_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", default="", help="Kubernetes version: a minor (1.27) or a patch (1.27.3)")
    parser.add_argument(
        "--image", default="", help="node image instead of the pinned one (kindest/node:vX.Y.Z@sha256:...)"
    )
    parser.add_argument("--probe", default="", help="run only the probes matching this name or pytest -k expression")
    parser.add_argument(
        "--parallel",
        type=parallel_count,
        default="",
        help="run N probes at a time in one new cluster (pytest-xdist workers); auto: as many as the probes' known "
        "durations say (harness/doors/schedule.py); default: auto (1 on an existing cluster)",
    )
    cluster_option(
        parser, "where a new cluster runs: kind (Docker) or local (built from Go modules, run as processes here; root)"
    )
    for option in SHARED_OPTIONS:  # declared once for pytest too, to which they are passed on
        option.declare(parser.add_argument, {"--kubeconfig": "", "--context": "", "--repeat": 1})
    parser.add_argument(
        "--keep", type=yes_no("KEEP"), default=False, metavar="YES_NO", help="KEEP=1: the same as --keep-cluster"
    )
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")


def _clean_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", default="", help="also clean the suite's namespaces on this cluster")
    parser.add_argument("--context", default="", help="context in --kubeconfig")
    parser.add_argument("--kind-bin", default="kind", help="the kind executable")
    cluster_option(parser, "only leftovers of this kind (default: both)", default=None)


def _report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", help="run directories (or record files) to read")
    parser.add_argument(
        "--out", default="", help="where to write report.md and report.html (default: runs/report-<id>)"
    )
    parser.add_argument(
        "--from", dest="from_version", default="", help="with --to: what changes between two releases, on top"
    )
    parser.add_argument("--to", dest="to_version", default="", help="the later release of --from")


def _atlas_arguments(parser: argparse.ArgumentParser) -> None:
    from harness.doors.commands.atlas import workers as atlas_workers

    parser.add_argument(
        "--atlas",
        default=str(paths.RUNS / "atlas"),
        help="the folder written: records/ and report/ (default runs/atlas); replaced only once the new one is whole, "
        "and only if the suite made it",
    )
    parser.add_argument("--probe", default="", help="only the probes matching this name or -k expression")
    parser.add_argument("--from", dest="from_version", default="", help="with --to: what changes between two releases")
    parser.add_argument("--to", dest="to_version", default="", help="the later release of --from")
    parser.add_argument("--workers", type=atlas_workers, default="auto", help="pytest-xdist workers of the replay")


def _upgrade_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from", dest="from_version", default="", help="the release run now: a minor (1.26), a patch or a pre-release"
    )
    parser.add_argument(
        "--to", dest="to_version", default="", help="the release planned (earlier than FROM: a rollback)"
    )
    parser.add_argument("--runs", nargs="*", default=[], help="run directories (or record files) of live runs to add")
    parser.add_argument("--detail", default="", help="1: every claim, its values and each release on the way")


def _node_image_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", required=True, help="a full release version, e.g. 1.27.0-rc.0")
    parser.add_argument(
        "--source",
        choices=("auto", "release", "modules"),
        default="auto",
        help="release: kind build node-image from dl.k8s.io; modules: built here from Go modules and Debian "
        "packages (harness/nodeimage); auto: release when dl.k8s.io answers, else modules",
    )
    parser.add_argument(
        "--parts",
        choices=("kind", "debian"),
        default="kind",
        help="modules: kind's own containerd, runc, crictl and CNI plugins built from Go modules (kind), or the "
        "fallback: Debian's containerd and runc, the suite's crictl (debian)",
    )
    parser.add_argument("--containerd", default="", help="another containerd than kind pins, e.g. 2.1.4 (modules)")
    parser.add_argument("--kind", default="", help="whose components: a kind release (default: the one of the pin)")


def _bisect_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--probe", required=True, help="the probe (name or pytest -k expression)")
    parser.add_argument("--good", required=True, help="a release where the probe passes, e.g. 1.27.3")
    parser.add_argument("--bad", required=True, help="a later release (same minor, or the next one) where it fails")
    cluster_option(parser, "local: every release between built here", version_axis=True)
    parser.add_argument(
        "--claim", default="", help="local: bisect on this claim's observed value (GOOD's against BAD's)"
    )
    yes_no_option(
        parser, "--pre-releases", "PRE", "local: also try the x.y.0 pre-releases between GOOD and BAD (PRE=1)"
    )
    parser.add_argument(
        "--runs",
        type=count("REPEAT"),
        default=1,
        help="local: up to N runs per release, for a claim a race sometimes hides (see harness/axis/bisect.py)",
    )
    parser.add_argument("--name", default="", help="local: the record's name, bisections/<name>.json")
    parser.add_argument(
        "--record-dir",
        default=str(paths.REPO / "bisections"),
        help="local: where the record goes (default bisections/)",
    )
    yes_no_option(
        parser, "--build", "BUILD", "also try patch releases without a pinned image (built by node-image; BUILD=1)"
    )
    parser.add_argument("--run-dir", default=str(paths.RUNS), help="where the runs go (default: runs/)")


def _runtimes_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", default="", help="a release with kind recordings (a minor: its pinned patch)")
    parser.add_argument(
        "--runs",
        nargs="*",
        default=[],
        help="run directories (a make matrix's) whose recordings to set side by side instead of the shipped ones",
    )
    yes_no_option(parser, "--values", "VALUES", "also every timing, a column per runtime (VALUES=1)")
    yes_no_option(parser, "--markdown", "MARKDOWN", "a docs/runtimes.md table row per pair (MARKDOWN=1)")


def _coverage_arguments(parser: argparse.ArgumentParser) -> None:
    yes_no_option(parser, "--uncovered", "UNCOVERED", "only the ranges no live recording is in (UNCOVERED=1)")
    yes_no_option(
        parser,
        "--plan",
        "PLAN",
        "which releases to build next to cover the most uncovered ranges per build (PLAN=1)",
    )


def _radar_arguments(parser: argparse.ArgumentParser) -> None:
    cluster_option(
        parser,
        "local: the pre-release built here from Go modules; kind: a node image of it (--source)",
        version_axis=True,
    )
    parser.add_argument(
        "--source",
        choices=("auto", "release", "modules"),
        default="auto",
        help="kind: how the pre-release's node image is built (as make node-image SOURCE=...)",
    )
    parser.add_argument("--baseline", default="", help="a run of the newest release to compare with (runs/<id>)")
    yes_no_option(
        parser,
        "--fresh-baseline",
        "FRESH_BASELINE",
        "probe the newest release now too (default: replay its shipped live recordings; FRESH_BASELINE=1)",
    )
    parser.add_argument(
        "--tries", type=count("TRIES"), default=3, help="how many pre-releases to try, newest first, until one builds"
    )
    parser.add_argument("--probe", default="", help="only the probes matching this name or -k expression")
    parser.add_argument("--run-dir", default=str(paths.RUNS), help="where the radar's runs go (default: runs/)")


def _matrix_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--versions",
        default=None,
        help="space-separated versions (not given: every minor in the table; empty refused); on kind VERSION:RUNTIME "
        "runs the node image make node-image builds with that runtime (1.27.16:debian, 1.27.16:containerd=2.3.4)",
    )
    parser.add_argument("--jobs", type=count("JOBS"), default=2, help="how many kind clusters at a time")
    parser.add_argument("--run-dir", default=str(paths.RUNS), help="where the matrix's run directories go")
    cluster_option(parser, "kind, or local (built here; one at a time)", version_axis=True)
    parser.add_argument(
        "--parallel",
        type=parallel_count,
        default=None,
        help="local: probes at a time in each version's cluster (PARALLEL of make probe; default auto)",
    )
    parser.add_argument(
        "--no-overlap", action="store_true", help="local: build the next version only after this one's probes"
    )
    parser.add_argument(
        "--overlap",
        type=yes_no("OVERLAP"),
        default=True,
        metavar="YES_NO",
        help="local: OVERLAP=0 is --no-overlap",
    )
    parser.add_argument("--probe", default="", help="local: only the probes matching this name or -k expression")


# Each command's arguments, added only when the command is run (or every command listed)
ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "probe": _probe_arguments,
    "clean": _clean_arguments,
    "report": _report_arguments,
    "atlas": _atlas_arguments,
    "upgrade": _upgrade_arguments,
    "node-image": _node_image_arguments,
    "bisect": _bisect_arguments,
    "runtimes": _runtimes_arguments,
    "coverage": _coverage_arguments,
    "radar": _radar_arguments,
    "matrix": _matrix_arguments,
}


def main(argv: Sequence[str]) -> int:
    """Run one command; Ctrl-C or SIGTERM ends it with one line saying what was stopped and exit code 130."""
    sigterm_as_interrupt()
    try:
        return run_command(argv)
    except Interrupted as interrupted:
        print(f"interrupted: stopped {interrupted.stopped}", file=sys.stderr)
    except KeyboardInterrupt:
        print("interrupted: stopped before any cluster, build or download had started", file=sys.stderr)
    return INTERRUPTED


def run_command(argv: Sequence[str]) -> int:
    """Parse and run one command; an input it will not run with is refused as bad input. `make TARGET` (what every
    Makefile recipe runs) takes the command's arguments from the make variables in the environment
    (harness/doors/make_variables.py), never from a shell command line."""
    if argv[:1] == ["make"] and len(argv) == 2:
        try:
            argv = make_argv(argv[1], os.environ)
        except BadInput as err:
            return refuse(BAD, str(err))
    args = parse_args(argv)
    try:
        toolchain_policy()  # GO_TOOLCHAIN and GO_BUILD_CACHE_GB of any build the command may start, refused
        build_cache_budget()  # before anything slow
    except (VersionError, BadInput) as err:
        return refuse(BAD, str(err))
    try:
        return _dispatch(args)
    except BadInput as err:
        return refuse(BAD, str(err))


def _dispatch(args: argparse.Namespace) -> int:
    """Run the command parsed, importing its module only now."""
    if args.command == "versions":
        from harness.axis.pinned import known_versions

        print("\n".join(known_versions()))
        return 0
    if args.command == "matrix":
        from harness.doors.commands.version_axis import run_matrix_command

        args.no_overlap = args.no_overlap or not args.overlap
        return run_matrix_command(args)
    if args.command == "node-image":
        from harness.doors.commands.housekeeping import run_node_image_command

        return run_node_image_command(args)
    if args.command == "bisect":
        from harness.doors.commands.version_axis import run_bisect_command

        return run_bisect_command(args)
    if args.command == "clean":
        from harness.doors.commands.housekeeping import run_clean_command

        return run_clean_command(args)
    if args.command == "radar":
        from harness.doors.commands.radar import run_radar_command

        return run_radar_command(args)
    if args.command == "coverage":
        from harness.doors.commands.coverage import run_coverage_command

        return run_coverage_command(args)
    if args.command == "runtimes":
        from harness.doors.commands.runtimes import run_runtimes_command

        return run_runtimes_command(args)
    if args.command == "report":
        from harness.doors.commands.housekeeping import run_report_command

        return run_report_command(args)
    if args.command == "atlas":
        from harness.doors.commands.atlas import run_atlas_command

        return run_atlas_command(args)
    if args.command == "upgrade":
        from harness.doors.commands.upgrade import run_upgrade_command

        return run_upgrade_command(args)
    from harness.doors.commands.probe import run_probe_command

    args.keep_cluster = args.keep_cluster or args.keep
    return run_probe_command(args)
