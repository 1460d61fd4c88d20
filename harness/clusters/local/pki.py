"""Certificates, keys and kubeconfigs of a local cluster, made fresh for each cluster.

Identities follow kubeadm's (cmd/kubeadm/app/phases/certs/certlist.go) so the default RBAC bootstrap
bindings apply: admin in `system:masters`; the kubelet `system:node:<node>` in `system:nodes` (Node
authorizer); `system:kube-controller-manager` and `system:kube-scheduler`; the API server's client for the
kubelet in `system:masters`. Serving certificates carry SANs (Go ignores the CN for host names).
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=30)


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _write_private(path: Path, data: bytes) -> None:
    """Write a key that no one but its owner may read, from its first byte (no moment with the umask's mode)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # an existing file keeps its mode through O_CREAT
    with os.fdopen(descriptor, "wb") as out:
        out.write(data)


def _pem_key(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization)] if organization else []
    return x509.Name([*parts, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


@dataclass
class Pki:
    """A CA of one local cluster and the certificates it signs, written under `directory`."""

    directory: Path
    ca_file: Path = field(init=False)
    ca_key_file: Path = field(init=False)

    def __post_init__(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        now = datetime.datetime.now(datetime.UTC)
        self._ca_key = _key()
        subject = _name("pod-lifecycle-probes local CA")
        self._ca = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .sign(self._ca_key, hashes.SHA256())
        )
        self.ca_file, self.ca_key_file = self._write("ca", self._ca, self._ca_key)

    def _write(self, name: str, certificate: x509.Certificate, key: rsa.RSAPrivateKey) -> tuple[Path, Path]:
        """`<name>.crt`, and `<name>.key` readable by its owner only."""
        cert_file, key_file = self.directory / f"{name}.crt", self.directory / f"{name}.key"
        cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        _write_private(key_file, _pem_key(key))
        return cert_file, key_file

    def issue(
        self,
        name: str,
        common_name: str,
        organization: str | None = None,
        server: bool = False,
        client: bool = True,
        dns: tuple[str, ...] = (),
        ips: tuple[str, ...] = (),
    ) -> tuple[Path, Path]:
        """(certificate, key) files for one identity."""
        key = _key()
        now = datetime.datetime.now(datetime.UTC)
        usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + (
            [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
        )
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, organization))
            .issuer_name(self._ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(True, False, True, False, False, False, False, False, False), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        if dns or ips:
            names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
            names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return self._write(name, builder.sign(self._ca_key, hashes.SHA256()), key)

    def service_account_keys(self) -> tuple[Path, Path]:
        """(private, public) key files that sign and verify service account tokens."""
        key = _key()
        private, public = self.directory / "sa.key", self.directory / "sa.pub"
        _write_private(private, _pem_key(key))
        public.write_bytes(
            key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        )
        return private, public

    def kubeconfig(self, path: Path, server: str, user: str, cert: Path, key: Path, context: str) -> Path:
        def data(file: Path) -> str:
            return base64.b64encode(file.read_bytes()).decode()

        document = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": context, "cluster": {"server": server, "certificate-authority-data": data(self.ca_file)}}
            ],
            "users": [{"name": user, "user": {"client-certificate-data": data(cert), "client-key-data": data(key)}}],
            "contexts": [{"name": context, "context": {"cluster": context, "user": user}}],
            "current-context": context,
        }
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        path.chmod(0o600)
        return path
