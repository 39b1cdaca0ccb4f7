"""The trust and key stores of a Kafka client's config file (``ssl.truststore.*``, ``ssl.keystore.*``), read into
what Python's ``ssl`` takes: PEM text of the CAs to trust, and a client certificate chain with its key.

Kafka's types are honoured as a Java client honours them: ``JKS`` (Kafka's default) and ``PKCS12`` are told apart
by the file's content, as Java's ``keystore.type.compat`` does, so a ``.p12`` file under the default type works as
it does for Kafka; ``PEM`` is a PEM file, or the PEM text itself in ``ssl.truststore.certificates`` and
``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``. PKCS12 is read with ``cryptography``; JKS and JCEKS
with ``pyjks``, the ``jks`` extra (``pip install 'kts-kafka[jks]'``), imported only when a JKS file is given.
Errors are ``ConfigError``: one line naming the key, never a password.
"""

from __future__ import annotations

import os
import re
import secrets
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.serialization import pkcs12

from app.settings import ConfigError
from app.version import DISTRIBUTION

_JKS_MAGIC = (b"\xfe\xed\xfe\xed", b"\xce\xce\xce\xce")  # JKS, JCEKS
_PRIVATE_KEY_PEM = re.compile(r"-----BEGIN ([A-Z ]*PRIVATE KEY)-----.*?-----END \1-----", re.DOTALL)
STORE_TYPES = ("JKS", "PKCS12", "PEM")


@dataclass(frozen=True, slots=True)
class ClientIdentity:
    """A client certificate chain (leaf first) and its private key, from a key store."""

    chain: tuple[x509.Certificate, ...]
    key: PrivateKeyTypes = field(repr=False)

    def load_into(self, context: ssl.SSLContext) -> None:
        """``ssl`` loads a chain only from files: write it to a private temporary directory, the key encrypted
        with a one-time passphrase, load it, and remove both."""
        passphrase = secrets.token_bytes(32)
        with tempfile.TemporaryDirectory(prefix="kts-client-") as directory:
            chain = Path(directory) / "chain.pem"
            key = Path(directory) / "key.pem"
            _write_private(chain, b"".join(c.public_bytes(serialization.Encoding.PEM) for c in self.chain))
            _write_private(
                key,
                self.key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.BestAvailableEncryption(passphrase),
                ),
            )
            context.load_cert_chain(str(chain), str(key), password=passphrase)


def trusted_certificates(location: Path, store_type: str, password: str | None) -> str:
    """The PEM text of every certificate in a trust store."""
    kind = _store_type("ssl.truststore.type", store_type)
    data = _read("ssl.truststore.location", location)
    if kind == "PEM":
        return _pem_certificates("ssl.truststore.location", data.decode("utf-8", "replace"))
    if data[:4] in _JKS_MAGIC:
        certificates = _jks_trusted(data, password)
    else:
        certificates = _pkcs12_certificates("ssl.truststore", data, password)
    if not certificates:
        raise ConfigError(f"ssl.truststore.location: {location} holds no certificate")
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode("ascii") for c in certificates)


def inline_trusted_certificates(text: str) -> str:
    return _pem_certificates("ssl.truststore.certificates", text)


def client_identity(location: Path, store_type: str, password: str | None, key_password: str | None) -> ClientIdentity:
    """The key entry of a key store (the first, as a Java client with one key entry uses it). ``password`` opens
    the store (JKS, PKCS12), ``key_password`` its key (JKS: the store's when absent; PEM: an encrypted key)."""
    kind = _store_type("ssl.keystore.type", store_type)
    data = _read("ssl.keystore.location", location)
    if kind == "PEM":
        text = data.decode("utf-8", "replace")
        return inline_identity(text, text, key_password, key="ssl.keystore.location")
    if data[:4] in _JKS_MAGIC:
        return _jks_identity(data, password, key_password or password)
    try:
        key, certificate, extra = pkcs12.load_key_and_certificates(data, _bytes(password))
    except ValueError:
        raise ConfigError(
            "ssl.keystore.location: not a PKCS12 or JKS store, or ssl.keystore.password is wrong"
        ) from None
    if key is None or certificate is None:
        raise ConfigError(f"ssl.keystore.location: {location} holds no private key with its certificate")
    return ClientIdentity((certificate, *extra), key)


