"""Kafka clients' trust and key stores made from tests/tls_material.py's PEM files: PKCS12 with ``cryptography``,
JKS and Java-made PKCS12 with the JRE's ``keytool`` (ZooKeeper's Debian package brings the JRE)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from tests.tls_material import CertificateAuthority, Pair


def _keytool() -> str:
    keytool = shutil.which("keytool")
    assert keytool is not None, "keytool (a Java runtime) is needed to make JKS stores"
    return keytool


def pkcs12_keystore(path: Path, pair: Pair, ca: CertificateAuthority, password: str) -> Path:
    key = serialization.load_pem_private_key(pair.key.read_bytes(), None)
    certificate = x509.load_pem_x509_certificate(pair.cert.read_bytes())
    path.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"client",
            key,  # type: ignore[arg-type]
            certificate,
            [ca.certificate],
            serialization.BestAvailableEncryption(password.encode()),
        )
    )
    return path


def pkcs12_truststore(path: Path, ca: CertificateAuthority, password: str) -> Path:
    """As Java's keytool makes one (a trusted-certificate entry), the form Kafka clients are handed."""
    return _keytool_truststore(path, ca, password, "PKCS12")


def jks_truststore(path: Path, ca: CertificateAuthority, password: str) -> Path:
    return _keytool_truststore(path, ca, password, "JKS")


def jks_keystore(path: Path, pkcs12_store: Path, password: str) -> Path:
    """The key entry of a PKCS12 store moved into a JKS store, as ``keytool -importkeystore`` does it."""
    subprocess.run(
        [
            _keytool(), "-importkeystore", "-noprompt",
            "-srckeystore", str(pkcs12_store), "-srcstoretype", "PKCS12", "-srcstorepass", password,
            "-destkeystore", str(path), "-deststoretype", "JKS", "-deststorepass", password, "-destkeypass", password,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )  # fmt: skip
    return path


def _keytool_truststore(path: Path, ca: CertificateAuthority, password: str, store_type: str) -> Path:
    subprocess.run(
        [
            _keytool(), "-importcert", "-noprompt", "-alias", "kts-ca", "-file", str(ca.path),
            "-keystore", str(path), "-storetype", store_type, "-storepass", password,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )  # fmt: skip
    return path
