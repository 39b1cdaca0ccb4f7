"""``--command-config FILE`` and ``--server``: who the ``kts`` client commands are and where the service is.

The file is a Java properties file holding one way to authenticate (docs/cli.md#client-commands):

- ``username`` + ``password``: HTTP Basic against the user's SCRAM credential;
- ``token.id`` + ``token.hmac``: ``Authorization: Bearer <tokenId>:<hmac>``;
- ``sasl.jaas.config`` as a Kafka client writes it (``ScramLoginModule required username=".." password=".."
  [tokenauth="true"];``), so a Kafka client's existing file works as it is: with ``tokenauth="true"`` the
  username is a token id and the password its HMAC (Bearer), otherwise it is a user's password (Basic);

plus, with any of them or alone, ``ssl.certfile``/``ssl.keyfile`` (a client certificate), ``ssl.key.password``
and ``ssl.cafile`` (the CAs to trust for an ``https://`` server), or a Kafka client's own stores instead:
``ssl.truststore.location``/``.type``/``.password`` (or ``ssl.truststore.certificates``) and
``ssl.keystore.location``/``.type``/``.password`` (or ``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``),
JKS, PKCS12 or PEM (app/cli/client/key_stores.py). Other keys (``bootstrap.servers``, ``security.protocol``, ...)
are ignored, as Kafka's tools ignore what they do not use. Errors name the key and never echo a password or HMAC.
"""

from __future__ import annotations

import base64
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from app.cli.client import key_stores
from app.cli.client.arguments import DEFAULT_SERVER, SERVER_ENV
from app.cli.client.key_stores import ClientIdentity
from app.domain.jaas import PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE, JaasSyntaxError, parse_login_module
from app.settings import ConfigError, read_properties


@dataclass(frozen=True, slots=True)
class UserPassword:
    username: str
    password: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class TokenCredential:
    token_id: str
    hmac: str = field(repr=False)


Credential = UserPassword | TokenCredential


@dataclass(frozen=True, slots=True)
class CommandConfig:
    credential: Credential | None = None
    certfile: Path | None = None
    keyfile: Path | None = None
    key_password: str | None = field(default=None, repr=False)
    cafile: Path | None = None
    trusted_pem: str | None = None  # from a trust store: the CAs to trust, as PEM text
    identity: ClientIdentity | None = None  # from a key store: the client certificate chain and its key

    @property
    def authorization(self) -> tuple[str, str] | None:
        """``(scheme, value)`` for the ``Authorization`` header, or None for a certificate (or no) login."""
        match self.credential:
            case UserPassword(username, password):
                return ("Basic", _basic(username, password))
            case TokenCredential(token_id, hmac):
                return ("Bearer", f"{token_id}:{hmac}")
        return None

    @property
    def user_principal(self) -> str | None:
        """The principal the service will see, when the client can know it (a Basic login)."""
        return f"User:{self.credential.username}" if isinstance(self.credential, UserPassword) else None

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context for an ``https://`` server, or None for the system defaults."""
        if self.certfile is None and self.cafile is None and self.trusted_pem is None and self.identity is None:
            return None
        try:
            context = ssl.create_default_context(
                cafile=str(self.cafile) if self.cafile else None, cadata=self.trusted_pem
            )
        except (ssl.SSLError, OSError) as exc:
            key = "ssl.cafile" if self.cafile else "ssl.truststore.location"
            raise ConfigError(f"{key}: cannot load the CAs to trust: {_reason(exc)}") from None
        if self.identity is not None:
            try:
                self.identity.load_into(context)
            except (ssl.SSLError, OSError) as exc:
                raise ConfigError(f"ssl.keystore.location: cannot use the client certificate: {_reason(exc)}") from None
        if self.certfile is not None:
            try:
                context.load_cert_chain(
                    str(self.certfile), str(self.keyfile) if self.keyfile else None, password=self.key_password
                )
            except (ssl.SSLError, OSError) as exc:
                raise ConfigError(f"ssl.certfile: cannot load the client certificate and key: {_reason(exc)}") from None
        return context


def load_command_config(path: Path | None) -> CommandConfig:
    if path is None:
        return CommandConfig()
    if not path.is_file():
        raise ConfigError(f"command config file {path} does not exist")
    try:
        values = read_properties(path)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"cannot read command config file {path}: {_reason(exc)}") from None
    return parse_command_config(values)