def inline_identity(chain_text: str, key_text: str, key_password: str | None, *, key: str) -> ClientIdentity:
    """A chain and key given as PEM text (``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``)."""
    try:
        chain = tuple(x509.load_pem_x509_certificates(chain_text.encode("utf-8")))
    except ValueError:
        raise ConfigError(f"{key}: holds no PEM certificate") from None
    block = _PRIVATE_KEY_PEM.search(key_text)
    if block is None:
        raise ConfigError(f"{key}: holds no PEM private key")
    try:
        private = serialization.load_pem_private_key(block.group(0).encode("utf-8"), _bytes(key_password))
    except (ValueError, TypeError):
        raise ConfigError(f"{key}: cannot read the private key (is ssl.key.password right?)") from None
    return ClientIdentity(chain, private)


def _jks_trusted(data: bytes, password: str | None) -> list[x509.Certificate]:
    store = _jks_load("ssl.truststore", data, password)
    certificates = [x509.load_der_x509_certificate(entry.cert) for entry in store.certs.values()]
    # A key store used as a trust store: Java trusts the first certificate of each key entry too
    # (sun.security.validator.TrustStoreUtil.getTrustedCerts).
    for entry in store.private_keys.values():
        certificates.extend(x509.load_der_x509_certificate(der) for _, der in entry.cert_chain[:1])
    return certificates


def _jks_identity(data: bytes, password: str | None, key_password: str | None) -> ClientIdentity:
    import jks

    store = _jks_load("ssl.keystore", data, password)
    if not store.private_keys:
        raise ConfigError("ssl.keystore.location: the JKS store holds no private key entry")
    entry = next(iter(store.private_keys.values()))
    if key_password is None:
        raise ConfigError("ssl.keystore.password: needed to open the key of the JKS store (or ssl.key.password)")
    try:  # with ssl.key.password, else the store's password, as a Java client does
        entry.decrypt(key_password)
    except jks.util.DecryptionFailureException:
        raise ConfigError("ssl.key.password: cannot decrypt the key entry of the JKS store") from None
    chain = tuple(x509.load_der_x509_certificate(der) for _, der in entry.cert_chain)
    key = serialization.load_der_private_key(entry.pkey_pkcs8, None)
    return ClientIdentity(chain, key)


def _jks_load(prefix: str, data: bytes, password: str | None) -> Any:
    try:
        import jks
    except ImportError:
        raise ConfigError(
            f"{prefix}.location: a JKS store needs the jks extra (pip install '{DISTRIBUTION}[jks]'), or convert "
            "it with keytool -importkeystore -deststoretype PKCS12"
        ) from None
    try:
        return jks.KeyStore.loads(data, password, try_decrypt_keys=False)  # keys: decrypted where needed
    except jks.util.KeystoreSignatureException:
        raise ConfigError(f"{prefix}.password: wrong password for the JKS store") from None
    except (jks.util.BadKeystoreFormatException, jks.util.UnsupportedKeystoreVersionException, ValueError):
        raise ConfigError(f"{prefix}.location: not a readable JKS store") from None


def _pkcs12_certificates(prefix: str, data: bytes, password: str | None) -> list[x509.Certificate]:
    try:
        key_and_certificates = pkcs12.load_pkcs12(data, _bytes(password))
    except ValueError:
        raise ConfigError(f"{prefix}.location: not a PKCS12 or JKS store, or {prefix}.password is wrong") from None
    certificates = [c.certificate for c in key_and_certificates.additional_certs]
    if key_and_certificates.cert is not None:
        certificates.insert(0, key_and_certificates.cert.certificate)
    return certificates


def _pem_certificates(key: str, text: str) -> str:
    try:
        certificates = x509.load_pem_x509_certificates(text.encode("utf-8"))
    except ValueError:
        raise ConfigError(f"{key}: holds no PEM certificate") from None
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode("ascii") for c in certificates)


def _store_type(key: str, value: str) -> str:
    kind = (value or "JKS").strip().upper()
    if kind == "JCEKS":
        return "JKS"
    if kind not in STORE_TYPES:
        raise ConfigError(f"{key}: kts reads JKS, PKCS12 and PEM stores, not {value}")
    return kind


def _read(key: str, path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path}: {exc.strerror or exc}") from None


def _bytes(password: str | None) -> bytes | None:
    return password.encode("utf-8") if password else None


def _write_private(path: Path, data: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
