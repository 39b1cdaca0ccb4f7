"""How kts's ZooKeeper session is secured: who it authenticates as, whether it uses TLS, which znode ACLs it
sets. Built from settings (``zookeeper.set.acl``, ``zookeeper.sasl.*``, ``zookeeper.jaas.file``,
``zookeeper.ssl.*``) and turned into kazoo's client options here, so nothing else knows kazoo's names.

As a broker does (``KafkaServer`` refuses ``zookeeper.set.acl=true`` without a secure identity), kts refuses
to set creator-only ACLs while anonymous: ZooKeeper would reject every such create.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.domain.jaas import DIGEST_LOGIN_MODULE, JaasSyntaxError, parse_config
from app.storage.zk.znodes.znode_acls import ZnodeAcls

# ZooKeeper's default for its ``zookeeper.sasl.clientconfig`` system property: the JAAS section it logs in with.
DEFAULT_JAAS_SECTION = "Client"


@dataclass(frozen=True)
class DigestLogin:
    """A SASL DIGEST-MD5 identity (the ``Client`` login of a broker's JAAS file)."""

    username: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class ZkTls:
    """TLS to ZooKeeper's ``secureClientPort``, with PEM files (kazoo reads PEM, not JKS or PKCS12)."""

    cafile: Path | None = None  # None: the system's trusted CAs
    certfile: Path | None = None  # a client certificate: ZooKeeper's x509 identity
    keyfile: Path | None = None
    keyfile_password: str | None = field(default=None, repr=False)
    check_hostname: bool = True


@dataclass(frozen=True)
class ZkClientSecurity:
    set_acl: bool = False
    login: DigestLogin | None = None
    tls: ZkTls | None = None

    @property
    def acls(self) -> ZnodeAcls:
        return ZnodeAcls(secure=self.set_acl)

    @property
    def identity(self) -> str:
        """Who kts is to ZooKeeper, for messages (never the password)."""
        if self.login is not None:
            return f"SASL user '{self.login.username}'"
        if self.tls is not None and self.tls.certfile is not None:
            return f"the TLS client certificate {self.tls.certfile}"
        return "anonymous"

    def kazoo_options(self) -> dict[str, Any]:
        """Keyword arguments for ``KazooClient``. A fresh dict each call: kazoo writes into ``sasl_options``."""
        options: dict[str, Any] = {"default_acl": self.acls.default}
        if self.login is not None:
            options["sasl_options"] = {
                "mechanism": "DIGEST-MD5",
                "username": self.login.username,
                "password": self.login.password,
            }
        if self.tls is not None:
            options |= {
                "use_ssl": True,
                "verify_certs": True,
                "check_hostname": self.tls.check_hostname,
                "ca": None if self.tls.cafile is None else str(self.tls.cafile),
                "certfile": None if self.tls.certfile is None else str(self.tls.certfile),
                "keyfile": None if self.tls.keyfile is None else str(self.tls.keyfile),
                "keyfile_password": self.tls.keyfile_password,
            }
        return options


def client_security(
    *,
    set_acl: bool = False,
    sasl_username: str | None = None,
    sasl_password: str | None = None,
    jaas_file: Path | None = None,
    jaas_section: str = DEFAULT_JAAS_SECTION,
    ssl_client_enable: bool = False,
    ssl_cafile: Path | None = None,
    ssl_certfile: Path | None = None,
    ssl_keyfile: Path | None = None,
    ssl_keyfile_password: str | None = None,
    ssl_endpoint_identification_algorithm: str = "HTTPS",
) -> ZkClientSecurity:
    """Check the settings together; raises ValueError with a one-line message that names the key."""
    login = _login(sasl_username, sasl_password, jaas_file, jaas_section)
    tls = None
    ssl_files = {
        "zookeeper.ssl.cafile": ssl_cafile,
        "zookeeper.ssl.certfile": ssl_certfile,
        "zookeeper.ssl.keyfile": ssl_keyfile,
    }
    for key, path in ssl_files.items():
        if path is not None and not ssl_client_enable:
            raise ValueError(f"{key}: set, but zookeeper.ssl.client.enable is false")
        if path is not None and not path.is_file():
            raise ValueError(f"{key}: {path} is not a readable file")
    if ssl_client_enable:
        if (ssl_certfile is None) != (ssl_keyfile is None):
            raise ValueError("zookeeper.ssl.certfile: give it and zookeeper.ssl.keyfile together, or neither")
        algorithm = ssl_endpoint_identification_algorithm.strip().upper()
        if algorithm not in ("", "HTTPS"):
            raise ValueError("zookeeper.ssl.endpoint.identification.algorithm: must be HTTPS or empty")
        tls = ZkTls(ssl_cafile, ssl_certfile, ssl_keyfile, ssl_keyfile_password, check_hostname=algorithm == "HTTPS")
    security = ZkClientSecurity(set_acl=set_acl, login=login, tls=tls)
    if set_acl and security.identity == "anonymous":
        raise ValueError(
            "zookeeper.set.acl: true needs an identity for ZooKeeper: zookeeper.sasl.username and "
            "zookeeper.sasl.password, zookeeper.jaas.file, or a TLS client certificate (zookeeper.ssl.certfile)"
        )
    return security


def _login(username: str | None, password: str | None, jaas_file: Path | None, section: str) -> DigestLogin | None:
    if jaas_file is not None:
        if username is not None or password is not None:
            raise ValueError("zookeeper.jaas.file: give either the JAAS file or zookeeper.sasl.username/password")
        return _digest_login(jaas_file, section)
    if (username is None) != (password is None):
        missing = "zookeeper.sasl.password" if password is None else "zookeeper.sasl.username"
        raise ValueError(f"{missing}: missing (SASL to ZooKeeper needs both username and password)")
    if username is None or password is None:
        return None
    if not username.strip():
        raise ValueError("zookeeper.sasl.username: must not be empty")
    return DigestLogin(username, password)


def _digest_login(path: Path, section: str) -> DigestLogin:
    """The DigestLoginModule of ``section`` in a broker's JAAS file (``zookeeper.jaas.file``), which brokers
    and ``zookeeper-shell`` read too, so that their ZooKeeper identity is configured in one place. Kerberos
    is refused with a clear error. Messages name lines and sections, never values: the file holds a password."""
    try:
        sections = parse_config(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"zookeeper.jaas.file: cannot read {path}: {type(exc).__name__}") from None
    except JaasSyntaxError as exc:
        raise ValueError(f"zookeeper.jaas.file: {exc}") from None
    modules = sections.get(section)
    if not modules:
        raise ValueError(f"zookeeper.jaas.file: {path} has no '{section}' section")
    digest = [module for module in modules if module.class_name == DIGEST_LOGIN_MODULE]
    if not digest:
        names = ", ".join(sorted({module.class_name.rsplit(".", 1)[-1] for module in modules}))
        raise ValueError(
            f"zookeeper.jaas.file: the '{section}' section of {path} uses {names}; kts authenticates to ZooKeeper "
            f"with {DIGEST_LOGIN_MODULE} (SASL DIGEST-MD5) only"
        )
    options = digest[0].options
    if not options.get("username") or "password" not in options:
        raise ValueError(
            f"zookeeper.jaas.file: the {DIGEST_LOGIN_MODULE} of section '{section}' in {path} needs username "
            "and password"
        )
    return DigestLogin(options["username"], options["password"])