def parse_command_config(values: Mapping[str, str]) -> CommandConfig:
    credentials: list[tuple[str, Credential]] = []
    if "username" in values or "password" in values:
        credentials.append(("username/password", UserPassword(*_pair(values, "username", "password"))))
    if "token.id" in values or "token.hmac" in values:
        credentials.append(("token.id/token.hmac", TokenCredential(*_pair(values, "token.id", "token.hmac"))))
    if values.get("sasl.jaas.config", "").strip():
        credentials.append(("sasl.jaas.config", parse_sasl_jaas_config(values["sasl.jaas.config"])))
    if len(credentials) > 1:
        names = " and ".join(name for name, _ in credentials)
        raise ConfigError(f"command config: give one way to log in, not {names}")
    certfile, keyfile, cafile = (_file(values, key) for key in ("ssl.certfile", "ssl.keyfile", "ssl.cafile"))
    if keyfile is not None and certfile is None:
        raise ConfigError("ssl.keyfile: needs ssl.certfile (the client certificate)")
    trusted_pem = _trust_store(values)
    if trusted_pem is not None and cafile is not None:
        raise ConfigError("ssl.truststore.location: give the CAs to trust once, as ssl.cafile or as a trust store")
    identity = _key_store(values)
    if identity is not None and certfile is not None:
        raise ConfigError("ssl.keystore.location: give the client certificate once, as ssl.certfile or as a key store")
    return CommandConfig(
        credential=credentials[0][1] if credentials else None,
        certfile=certfile,
        keyfile=keyfile,
        key_password=values.get("ssl.key.password") or None,
        cafile=cafile,
        trusted_pem=trusted_pem,
        identity=identity,
    )


def _trust_store(values: Mapping[str, str]) -> str | None:
    """The CAs of ``ssl.truststore.*`` as PEM text, or None when the file names no trust store."""
    if values.get("ssl.truststore.certificates", "").strip():
        return key_stores.inline_trusted_certificates(values["ssl.truststore.certificates"])
    location = _file(values, "ssl.truststore.location")
    if location is None:
        return None
    password = values.get("ssl.truststore.password") or None
    return key_stores.trusted_certificates(location, values.get("ssl.truststore.type", ""), password)


def _key_store(values: Mapping[str, str]) -> ClientIdentity | None:
    """The client certificate and key of ``ssl.keystore.*``, or None when the file names no key store."""
    store_password = values.get("ssl.keystore.password") or None
    key_password = values.get("ssl.key.password") or None
    if values.get("ssl.keystore.certificate.chain", "").strip() or values.get("ssl.keystore.key", "").strip():
        return key_stores.inline_identity(
            values.get("ssl.keystore.certificate.chain", ""),
            values.get("ssl.keystore.key", ""),
            key_password,
            key="ssl.keystore.key",
        )
    location = _file(values, "ssl.keystore.location")
    if location is None:
        return None
    return key_stores.client_identity(location, values.get("ssl.keystore.type", ""), store_password, key_password)


def parse_sasl_jaas_config(text: str) -> Credential:
    """The credential in a Kafka client's ``sasl.jaas.config`` (one SCRAM or PLAIN login module)."""
    try:
        module = parse_login_module(text)
    except JaasSyntaxError as exc:
        raise ConfigError(f"sasl.jaas.config: {exc.reason}") from None
    # PLAIN carries a user's password too, which kts checks against the same SCRAM credential.
    if module.class_name not in (SCRAM_LOGIN_MODULE, PLAIN_LOGIN_MODULE):
        raise ConfigError(
            f"sasl.jaas.config: kts understands {SCRAM_LOGIN_MODULE} (or PLAIN) only, not {module.class_name}"
        )
    username, password = module.options.get("username"), module.options.get("password")
    if not username or not password:
        raise ConfigError("sasl.jaas.config: needs both username and password options")
    if module.options.get("tokenauth", "false").lower() == "true":
        return TokenCredential(username, password)
    return UserPassword(username, password)


def server_url(explicit: str | None, environ: Mapping[str, str]) -> str:
    """``--server``, else ``$KTS_SERVER``, else the local default; an ``http(s)://host[:port]`` URL."""
    url = (explicit or environ.get(SERVER_ENV) or DEFAULT_SERVER).strip().rstrip("/")
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        parts = parts._replace(netloc="")
    source = "--server" if explicit else SERVER_ENV
    if "://" not in url:
        # Kafka operators type a broker's host:port here, as for Kafka's own tools: say what kts wants instead.
        raise ConfigError(
            f"{source}: {url!r} looks like a Kafka broker's address; kts's commands talk to kts over HTTP: give "
            f"kts's URL (--server, alias --bootstrap-server), e.g. --server http://127.0.0.1:8080, or set {SERVER_ENV}"
        )
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{source}: {url!r} is not a URL such as http://127.0.0.1:8080")
    return url


def _pair(values: Mapping[str, str], first: str, second: str) -> tuple[str, str]:
    one, two = values.get(first, "").strip(), values.get(second, "")
    if not one or not two:
        raise ConfigError(f"command config: {first} and {second} go together; one is missing or empty")
    return one, two


def _file(values: Mapping[str, str], key: str) -> Path | None:
    text = values.get(key, "").strip()
    if not text:
        return None
    path = Path(text).expanduser()
    if not path.is_file():
        raise ConfigError(f"{key}: {path} is not a readable file")
    return path


def _basic(username: str, password: str) -> str:
    return base64.b64encode(f"{username}:{password}".encode()).decode("ascii")


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or getattr(exc, "reason", None) or str(exc) or type(exc).__name__
