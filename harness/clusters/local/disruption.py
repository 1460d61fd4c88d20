"""A real watch gap on a local cluster, made on purpose: etcd compacted at its current revision, then the API
server stopped and started again with its own arguments (`make probe CLUSTER=local RESTART_APISERVER_AFTER=S`).

A client whose watch connection dropped resumes from its last resourceVersion. Restarting the API server
alone does not stop that: the new one serves an old resourceVersion from etcd while it still holds it (seen
live on v1.29.14, and `ss -K` of the watch connections the same). With etcd compacted first, neither the new
watch cache nor etcd holds it: the watch is answered 410 Gone and the client re-lists, which is the gap the
verdict rules in docs/verdicts.md are about.

Everything is read from and written to the cluster's state folder (cluster.json), so it works from any
process of the run, and the process that made the cluster stops the new API server by the PID written there.
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.base.errors import LocalClusterError
from harness.clusters.local.cluster import write_cluster_record
from harness.clusters.local.processes import https_ok, log_tail, stop_process, tls_client_context

JsonDict = dict[str, Any]

READY_TIMEOUT_S = 90.0


def _etcd_call(port: int, etcd_pki: Path, method: str, body: JsonDict) -> JsonDict:
    """One call of etcd's JSON gateway (`/v3/kv/...`) with the API server's client certificate."""
    import urllib.request  # here: with ssl, a few hundredths of a second in every pytest of the suite

    context = tls_client_context(
        etcd_pki / "ca.crt", etcd_pki / "apiserver-etcd-client.crt", etcd_pki / "apiserver-etcd-client.key"
    )
    request = urllib.request.Request(
        f"https://127.0.0.1:{port}/v3/kv/{method}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        answer: JsonDict = json.loads(response.read() or b"{}")
    return answer


def compact_etcd(port: int, etcd_pki: Path) -> int:
    """Compact etcd at its current revision (physically, before returning): the revision compacted at."""
    # a range over one key answers with the store's current revision in its header
    header = _etcd_call(port, etcd_pki, "range", {"key": base64.b64encode(b"\0").decode(), "limit": 1})["header"]
    revision = int(header["revision"])
    _etcd_call(port, etcd_pki, "compaction", {"revision": revision, "physical": True})
    return revision


def restart_apiserver(state: Path, ready_timeout_s: float = READY_TIMEOUT_S) -> JsonDict:
    """Compact etcd, stop the API server and start it again with the arguments it was started with; return
    what was done (for the recordings' origin). Raises LocalClusterError when the new one is not ready."""
    record: JsonDict = json.loads((state / "cluster.json").read_text())
    argv = (record.get("argv") or {}).get("kube-apiserver")
    if not argv or "logs" not in record:
        raise LocalClusterError(f"{state / 'cluster.json'} lacks the API server's arguments: start a new cluster")
    old_pid = int(record["pids"]["kube-apiserver"])
    ports, pki = record["ports"], state / "pki"
    at = datetime.now(UTC).isoformat(timespec="milliseconds")
    began = time.monotonic()
    revision = compact_etcd(int(ports["etcd"]), pki / "etcd")
    how_stopped = stop_process(old_pid)
    log = Path(record["logs"]) / "kube-apiserver.log"
    with log.open("ab") as out:
        note = f"\n--- {at}: stopped by the suite ({how_stopped}) after etcd was compacted; started again\n"
        out.write(note.encode())
        out.flush()
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    record["pids"]["kube-apiserver"] = process.pid
    write_cluster_record(state, record)
    readyz = f"https://{record['node_ip']}:{ports['apiserver']}/readyz"
    deadline = time.monotonic() + ready_timeout_s
    while not https_ok(readyz, pki / "ca.crt", pki / "admin.crt", pki / "admin.key"):
        if time.monotonic() > deadline or process.poll() is not None:
            raise LocalClusterError(
                f"the restarted API server (pid {process.pid}) is not ready after "
                f"{time.monotonic() - began:.0f}s; last lines of {log}:\n{log_tail(log)}"
            )
        time.sleep(0.2)
    return {
        "what": "etcd compacted at its current revision, then kube-apiserver stopped and started again",
        "at": at,
        "etcd_compacted_at_revision": revision,
        "apiserver_pid_before": old_pid,
        "apiserver_stopped": how_stopped,
        "apiserver_pid_after": process.pid,
        "apiserver_ready_after_s": round(time.monotonic() - began, 1),
    }
