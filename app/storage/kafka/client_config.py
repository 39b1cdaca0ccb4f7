"""How kts logs in to the brokers: Kafka's admin client keys with the ``admin.`` prefix (``admin.security.protocol``,
``admin.sasl.mechanism``, ``admin.sasl.jaas.config``, ``admin.ssl.*``), checked together and turned into
kafka-python's options here, so nothing else knows that library's names.

Checked at load, each refusal one line naming the key and never quoting a value (a JAAS entry holds a password).
"""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.domain.jaas import PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE, JaasSyntaxError, parse_login_module

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_SERVER = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s,:\[\]]+):(?P<port>\d{1,5})")


def bootstrap_servers(value: str) -> list[str]:
    """``host:port[,host:port...]`` as a list (raises ValueError with the reason)."""
    servers = [part.strip() for part in value.split(",") if part.strip()]
    if not servers:
        raise ValueError("must be host:port[,host:port...]")
    for server in servers:
        match = _SERVER.fullmatch(server)
        if match is None or not 0 < int(match["port"]) < 65536:
            raise ValueError(f"{server!r} is not host:port (a port from 1 to 65535)")
    return servers


@dataclass(frozen=True)
class SaslLogin:
    mechanism: str
    username: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class KafkaTls:
    cafile: Path | None = None  # None: the system's trusted CAs
    certfile: Path | None = None  # PEM chain and key: a client certificate login
    key_password: str | None = field(default=None, repr=False)
    check_hostname: bool = True


@dataclass(frozen=True)
class KafkaClientSecurity:
    protocol: str = "PLAINTEXT"
    login: SaslLogin | None = None
    tls: KafkaTls | None = None

    @property
    def identity(self) -> str:
        """Who kts is to the brokers, for messages (never the password)."""
        if self.login is not None:
            return f"{self.login.mechanism} user '{self.login.username}'"
        if self.tls is not None and self.tls.certfile is not None:
            return f"the TLS client certificate {self.tls.certfile}"
        return "anonymous"

    def client_options(self) -> dict[str, Any]:
        """kafka-python's keyword options for this login."""
        options: dict[str, Any] = {"security_protocol": self.protocol}
        if self.login is not None:
            options |= {
                "sasl_mechanism": self.login.mechanism,
                "sasl_plain_username": self.login.username,
                "sasl_plain_password": self.login.password,
            }
        if self.tls is not None:
            options["ssl_context"] = self.ssl_context()
        return options

    def login_options(self, mechanism: str, username: str, password: str) -> dict[str, Any]:
        """The options of a connection that logs in as someone else (a caller's SCRAM check), over the same
        transport as kts's own."""
        return self.client_options() | {
            "sasl_mechanism": mechanism,
            "sasl_plain_username": username,
            "sasl_plain_password": password,
        }

    def ssl_context(self) -> ssl.SSLContext:
        tls = self.tls or KafkaTls()
        context = ssl.create_default_context(cafile=str(tls.cafile) if tls.cafile else None)
        context.check_hostname = tls.check_hostname
        if tls.certfile is not None:
            context.load_cert_chain(str(tls.certfile), password=tls.key_password)
        return context


def kafka_client_security(
    *,
    security_protocol: str = "PLAINTEXT",
    sasl_mechanism: str = "GSSAPI",
    sasl_jaas_config: str | None = None,
    truststore_location: Path | None = None,
    truststore_type: str = "PEM",
    keystore_location: Path | None = None,
    keystore_type: str = "PEM",
    key_password: str | None = None,
    endpoint_identification_algorithm: str = "https",
) -> KafkaClientSecurity:
    """Check the ``admin.*`` keys together; raises ValueError with a one-line message that names the key."""
    protocol = security_protocol.strip().upper()
    if protocol not in PROTOCOLS:
        raise ValueError(f"admin.security.protocol: must be one of {', '.join(PROTOCOLS)}")
    login = None
    if protocol.startswith("SASL_"):
        login = _sasl_login(sasl_mechanism.strip().upper(), sasl_jaas_config)
    elif sasl_jaas_config is not None:
        raise ValueError(f"admin.sasl.jaas.config: set, but admin.security.protocol is {protocol}")
    tls = None
    if protocol.endswith("SSL"):
        for key, kind in (("admin.ssl.truststore.type", truststore_type), ("admin.ssl.keystore.type", keystore_type)):
            if kind.strip().upper() != "PEM":
                raise ValueError(
                    f"{key}: kts reads PEM files only (convert a JKS or PKCS12 store with keytool/openssl)"
                )
        for key, path in (
            ("admin.ssl.truststore.location", truststore_location),
            ("admin.ssl.keystore.location", keystore_location),
        ):
            if path is not None and not path.is_file():
                raise ValueError(f"{key}: {path} is not a readable file")
        algorithm = endpoint_identification_algorithm.strip().lower()
        if algorithm not in ("", "https"):
            raise ValueError("admin.ssl.endpoint.identification.algorithm: must be https or empty")
        tls = KafkaTls(truststore_location, keystore_location, key_password, check_hostname=algorithm == "https")
    else:
        for key, value in (
            ("admin.ssl.truststore.location", truststore_location),
            ("admin.ssl.keystore.location", keystore_location),
        ):
            if value is not None:
                raise ValueError(f"{key}: set, but admin.security.protocol is {protocol}")
    return KafkaClientSecurity(protocol, login, tls)


def _sasl_login(mechanism: str, jaas_config: str | None) -> SaslLogin:
    if mechanism not in MECHANISMS:
        raise ValueError(
            f"admin.sasl.mechanism: {mechanism} is not supported by kts; use one of {', '.join(MECHANISMS)}"
        )
    if jaas_config is None or not jaas_config.strip():
        raise ValueError("admin.sasl.jaas.config: missing (kts's login to the brokers, or KTS_ADMIN_SASL_JAAS_CONFIG)")
    try:
        module = parse_login_module(jaas_config)
    except JaasSyntaxError as exc:
        raise ValueError(f"admin.sasl.jaas.config: {exc.reason}") from None
    expected = PLAIN_LOGIN_MODULE if mechanism == "PLAIN" else SCRAM_LOGIN_MODULE
    if module.class_name != expected:
        raise ValueError(f"admin.sasl.jaas.config: {mechanism} logs in with {expected}")
    username, password = module.options.get("username"), module.options.get("password")
    if not username or password is None:
        raise ValueError("admin.sasl.jaas.config: needs username and password options")
    if module.options.get("tokenauth", "").lower() == "true":
        raise ValueError(
            "admin.sasl.jaas.config: kts cannot log in with a delegation token "
            "(the brokers refuse token requests from one)"
        )
    return SaslLogin(mechanism, username, password)
