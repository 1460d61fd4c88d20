"""The right kind binary for a node image: kind supports an image only with the release that built it.

When the kind on PATH is missing or is another release, the matching release is downloaded into
`.tools/kind-<release>` and verified against the release's published sha256 before it is ever executed.

When the download is impossible (no network to github.com, as on machines that reach only the Go module
proxy), the release is built from its Go module instead: `go install sigs.k8s.io/kind@<release>` with the
Go toolchain named in the module's `.go-version` (or the newest served patch of that minor), into the same
place; `<target>.json` records how. A built binary has no published checksum to compare with: the module's
own checksum (go.sum database) is what vouches for its source, and the record says so.

Release assets (kubernetes-sigs/kind hack/release/build/cross.sh, v0.17.0 ... v0.32.0):
`kind-<os>-<arch>` for linux/darwin × amd64/arm64, each with `<asset>.sha256sum` whose content is
`<64 hex>  kind-<os>-<arch>`, under https://github.com/kubernetes-sigs/kind/releases/download/<release>/.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from harness.base import paths
from harness.base.process import Runner, run_command
from harness.clusters.kind.cluster import parse_kind_version

RELEASES_URL = "https://github.com/kubernetes-sigs/kind/releases/download"
TOOLS_DIR = paths.TOOLS
DOWNLOAD_TIMEOUT_S = 60.0

Fetch = Callable[[str, float], bytes]
# Builds kind from its Go module into a path; returns how it was built (for the record). Raises KindInstallError.
Builder = Callable[[str, Path], dict[str, str]]


class KindInstallError(RuntimeError):
    """kind could not be installed or verified; the message says what to do instead."""


def asset_name(system: str | None = None, machine: str | None = None) -> str:
    """kind-linux-amd64, kind-darwin-arm64, ... for this machine."""
    system = (system or platform.system()).lower()
    machine = (machine or platform.machine()).lower()
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)
    if system not in ("linux", "darwin") or arch is None:
        raise KindInstallError(f"kind publishes no binary for {system}/{machine}; install kind yourself")
    return f"kind-{system}-{arch}"


def fetch_url(url: str, timeout: float) -> bytes:
    """Download a URL (https:, or file: for tests and mirrors)."""
    import urllib.request  # here: with ssl, a few hundredths of a second in every pytest of the suite

    with urllib.request.urlopen(url, timeout=timeout) as response:
        return bytes(response.read())


def published_sha256(text: str, asset: str) -> str:
    """The digest in a `.sha256sum` file ('<64 hex>  kind-linux-amd64')."""
    match = re.match(r"^([0-9a-f]{64})\s+\*?(\S+)\s*$", text.strip())
    if not match or match[2] != asset:
        raise KindInstallError(f"unexpected checksum file for {asset}: {text.strip()[:120]!r}")
    return match[1]


def ensure_kind(
    release: str,
    *,
    tools_dir: Path = TOOLS_DIR,
    base_url: str | None = None,
    which: Callable[[str], str | None] = shutil.which,
    runner: Runner = run_command,
    fetch: Fetch = fetch_url,
    asset: str | None = None,
    say: Callable[[str], None] = print,
    build: Builder | None = None,
) -> str:
    """A kind executable of `release`: the one on PATH if it is that release, else a verified download."""
    on_path = which("kind")
    if on_path:
        found = parse_kind_version(runner([on_path, "version"], 20).stdout)
        if found == release:
            return on_path
        say(f"kind on PATH is {found or 'of unknown version'}; this node image was built by kind {release}")
    target = tools_dir / f"kind-{release}"
    if target.is_file() and os.access(target, os.X_OK):
        return str(target)
    build = build or build_from_module
    asset = asset or asset_name()
    base = (base_url or os.environ.get("KIND_RELEASES_URL") or RELEASES_URL).rstrip("/")
    url = f"{base}/{release}/{asset}"
    try:
        expected = published_sha256(fetch(f"{url}.sha256sum", DOWNLOAD_TIMEOUT_S).decode(), asset)
        binary = fetch(url, DOWNLOAD_TIMEOUT_S)
    except OSError as err:
        say(f"could not download kind {release} from {url} ({err}); building it from its Go module")
        try:
            how = build(release, target)
        except KindInstallError as build_err:
            raise KindInstallError(
                f"could not download kind {release} from {url}: {err}\n"
                f"nor build it from its Go module: {build_err}\n"
                f"install kind {release} yourself (https://kind.sigs.k8s.io/docs/user/quick-start/#installation) "
                "or point KIND_RELEASES_URL at a mirror"
            ) from err
        target.parent.joinpath(f"{target.name}.json").write_text(json.dumps(how, indent=1) + "\n")
        say(f"built kind {release} from sigs.k8s.io/kind@{release} with {how['toolchain']} as {target}")
        return str(target)
    actual = hashlib.sha256(binary).hexdigest()
    if actual != expected:
        raise KindInstallError(
            f"kind {release} from {url} has sha256 {actual}, but the release publishes {expected}: not used"
        )
    tools_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_bytes(binary)
    partial.chmod(0o755)
    partial.replace(target)
    say(f"installed kind {release} ({asset}, sha256 {actual[:16]}… verified) as {target}")
    return str(target)


def build_from_module(release: str, target: Path) -> dict[str, str]:
    """`go install sigs.k8s.io/kind@<release>` into target, with the toolchain kind's .go-version names."""
    from harness.gobuild.go import BuildError, check_go, go_environment, log_tail, logged_step
    from harness.gobuild.modules import download_module
    from harness.gobuild.toolchain import choose_toolchain

    try:
        check_go()
        env = go_environment()
        work = target.parent / f"{target.name}.build"
        work.mkdir(parents=True, exist_ok=True)
        module = download_module("sigs.k8s.io/kind", release, env, work)
        go_version = Path(module["Dir"], ".go-version")
        upstream = go_version.read_text().strip() if go_version.is_file() else "1.20"
        toolchain, note = choose_toolchain(upstream, env, work)
    except BuildError as err:
        raise KindInstallError(str(err)) from err
    log = work / "build.log"
    log.write_text("")
    install_env = {**env, "GOTOOLCHAIN": toolchain, "GOBIN": str(work), "GOFLAGS": ""}
    command = ["go", "install", "-trimpath", f"sigs.k8s.io/kind@{release}"]
    try:
        installed = logged_step(command, install_env, work, log) == 0
    except subprocess.TimeoutExpired:
        installed = False
    if not installed:
        raise KindInstallError(
            f"go install sigs.k8s.io/kind@{release} failed; last lines of {log}:\n{log_tail(log, 15)}"
        )
    (work / "kind").replace(target)
    return {
        "release": release,
        "how": f"go install sigs.k8s.io/kind@{release} (the Go module proxy); no release binary was downloaded",
        "module_sum": str(module.get("Sum")),
        "toolchain": toolchain,
        "toolchain_note": note,
    }
