"""Who can reach what a local cluster opens (harness/clusters/local/components.py), offline: the arguments each
component is started with, and the certificates behind them. Nothing here starts a component.

Seen live (docs/local-provider.md, "What the suite opens, and who can reach it"): etcd started with these
arguments answers a client with the API server's certificate and refuses `nobody` on both of its ports.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from harness.clusters.local import cluster as local
from harness.clusters.local import components
from harness.gobuild.kubernetes import Build

PORTS = {"etcd": 2379, "etcd_peer": 2380}


def flag_values(argv: list[str]) -> dict[str, str]:
    """`--name value` pairs of an argv (flags without a value map to "")."""
    values: dict[str, str] = {}
    for index, arg in enumerate(argv):
        if arg.startswith("--"):
            following = argv[index + 1] if index + 1 < len(argv) else "--"
            values[arg] = "" if following.startswith("--") else following
    return values


def test_etcd_serves_clients_and_its_peer_only_over_tls_asking_each_for_a_certificate_of_its_ca(
    tmp_path: Path,
) -> None:
    argv = components.etcd_argv(tmp_path / "data", tmp_path / "pki", PORTS)
    flags = flag_values(argv)
    assert not [arg for arg in argv if "http://" in arg]
    for url_flag in ("--listen-client-urls", "--advertise-client-urls"):
        assert flags[url_flag] == "https://127.0.0.1:2379"
    for url_flag in ("--listen-peer-urls", "--initial-advertise-peer-urls"):
        assert flags[url_flag] == "https://127.0.0.1:2380"
    assert flags["--initial-cluster"] == "plp=https://127.0.0.1:2380"
    assert "--client-cert-auth" in flags and "--peer-client-cert-auth" in flags
    assert flags["--trusted-ca-file"] == flags["--peer-trusted-ca-file"] == str(tmp_path / "pki" / "ca.crt")
    assert flags["--cert-file"] == str(tmp_path / "pki" / "etcd-server.crt")
    assert flags["--peer-key-file"] == str(tmp_path / "pki" / "etcd-server.key")


def test_the_api_server_reaches_etcd_over_tls_with_the_one_client_certificate(tmp_path: Path) -> None:
    flags = dict(f.split("=", 1) for f in components.apiserver_etcd_flags(tmp_path, 2379))
    assert flags == {
        "--etcd-servers": "https://127.0.0.1:2379",
        "--etcd-cafile": str(tmp_path / "ca.crt"),
        "--etcd-certfile": str(tmp_path / "apiserver-etcd-client.crt"),
        "--etcd-keyfile": str(tmp_path / "apiserver-etcd-client.key"),
    }


def test_etcds_ca_signs_no_client_certificate_but_the_api_servers_and_its_own_peer_one(
    tmp_path: Path, keys_from_a_pool: None
) -> None:
    cluster = local.LocalCluster("plp-test", Build("v1.27.3", tmp_path / "build", {}), tmp_path / "logs", tmp_path)
    cluster.state.mkdir()
    pki = cluster._make_etcd_pki()
    assert pki.directory == cluster.state / "pki" / "etcd"
    client_certificates = {}
    for cert_file in sorted(pki.directory.glob("*.crt")):
        cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
        if cert_file.name == "ca.crt":
            continue
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        if ExtendedKeyUsageOID.CLIENT_AUTH in usages:
            client_certificates[cert_file.stem] = ExtendedKeyUsageOID.SERVER_AUTH in usages
    assert client_certificates == {"apiserver-etcd-client": False, "etcd-server": True}
    for key in pki.directory.glob("*.key"):
        assert key.stat().st_mode & 0o077 == 0, f"{key} is readable by others"


KCM_1_21_HELP = """Insecure serving flags:
      --address ip   DEPRECATED: the IP address on which to listen for the --port port (default 0.0.0.0)
      --port int     DEPRECATED: the port on which to serve HTTP insecurely without authentication (default 10252)
Secure serving flags:
      --secure-port int   The port on which to serve HTTPS with authentication and authorization. (default 10257)
"""
APISERVER_1_19_HELP = """Insecure serving flags:
      --insecure-bind-address ip   The IP address on which to serve the --insecure-port (default 127.0.0.1)
      --insecure-port int          The port on which to serve unsecured, unauthenticated access. (default 8080)
Secure serving flags:
      --secure-port int   The port on which to serve HTTPS with authentication and authorization. (default 6443)
"""
KCM_1_27_HELP = """Secure serving flags:
      --bind-address ip   The IP address on which to listen for the --secure-port port.
      --secure-port int   The port on which to serve HTTPS with authentication and authorization. (default 10257)
"""


@pytest.mark.parametrize(
    ("help_text", "flags"),
    [(KCM_1_21_HELP, ["--port=0"]), (APISERVER_1_19_HELP, ["--insecure-port=0"]), (KCM_1_27_HELP, [])],
    ids=["controller-manager-1.21", "apiserver-1.19", "controller-manager-1.27"],
)
def test_a_plain_http_port_a_release_still_opens_is_turned_off_and_unknown_flags_are_not_passed(
    help_text: str, flags: list[str]
) -> None:
    assert components.insecure_ports_off(help_text) == flags


def test_kubelets_before_1_24_are_told_to_use_the_suites_containerd_not_docker() -> None:
    from harness.clusters.local.components import remote_runtime_flag

    old = (
        "      --container-runtime string   The container runtime to use. Possible values: 'docker', 'remote'. "
        '(default "docker")\n      --container-runtime-endpoint string   The endpoint of remote runtime service.\n'
    )
    assert remote_runtime_flag(old) == ["--container-runtime=remote"]
    assert remote_runtime_flag("      --container-runtime-endpoint string   The endpoint ...\n") == []
