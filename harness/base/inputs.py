"""What a user gives the suite, checked once for both front doors: `make ...` (harness/doors/cli.py refuses it with
`error: bad input: ...`, exit 2) and pytest (harness/doors/pytest_plugin.py: a usage error, exit 4).

Each check raises BadInput with one sentence that names the make variable and the option; the shape of a
kubeconfig itself is harness/base/kubeconfig.py's.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from harness.base.errors import BadInput as BadInput  # re-exported: its home was here, callers import it from here
from harness.base.errors import PrerequisiteMissing
from harness.base.paths import RUNS
from harness.base.versions import KubeVersion, Release, VersionError

if TYPE_CHECKING:
    from harness.base.manifest_check import ManifestProblem

N = TypeVar("N", int, float)


def count(variable: str) -> Callable[[str], int]:
    """An argparse type for a count of 1 or more; the message names the make variable too."""
    return _number(variable, int, lambda value: value >= 1, "a whole number of 1 or more")


def seconds(variable: str) -> Callable[[str], float]:
    """An argparse type for a number of seconds above 0; the message names the make variable too."""
    return _number(variable, float, lambda value: 0 < value < 3600, "a number of seconds above 0")


def _number(variable: str, kind: Callable[[str], N], fits: Callable[[N], bool], what: str) -> Callable[[str], N]:
    def parse(text: str) -> N:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{variable} must be {what}, not {text!r}") from None
        if not fits(value):
            raise argparse.ArgumentTypeError(f"{variable} must be {what}, not {text!r}")
        return value

    return parse


YES, NO = ("1", "yes", "true", "on"), ("0", "no", "false", "off", "")


def yes_or_no(variable: str, text: str | None) -> bool:
    """A make variable that says yes or no (KEEP, BUILD, PRE, OVERLAP): 1/yes/true/on or 0/no/false/off, any case;
    empty is no. Anything else is refused, never taken as no."""
    value = (text or "").strip().lower()
    if value in YES or value in NO:
        return value in YES
    raise BadInput(f"{variable} must be 1, yes or true (or 0, no, false, or empty), not {text!r}")


def yes_no(variable: str) -> Callable[[str], bool]:
    """An argparse type for such a variable (`yes_or_no`)."""

    def parse(text: str) -> bool:
        try:
            return yes_or_no(variable, text)
        except BadInput as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return parse


@dataclass(frozen=True)
class SharedOption:
    """An option both front doors take, declared once: `make probe` (harness/doors/cli.py) passes it on to pytest
    (harness/doors/pytest_plugin.py) under the same name (harness/doors/commands/probe.py pytest_argv)."""

    flag: str
    help: str
    settings: Mapping[str, Any] = field(default_factory=dict)  # argparse's: metavar, type, action, default

    def declare(self, add: Callable[..., object], defaults: Mapping[str, object]) -> None:
        """Declare it with `add` (argparse's add_argument, pytest's addoption); a front door's own default for it
        in `defaults`, by flag."""
        own = {"default": defaults[self.flag]} if self.flag in defaults else {}
        add(self.flag, help=self.help, **{**self.settings, **own})


SHARED_OPTIONS = (
    SharedOption("--kubeconfig", "probe an existing cluster from this kubeconfig (never written)", {"metavar": "FILE"}),
    SharedOption("--context", "context in --kubeconfig", {"metavar": "NAME"}),
    SharedOption("--kind-bin", "the kind executable (default: kind on PATH)", {"default": "kind"}),
    SharedOption(
        "--keep-cluster",
        "keep the cluster this run creates, and the namespace of every probe that failed (also KEEP=1)",
        {"action": "store_true"},
    ),
    SharedOption("--run-dir", "where run records and evidence go (default: runs/)", {"default": str(RUNS)}),
    SharedOption(
        "--repeat",
        "run each live probe N times and report the spread of every measured interval (also REPEAT=N)",
        {"metavar": "N", "type": count("REPEAT")},
    ),
    SharedOption(
        "--restart-apiserver-after",
        "local cluster: this many seconds into each probe, compact etcd and restart the API server, so that the "
        "probe's watches must re-list (a real watch gap, harness/clusters/local/disruption.py)",
        {"metavar": "SECONDS", "type": seconds("RESTART_APISERVER_AFTER")},
    ),
)


def requested_release(text: str | None) -> Release | None:
    """VERSION as both front doors read it, once: the typed release everything below takes (None when not given);
    BadInput for text that names none."""
    if not text:
        return None
    try:
        return Release.parse(text)
    except VersionError as err:
        raise BadInput(str(err)) from err


def check_apiserver_restart(after_s: float | None, local_cluster: bool) -> None:
    """RESTART_APISERVER_AFTER (--restart-apiserver-after) only where the suite runs the control plane itself."""
    if after_s is not None and not local_cluster:
        raise BadInput(
            "RESTART_APISERVER_AFTER (--restart-apiserver-after) restarts the API server of a local cluster the "
            "suite makes: give CLUSTER=local (--local-version)"
        )


def check_run_dir(run_dir: str | Path) -> None:
    """Run records can be written under `run_dir` (created if need be)."""
    try:
        Path(run_dir).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=run_dir):
            pass
    except OSError as err:
        raise BadInput(f"the run directory {run_dir} is not writable: {err.strerror or err}") from err


def check_existing_cluster(kubeconfig: str | None, context: str | None) -> None:
    """An existing cluster is named by a kubeconfig the suite can read and an explicit context in it."""
    if context and not kubeconfig:
        raise BadInput("--context (CONTEXT) names a context of --kubeconfig (KUBECONFIG_FILE), which is not given")
    if not kubeconfig:
        return
    from harness.base.kubeconfig import kubeconfig_problem  # (and YAML) imported only for a kubeconfig to read

    if problem := kubeconfig_problem(kubeconfig, context or ""):
        raise BadInput(problem)


# How long the one check of an existing cluster's API server waits for its /version (a local or kind API server
# answers in milliseconds; a blackholed address would otherwise hold the run for the client's own timeouts).
API_CHECK_TIMEOUT_S = 5.0


def check_api_server(kubeconfig: str, context: str | None, timeout_s: float = API_CHECK_TIMEOUT_S) -> str:
    """The API server that the kubeconfig's context names answers GET /version as Kubernetes does; its gitVersion.

    Asked once, with no retry, before any probe: a server that cannot be reached (or that answers but is not a
    Kubernetes API server) is one line, not a traceback for every probe. Raises PrerequisiteMissing when it
    cannot be reached (refused, unresolvable, no answer in `timeout_s`), BadInput when what answers is not a
    Kubernetes API server the suite can use (not TLS or HTTP as it expects, a status other than 200 such as the
    kubeconfig's credentials refused, an answer without a Kubernetes version).
    """
    import json

    import urllib3
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    from harness.base.kubeapi import KubeApi

    configuration = client.Configuration()
    try:
        config.load_kube_config(config_file=kubeconfig, context=context or None, client_configuration=configuration)
    except (config.ConfigException, OSError, ValueError, TypeError, KeyError) as err:
        raise BadInput(f"context {context!r} of {kubeconfig} cannot be used: {err}") from err
    configuration.retries = False  # one request: refused is refused, not six tracebacks later
    where = f"the API server {configuration.host} (context {context} of {kubeconfig})"
    api = client.ApiClient(configuration)
    try:
        response = KubeApi(api).get_code(_request_timeout=timeout_s)
        body = response.data
    except ApiException as err:
        if not err.status:  # the client's word for a TLS failure: something answered, not with the TLS it expects
            said = " ".join(str(err.reason).split())
            raise BadInput(f"{where} is not a Kubernetes API server: the TLS handshake failed ({said})") from None
        if err.status in (401, 403):
            raise BadInput(
                f"{where} refused the kubeconfig's credentials: GET /version answered {err.status} {err.reason}"
            ) from None
        raise BadInput(
            f"{where} is not a Kubernetes API server the suite can use: GET /version answered {err.status} {err.reason}"
        ) from None
    except (urllib3.exceptions.ConnectTimeoutError, urllib3.exceptions.ReadTimeoutError) as err:
        reason = "no answer within" if isinstance(err, urllib3.exceptions.ReadTimeoutError) else "no connection in"
        if isinstance(err, urllib3.exceptions.NewConnectionError):  # refused, or the name does not resolve
            reason = _os_reason(err)
            raise PrerequisiteMissing(f"{where} cannot be reached: {reason}; is the cluster running?") from None
        raise PrerequisiteMissing(f"{where} cannot be reached: {reason} {timeout_s:.0f} s") from None
    except (urllib3.exceptions.HTTPError, OSError) as err:  # TLS, protocol: something answered, not as expected
        raise BadInput(f"{where} is not a Kubernetes API server: {type(err).__name__}: {_os_reason(err)}") from None
    try:
        git_version = json.loads(body).get("gitVersion")
        KubeVersion.parse(str(git_version))
    except (ValueError, AttributeError, VersionError):
        shown = body[:80].decode(errors="replace").replace("\n", " ")
        raise BadInput(
            f"{where} is not a Kubernetes API server: GET /version answered {shown!r}, not a Kubernetes version"
        ) from None
    return str(git_version)


def _os_reason(err: BaseException) -> str:
    """The innermost reason of a connection error, without urllib3's object reprs: 'Connection refused'."""
    text = str(err)
    for marker in ("Failed to establish a new connection: ", "Failed to resolve "):
        if marker in text:
            return text.split(marker, 1)[1].strip().removeprefix("[Errno 111] ").rstrip(")")
    return text.split(": ", 1)[-1] if ": " in text else text


def check_manifests(version: KubeVersion) -> tuple[list[ManifestProblem], str]:
    """harness/base/manifest_check.py's check of every manifest, imported (with the manifests' YAML) only when a
    command checks them: a command refused before then loads none of it."""
    from harness.base.manifest_check import check_manifests as check_every_manifest

    return check_every_manifest(version)


def check_manifests_for(version: KubeVersion) -> str:
    """Every manifest is valid for this version's schema; returns what was checked."""
    problems, checked = check_manifests(version)
    if problems:
        listed = "\n  ".join(str(p) for p in problems)
        raise BadInput(f"manifests invalid for Kubernetes {version}:\n  {listed}")
    return checked
