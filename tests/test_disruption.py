"""The API server restart that makes a real watch gap (harness/clusters/local/disruption.py), on stand-ins: an etcd that
answers its JSON gateway over TLS with client certificates, and an API server that answers /readyz the same way.
Certificates come from the suite's own PKI code, as on a local cluster."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from harness.base.errors import LocalClusterError
from harness.clusters.lifecycle import ScheduledRestart
from harness.clusters.local.disruption import compact_etcd, restart_apiserver
from harness.clusters.local.pki import Pki
from harness.clusters.local.processes import alive, stop_process

pytestmark = pytest.mark.mostly_waits  # on an API server restart's waits

# A stand-in API server: HTTPS on 127.0.0.1:<port>, asking for a client certificate of the cluster's CA, 200 on
# every GET (so /readyz answers once it listens). argv: port, certificate, key, CA.
STAND_IN_APISERVER = """
import ssl, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class Ok(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *args): pass
server = HTTPServer(("127.0.0.1", int(sys.argv[1])), Ok)
context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=sys.argv[4])
context.load_cert_chain(sys.argv[2], sys.argv[3])
context.verify_mode = ssl.CERT_REQUIRED
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
"""


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class StandInEtcd(ThreadingHTTPServer):
    """etcd's /v3/kv/range and /v3/kv/compaction over TLS, asking for a client certificate of etcd's CA."""

    def __init__(self, pki: Pki) -> None:
        import ssl

        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.revision = 4711
        super().__init__(("127.0.0.1", 0), _EtcdHandler)
        server_cert, server_key = pki.issue("etcd-server", "plp-etcd", server=True, ips=("127.0.0.1",))
        pki.issue("apiserver-etcd-client", "kube-apiserver-etcd-client")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki.ca_file))
        context.load_cert_chain(str(server_cert), str(server_key))
        context.verify_mode = ssl.CERT_REQUIRED
        self.socket = context.wrap_socket(self.socket, server_side=True)

    @property
    def port(self) -> int:
        return int(self.server_address[1])


class _EtcdHandler(BaseHTTPRequestHandler):
    server: StandInEtcd

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.calls.append((self.path, body))
        answer = {"header": {"revision": str(self.server.revision)}}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def etcd(tmp_path: Path, keys_from_a_pool: None) -> Iterator[StandInEtcd]:
    server = StandInEtcd(Pki(tmp_path / "pki" / "etcd"))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_etcd_is_compacted_physically_at_the_revision_it_reports(etcd: StandInEtcd, tmp_path: Path) -> None:
    assert compact_etcd(etcd.port, tmp_path / "pki" / "etcd") == 4711
    assert [path for path, _ in etcd.calls] == ["/v3/kv/range", "/v3/kv/compaction"]
    assert etcd.calls[1][1] == {"revision": 4711, "physical": True}


def _cluster_state(tmp_path: Path, etcd: StandInEtcd, apiserver_argv: list[str], port: int) -> tuple[Path, int]:
    """A state folder as a local cluster leaves it, with a running 'API server' (a sleep) to be replaced."""
    state = tmp_path
    pki = Pki(state / "pki")
    pki.issue("apiserver", "kube-apiserver", server=True, client=False, ips=("127.0.0.1",))
    pki.issue("admin", "kubernetes-admin", "system:masters")
    old = subprocess.Popen(["sleep", "300"], start_new_session=True)
    record = {
        "pids": {"kube-apiserver": old.pid, "etcd": 1},
        "argv": {"kube-apiserver": apiserver_argv},
        "logs": str(state / "logs"),
        "ports": {"etcd": etcd.port, "apiserver": port},
        "node_ip": "127.0.0.1",
    }
    (state / "logs").mkdir()
    (state / "cluster.json").write_text(json.dumps(record))
    return state, old.pid


def test_the_api_server_is_restarted_with_its_own_arguments_and_its_new_pid_is_recorded(
    etcd: StandInEtcd, tmp_path: Path
) -> None:
    port = free_port()
    pki = tmp_path / "pki"
    argv = [
        sys.executable,
        "-c",
        STAND_IN_APISERVER,
        str(port),
        str(pki / "apiserver.crt"),
        str(pki / "apiserver.key"),
        str(pki / "ca.crt"),
    ]
    state, old_pid = _cluster_state(tmp_path, etcd, argv, port)
    done = restart_apiserver(state, ready_timeout_s=300)  # a hang guard: a loaded machine starts Python slowly
    try:
        new_pid = done["apiserver_pid_after"]
        assert done["apiserver_pid_before"] == old_pid and not alive(old_pid)
        assert done["apiserver_stopped"] == "stopped"
        assert done["etcd_compacted_at_revision"] == 4711
        assert json.loads((state / "cluster.json").read_text())["pids"]["kube-apiserver"] == new_pid
        assert alive(new_pid)  # serving: it answered /readyz with the admin certificate
        assert "stopped by the suite" in (state / "logs" / "kube-apiserver.log").read_text()
    finally:
        stop_process(done["apiserver_pid_after"], grace_s=5)


def test_an_api_server_that_does_not_come_back_is_an_error_with_its_log(etcd: StandInEtcd, tmp_path: Path) -> None:
    argv = [sys.executable, "-c", "import sys; print('no etcd for me'); sys.exit(1)"]
    state, _ = _cluster_state(tmp_path, etcd, argv, free_port())
    with pytest.raises(LocalClusterError, match="not ready after") as raised:
        restart_apiserver(state, ready_timeout_s=30)
    assert "no etcd for me" in str(raised.value)


def test_a_cluster_record_without_the_arguments_is_refused(tmp_path: Path) -> None:
    (tmp_path / "cluster.json").write_text(json.dumps({"pids": {"kube-apiserver": 1}}))
    with pytest.raises(LocalClusterError, match="lacks the API server's arguments"):
        restart_apiserver(tmp_path)


def test_the_scheduled_restart_says_whether_it_ran_failed_or_came_too_late() -> None:
    """Each restart is waited for by an event it sets as it begins, not a sleep: on a loaded machine the timer's
    thread may start late (finish() waits for a restart in progress)."""
    began = threading.Event()

    def restart() -> dict[str, Any]:
        began.set()
        return {"apiserver_pid_after": 7}

    ran = ScheduledRestart(0.01, restart).start()
    assert began.wait(60)
    assert ran.finish() == {"after_s": 0.01, "apiserver_pid_after": 7}

    began.clear()

    def broken() -> dict[str, Any]:
        began.set()
        raise LocalClusterError("etcd said no")

    failed = ScheduledRestart(0.01, broken).start()
    assert began.wait(60)
    assert failed.finish() == {"after_s": 0.01, "error": "LocalClusterError: etcd said no"}

    called: list[bool] = []

    def record_call() -> dict[str, Any]:
        called.append(True)
        return {}

    late = ScheduledRestart(60, record_call).start()
    assert late.finish() == {"after_s": 60, "not_done": "the probe ended first"}
    assert not called


def test_a_restart_in_progress_is_waited_for_before_the_probe_writes_its_record() -> None:
    began = threading.Event()

    def slow() -> dict[str, Any]:
        began.set()
        time.sleep(0.5)
        return {"apiserver_ready_after_s": 0.5}

    restart = ScheduledRestart(0.0, slow).start()
    assert began.wait(60)
    assert restart.finish() == {"after_s": 0.0, "apiserver_ready_after_s": 0.5}
