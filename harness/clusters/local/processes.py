"""The local cluster's processes: whether one is alive, its log's last lines, waiting on its health endpoint, and
stopping it (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where a context is made: ssl and its certificates cost every pytest of the suite
    import ssl


def log_tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie of ours counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def stop_process(pid: int, grace_s: float = 15) -> str:
    """SIGTERM, then SIGKILL after `grace_s`: 'stopped', 'killed' or 'not running'."""
    if not alive(pid):
        return "not running"
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        if not alive(pid):
            return "stopped"
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    return "killed"


def http_ok(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status) == 200
    except OSError:
        return False


def tls_client_context(ca: Path, cert: Path, key: Path) -> ssl.SSLContext:
    """A TLS client that trusts `ca` and shows the certificate `cert` (with `key`)."""
    import ssl

    context = ssl.create_default_context(cafile=str(ca))
    context.load_cert_chain(str(cert), str(key))
    return context


def https_ok(url: str, ca: Path, cert: Path, key: Path) -> bool:
    import urllib.request

    context = tls_client_context(ca, cert, key)
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as response:
            return int(response.status) == 200
    except OSError:
        return False
