"""The files ``kts sidecar`` keeps for Kafka clients, and how it writes them.

Three formats, all carrying the token as a Kafka client logs in with it
(docs/kafka-compatibility.md#logging-in-to-kafka-with-a-token-scram):
``properties`` (client properties with ``sasl.jaas.config``), ``jaas`` (a ``KafkaClient`` section for
``-Djava.security.auth.login.config``) and ``json`` (for programs that build their own config).
A file is replaced atomically with mode 0600, so a reader never sees half a file or another user's copy.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import tempfile
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from app.domain.jaas import SCRAM_LOGIN_MODULE, LoginModule, render_login_module, render_section

log = logging.getLogger("kts.sidecar")
FILE_MODE = 0o600
SASL_MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")
SECURITY_PROTOCOLS = ("SASL_SSL", "SASL_PLAINTEXT")
# Token ids and standard base64 HMACs need no quoting in JAAS or properties syntax; anything else is refused
# rather than escaped, because it cannot be a token the service issued.
_TOKEN_ID = re.compile(r"[A-Za-z0-9_\-]{1,64}")
_HMAC = re.compile(r"[A-Za-z0-9+/]+={0,2}")


class ClientFileFormat(StrEnum):
    PROPERTIES = "properties"
    JAAS = "jaas"
    JSON = "json"


@dataclass(frozen=True, slots=True)
class TokenCredentials:
    token_id: str
    hmac: str = field(repr=False)
    expiry_timestamp: int
    max_timestamp: int

    def __post_init__(self) -> None:
        if not _TOKEN_ID.fullmatch(self.token_id):
            raise ValueError("not a token id")
        if not _HMAC.fullmatch(self.hmac):
            raise ValueError("the hmac is not standard base64")


def token_login(credentials: TokenCredentials) -> LoginModule:
    """The login module a Kafka client uses with a delegation token."""
    return LoginModule(
        SCRAM_LOGIN_MODULE,
        "required",
        {"username": credentials.token_id, "password": credentials.hmac, "tokenauth": "true"},
    )


def render(
    file_format: ClientFileFormat,
    credentials: TokenCredentials,
    *,
    security_protocol: str = "SASL_SSL",
    sasl_mechanism: str = "SCRAM-SHA-512",
) -> str:
    match file_format:
        case ClientFileFormat.PROPERTIES:
            return (
                "# Kafka client settings for a delegation token, kept fresh by kts sidecar. Do not edit.\n"
                f"security.protocol={security_protocol}\n"
                f"sasl.mechanism={sasl_mechanism}\n"
                f"sasl.jaas.config={render_login_module(token_login(credentials))}\n"
            )
        case ClientFileFormat.JAAS:
            header = "// A delegation token for Kafka clients, kept fresh by kts sidecar. Do not edit.\n"
            return header + render_section("KafkaClient", [token_login(credentials)])
        case ClientFileFormat.JSON:
            document = {
                "tokenId": credentials.token_id,
                "hmac": credentials.hmac,
                "expiryTimestamp": credentials.expiry_timestamp,
                "maxTimestamp": credentials.max_timestamp,
            }
            return json.dumps(document, indent=2) + "\n"
    raise ValueError(f"unknown format {file_format}")


class TokenFile:
    """The file a Kafka client reads its token from; the renewal loop publishes each token version here."""

    def __init__(
        self,
        path: Path,
        file_format: ClientFileFormat = ClientFileFormat.PROPERTIES,
        *,
        security_protocol: str = "SASL_SSL",
        sasl_mechanism: str = "SCRAM-SHA-512",
    ) -> None:
        self.path = path
        self.file_format = file_format
        self._security_protocol = security_protocol
        self._sasl_mechanism = sasl_mechanism
        self._written: str | None = None

    def publish(self, credentials: TokenCredentials) -> None:
        """Rewrite the file when its text changes (or it was removed); PublishError when it cannot be written."""
        text = render(
            self.file_format,
            credentials,
            security_protocol=self._security_protocol,
            sasl_mechanism=self._sasl_mechanism,
        )
        if text == self._written and self.path.exists():
            return
        try:
            write_atomically(self.path, text)
        except OSError as exc:
            raise PublishError(f"cannot write {self.path}: {exc.strerror or exc}") from exc
        self._written = text
        log.info("wrote %s (token %s)", self.path, credentials.token_id)


class PublishError(Exception):
    """The token could not be published; the message is one line for the log."""


def write_atomically(path: Path, text: str, mode: int = FILE_MODE) -> None:
    """Write a temporary file beside ``path`` (same file system), fsync it, then rename it over ``path``."""
    directory = path.parent
    descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(descriptor, mode)  # before any secret is written
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    _fsync_directory(directory)


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable; some file systems cannot open a directory, which is fine."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
