"""Typed settings from a Java properties file with Kafka's key names, overridden by ``KTS_*`` variables.

``KTS_`` + the key upper-cased with ``.`` replaced by ``_`` overrides the file
(``delegation.token.secret.key`` -> ``KTS_DELEGATION_TOKEN_SECRET_KEY``). Keys a broker's
``server.properties`` carries that kts does not use are ignored, so that file can be given as it is.
Settings are built by the CLI or ``create_app``, never at import time.

Each cluster backend reads and checks its own keys in a group of its own (``app/storage/<backend>/settings.py``):
this module knows no backend. The composition root hands it the groups (app/backends.py); it reads their keys
from the file and the environment as it reads its own, builds every group, and picks the backend in use.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, TypeVar
from urllib.parse import urlsplit

from pydantic import Field, PrivateAttr, SecretStr, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from app.config_names.typos import likely_intended
from app.domain.errors import InvalidPrincipal
from app.domain.lockout import ExemptAddresses
from app.domain.principal import KafkaPrincipal
from app.domain.ssl_principal_mapper import SslPrincipalMapper
from app.domain.token_secret import TokenSecret

ENV_PREFIX = "KTS_"
DEFAULT_JWT_MAX_LIFETIME_S = 86_400  # one day: a Kubernetes projected token lives an hour by default


class ConfigError(Exception):
    """A setting is missing or invalid. The message is one line that names the key."""


def _entries(value: str) -> list[str]:
    """A comma-separated list, blanks left out."""
    return [part.strip() for part in value.split(",") if part.strip()]


def is_http_listener_list(value: str) -> bool:
    """Whether every entry of a ``listeners`` value is an http(s) URL (kts's), not a broker's ``NAME://host:port``."""
    entries = [entry.strip() for entry in value.split(",")]
    return all(urlsplit(entry).scheme.lower() in ("http", "https") for entry in entries)


def _one_listener_url(value: str, examples: str = "http://127.0.0.1:8080 or https://0.0.0.0:8443") -> str:
    parts = urlsplit(value.strip())
    if "," in value or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"must be one URL such as {examples}")
    try:
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        raise ValueError("has an invalid port") from None
    return value.strip()


def property_key(field_name: str) -> str:
    return field_name.replace("_", ".")


def env_name(field_name: str) -> str:
    return ENV_PREFIX + field_name.upper()


def read_properties(path: Path) -> dict[str, str]:
    """A Java properties file as Kafka reads it (escapes, continuations, ``=``/``:``/space separators)."""
    # Imported only when a file is read: with its XML support it is some 35 ms of a start-up configured from the
    # environment alone.
    import javaproperties

    with path.open(encoding="utf-8") as handle:
        return dict(javaproperties.load(handle))


class BackendGroup(Protocol):
    """One cluster backend's group of settings, a pydantic model in ``app/storage/<backend>/settings.py`` whose
    fields carry their key's name (``zookeeper_session_timeout_ms``) as alias: it reads and checks the keys of that
    backend, and derives what the backend needs from them (its client security, read once at load)."""

    name: ClassVar[str]  # the backend's name, ``settings.backend``
    selector: ClassVar[str]  # the field (alias) whose value chooses this backend: ``zookeeper_connect``
    purpose: ClassVar[str]  # what the selector reaches, for the one line when no backend is chosen

    @classmethod
    def model_validate(cls, obj: Any) -> Any: ...

    @property
    def selected(self) -> bool:
        """Whether the keys choose this backend (the first chosen in the composition root's order is in use)."""
        ...

    def derive(self, in_use: bool) -> None:
        """The checks of the keys read together, at the end of the load (raise ValueError naming the key)."""
        ...


Group = TypeVar("Group", bound=BackendGroup)


def group_fields(backends: Sequence[type[BackendGroup]]) -> dict[str, FieldInfo]:
    """Every key of these groups (field alias: ``zookeeper_connect``) and its field, in order."""
    found: dict[str, FieldInfo] = {}
    for backend in backends:
        model_fields: dict[str, FieldInfo] = getattr(backend, "model_fields")  # noqa: B009 - a pydantic model's
        for name, info in model_fields.items():
            found.setdefault(info.alias or name, info)
    return found


@dataclass(frozen=True)
class _Load:
    """What one load reads, for the sources and validators pydantic-settings builds from the class."""

    backends: Sequence[type[BackendGroup]] = ()
    file_values: Mapping[str, str] = field(default_factory=dict)  # every key of the file
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def raw(self, key: str) -> tuple[bool, Any]:
        """A key's value as a setting reads it: an explicit override, else ``KTS_<KEY>``, else the file."""
        if key in self.overrides:
            return True, self.overrides[key]
        variable = env_name(key).lower()
        for name, value in os.environ.items():
            if name.lower() == variable:
                return True, value
        if property_key(key) in self.file_values:
            return True, self.file_values[property_key(key)]
        return False, None

    def group_values(self, backend: type[BackendGroup]) -> dict[str, Any]:
        values = {}
        for key in group_fields([backend]):
            found, value = self.raw(key)
            if found:
                values[key] = value
        return values


class _PropertiesFile(PydanticBaseSettingsSource):
    """The properties file's keys that name a setting of this class (the load has read it and checked it for
    misspelled keys)."""

    def __init__(self, settings_cls: type[BaseSettings], load: _Load) -> None:
        super().__init__(settings_cls)
        fields = {property_key(name): name for name in settings_cls.model_fields}
        self._values = {fields[key]: value for key, value in load.file_values.items() if key in fields}

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self._values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self._values)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, case_sensitive=False, extra="ignore")

    # Kafka broker keys. The cluster's keys are its backend's group's (BackendGroup): zookeeper.connect
    # (app/storage/zk/settings.py), else bootstrap.servers (app/storage/kafka/settings.py).
    delegation_token_secret_key: SecretStr | None = None
    delegation_token_master_key: SecretStr | None = None
    delegation_token_max_lifetime_ms: int = Field(604_800_000, ge=1)
    delegation_token_expiry_time_ms: int = Field(86_400_000, ge=1)
    delegation_token_expiry_check_interval_ms: int = Field(3_600_000, ge=1)
    super_users: str = ""
    allow_everyone_if_no_acl_found: bool = False
    ssl_principal_mapping_rules: str = "DEFAULT"
    # service keys
    http_listeners: str = "http://127.0.0.1:8080"
    # A broker's listeners (SASL_SSL://:9093,...) are not kts's: read only when every entry is an http(s) URL,
    # as kts's own key before http.listeners existed (deprecated; see _listener_key).
    listeners: str | None = None
    audit_db_url: str = "sqlite:///./kts-audit.db"
    audit_db_auto_migrate: bool = True
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    ssl_cafile: Path | None = None
    ssl_client_auth: Literal["none", "requested", "required"] = "none"
    token_create_for_super_users: bool = False  # a token authenticates as its owner: a super user's power
    service_id: str = Field(default_factory=socket.gethostname, min_length=1, max_length=255)
    log_format: Literal["json", "text"] | None = None  # unset: json for `kts serve`, text for `kts dev`
    # Bulk revocation when kts removes what let a token be made (as in Kafka, off by default):
    token_revoke_on_credential_delete: bool = False  # a user left without SCRAM credentials loses its tokens
    token_revoke_on_acl_delete: bool = False  # a requester loses the tokens a removed CreateTokens grant allowed
    metrics_auth_required: bool = False  # true: /metrics needs Describe on the cluster
    # HTTP server limits (app/cli/server/uvicorn_h11.py): slow or greedy clients cannot hold the server
    http_request_timeout_ms: int = Field(10_000, ge=100, le=600_000)  # a whole request, headers and body
    http_keepalive_timeout_ms: int = Field(5_000, ge=100, le=600_000)  # an idle kept-alive connection
    http_max_connections: int = Field(1_000, ge=1)  # open at once; beyond it requests get 503
    http_max_connections_per_address: int = Field(100, ge=1)  # open at once from one address (IPv6: its /64)
    http_tls_handshake_timeout_ms: int = Field(5_000, ge=100, le=600_000)  # from accept to a finished handshake
    # Peers whose X-Forwarded-For and X-Forwarded-Proto are believed (addresses, CIDR networks); none by default
    http_trusted_proxies: str = ""
    # A listener for /healthz, /readyz and /metrics only, outside http.max.connections (app/api/management.py)
    http_management_listeners: str | None = None
    # brute-force defence (app/domain/throttle.py); auth.failures.max=0 turns it off
    auth_failures_max: int = Field(10, ge=0)  # per claimed principal and per (principal, client address)
    auth_failures_address_max: int = Field(100, ge=1)  # per client address, whatever it claims
    auth_failures_window_ms: int = Field(60_000, ge=1)
    auth_throttle_max_keys: int = Field(100_000, ge=1)
    # workload JWTs (Kafka's OAUTHBEARER validation keys, KIP-768; app/auth/workload_jwt.py): on when the URL is set
    sasl_oauthbearer_jwks_endpoint_url: str | None = None
    sasl_oauthbearer_jwks_endpoint_refresh_ms: int = Field(3_600_000, ge=1_000)
    sasl_oauthbearer_jwks_endpoint_cafile: Path | None = None  # kts key: the CAs of an https:// endpoint
    sasl_oauthbearer_expected_issuer: str | None = None
    sasl_oauthbearer_expected_audience: str = ""  # a comma-separated list, as Kafka reads it
    sasl_oauthbearer_sub_claim_name: str = Field("sub", min_length=1)
    sasl_oauthbearer_clock_skew_seconds: int = Field(30, ge=0, le=3_600)
    sasl_oauthbearer_principal_prefix: str = ""  # kts key: JWT callers are User:<prefix><sub>
    sasl_oauthbearer_max_lifetime_seconds: int = Field(DEFAULT_JWT_MAX_LIFETIME_S, ge=1)  # kts key: exp - iat
    # per-user token quotas (app/domain/token_quota.py): live tokens, 0 = no limit
    token_quota_per_owner: int = 500
    token_quota_per_requester: int = 5000  # tokens one principal holds for other owners
    token_quota_exempt_super_users: bool = False
    # per-account lockout shared by every replica (app/domain/lockout.py); auth.lockout.threshold=0 turns it off
    auth_lockout_threshold: int = Field(10, ge=0, le=1_000_000)
    auth_lockout_window_ms: int = Field(900_000, ge=1)
    auth_lockout_duration_ms: int = Field(900_000, ge=1)
    # addresses and CIDR networks from which super users' accounts are never locked (none by default: the
    # operators' way in is `kts lockout release`, app/cli/lockout.py); the throttle applies to them all the same
    auth_lockout_exempt_addresses: str = ""
    auth_lockout_cleanup_interval_ms: int = Field(60_000, ge=100, le=86_400_000)  # the leader deletes ended locks
    # audit rows older than this many days are deleted by the leader (unset: kept for ever)
    audit_retention_days: int | None = Field(None, ge=1, le=36_500)
    # Every backend's group, in the composition root's order, each built and checked at load.
    _groups: tuple[BackendGroup, ...] = PrivateAttr(default=())
    _listener_key_used: str = PrivateAttr(default="http.listeners")

    @model_validator(mode="after")
    def _one_cluster(self) -> Settings:
        """Builds every backend's group from its keys (a bad value refuses the start, one line naming the key)
        and checks that one chooses the cluster."""
        load = _loading.get() or _Load()
        groups = []
        for backend in load.backends:
            try:
                groups.append(backend.model_validate(load.group_values(backend)))
            except ValidationError as exc:
                raise ValueError(describe_validation_error(exc)) from None
        self._groups = tuple(groups)
        if not any(group.selected for group in groups):
            raise ValueError(_no_cluster(load.backends))
        return self

    @property
    def cluster(self) -> BackendGroup:
        """The group of the backend in use: the first whose keys choose it."""
        return next(group for group in self._groups if group.selected)

    @property
    def backend(self) -> str:
        """Where kts reads and writes the cluster's tokens, ACLs and users (``zookeeper``, ``kafka``): the first
        backend, in the composition root's order, whose key is set."""
        return self.cluster.name

    def group(self, backend: type[Group]) -> Group:
        """The group of ``backend``, the one in use; ConfigError naming its key when another is in use."""
        found = self.cluster
        if not isinstance(found, backend):
            raise ConfigError(f"{property_key(backend.selector)}: missing")
        return found

    @field_validator("token_quota_per_owner", "token_quota_per_requester", mode="before")
    @classmethod
    def _quota(cls, value: object) -> object:
        if isinstance(value, bool | float) or (isinstance(value, str) and not re.fullmatch(r"\s*\d+\s*", value)):
            raise ValueError(f"{value!r} is not a whole number of tokens, 0 (no limit) or more")
        if isinstance(value, int) and value < 0:
            raise ValueError(f"{value} is not a whole number of tokens, 0 (no limit) or more")
        return value

    @field_validator("http_trusted_proxies")
    @classmethod
    def _trusted_proxies(cls, value: str) -> str:
        for entry in _entries(value):
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not an IP address or CIDR network") from None
        return value

    @property
    def trusted_proxies(self) -> list[str]:
        """``http.trusted.proxies`` as uvicorn's ``forwarded_allow_ips`` takes it."""
        return _entries(self.http_trusted_proxies)

    @field_validator("auth_lockout_exempt_addresses")
    @classmethod
    def _exempt_addresses(cls, value: str) -> str:
        ExemptAddresses.parse(value)  # raises ValueError naming the bad entry
        return value

    @property
    def lockout_exempt_addresses(self) -> ExemptAddresses:
        return ExemptAddresses.parse(self.auth_lockout_exempt_addresses)

    @field_validator("super_users")
    @classmethod
    def _principals(cls, value: str) -> str:
        for item in filter(None, (part.strip() for part in value.split(";"))):
            try:
                KafkaPrincipal.parse(item)
            except InvalidPrincipal as exc:
                raise ValueError(f"{item!r} is not a principal: {exc.message}") from None
        return value

    @field_validator("ssl_principal_mapping_rules")
    @classmethod
    def _mapping_rules(cls, value: str) -> str:
        SslPrincipalMapper.from_rules(value)  # raises ValueError naming the bad rule
        return value

    @field_validator("audit_db_url")
    @classmethod
    def _database_url(cls, value: str) -> str:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            backend = make_url(value).get_backend_name()
        except ArgumentError:
            raise ValueError("is not a database URL such as sqlite:///kts-audit.db or postgresql://...") from None
        if backend not in ("sqlite", "postgresql"):
            raise ValueError("must name an SQLite or PostgreSQL database")
        return value

    @field_validator("http_listeners")
    @classmethod
    def _listener(cls, value: str) -> str:
        return _one_listener_url(value)

    @model_validator(mode="after")
    def _listener_key(self) -> Settings:
        """Which key names the listener: http.listeners when given, else a ``listeners`` of http(s) URLs only."""
        if "http_listeners" not in self.model_fields_set and self.listeners is not None:
            if is_http_listener_list(self.listeners):
                try:
                    self.http_listeners = _one_listener_url(self.listeners)
                except ValueError as exc:
                    raise ValueError(f"listeners: {exc}") from None
                self._listener_key_used = "listeners"
        return self

    @field_validator("sasl_oauthbearer_jwks_endpoint_url")
    @classmethod
    def _jwks_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        # Imported only once a URL is given: PyJWT and cryptography's key types cost a replica without JWTs
        # start-up time for nothing (the validator also runs for an unset URL).
        from app.auth.jwks import jwks_url_problem

        problem = jwks_url_problem(value.strip())
        if problem is not None:
            raise ValueError(problem)
        return value.strip()

    @field_validator("sasl_oauthbearer_principal_prefix")
    @classmethod
    def _jwt_prefix(cls, value: str) -> str:
        if not value:
            return value
        from app.auth.workload_jwt import subject_problem  # as above: PyJWT only once there is something to check

        if (problem := subject_problem(value)) is not None:
            raise ValueError(f'{problem}: a prefix such as jwt: may hold no whitespace, control characters or ;,"\\*')
        return value

    @field_validator("http_management_listeners")
    @classmethod
    def _management_listener(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        return _one_listener_url(value, "http://0.0.0.0:9090 or https://0.0.0.0:9443")

    @field_validator("sasl_oauthbearer_jwks_endpoint_cafile")
    @classmethod
    def _jwks_cafile(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"{value} is not a readable file")
        return value

    @property
    def jwt_audiences(self) -> tuple[str, ...]:
        return tuple(part.strip() for part in self.sasl_oauthbearer_expected_audience.split(",") if part.strip())

    @model_validator(mode="after")
    def _secret_and_tls(self) -> Settings:
        if not self.secret_key:
            raise ValueError(
                "delegation.token.secret.key: missing or empty "
                "(set it, or KTS_DELEGATION_TOKEN_SECRET_KEY, to the brokers' secret)"
            )
        if self.listener_scheme == "https" and not (self.ssl_certfile and self.ssl_keyfile):
            raise ValueError(f"{self._listener_key_used}: an https listener needs ssl.certfile and ssl.keyfile")
        if self.ssl_client_auth != "none" and self.listener_scheme == "http" and self._brokers_listeners:
            # The brokers' setting for their SSL listeners (the file is a server.properties): not about kts's.
            self.ssl_client_auth = "none"
        if self.management_scheme == "https" and not (self.ssl_certfile and self.ssl_keyfile):
            raise ValueError("http.management.listeners: an https listener needs ssl.certfile and ssl.keyfile")
        if self.http_management_listeners is not None and self.management_port == self.listener_port:
            raise ValueError(
                f"http.management.listeners: port {self.listener_port} is {self._listener_key_used}'s; choose another"
            )
        if self.ssl_client_auth != "none" and (self.listener_scheme != "https" or not self.ssl_cafile):
            raise ValueError("ssl.client.auth: client certificates need an https listener and ssl.cafile")
        for key in ("ssl_certfile", "ssl_keyfile", "ssl_cafile"):
            path = getattr(self, key)
            if path is not None and not path.is_file():
                raise ValueError(f"{property_key(key)}: {path} is not a readable file")
        return self

    @model_validator(mode="after")
    def _derived(self) -> Settings:
        """Each group's keys read together (its client security), last, as they always were."""
        in_use = self.cluster
        for group in self._groups:
            group.derive(group is in_use)
        return self

    @property
    def secret_key(self) -> str:
        """``delegation.token.secret.key``; the pre-2.8 name only when the new one is absent (as Kafka reads
        them: an empty secret key disables tokens even if the old name is set)."""
        chosen = self.delegation_token_secret_key
        if chosen is None:
            chosen = self.delegation_token_master_key
        return "" if chosen is None else chosen.get_secret_value()

    @property
    def token_secret(self) -> TokenSecret:
        """The secret of every token's HMAC (``secret_key``), whose repr never shows it."""
        return TokenSecret(self.secret_key)

    @property
    def super_user_principals(self) -> list[KafkaPrincipal]:
        return [KafkaPrincipal.parse(p.strip()) for p in self.super_users.split(";") if p.strip()]

    @property
    def listener_scheme(self) -> str:
        return urlsplit(self.http_listeners).scheme

    @property
    def listener_host(self) -> str:
        return urlsplit(self.http_listeners).hostname or "127.0.0.1"

    @property
    def listener_port(self) -> int:
        parts = urlsplit(self.http_listeners)
        return parts.port or (443 if parts.scheme == "https" else 80)

    @property
    def management_scheme(self) -> str | None:
        return None if self.http_management_listeners is None else urlsplit(self.http_management_listeners).scheme

    @property
    def management_host(self) -> str:
        return urlsplit(self.http_management_listeners or "").hostname or "127.0.0.1"

    @property
    def management_port(self) -> int:
        parts = urlsplit(self.http_management_listeners or "")
        return parts.port or (443 if parts.scheme == "https" else 80)

    @property
    def _brokers_listeners(self) -> bool:
        """Whether ``listeners`` is a broker's (``SASL_SSL://:9093``...), i.e. the file is a server.properties."""
        return self.listeners is not None and not is_http_listener_list(self.listeners)

    @property
    def listeners_deprecation(self) -> str | None:
        """The start-up warning when kts took its listener from the broker's key ``listeners``; else None."""
        if self._listener_key_used != "listeners":
            return None
        return (
            "listeners: kts reads its HTTP listener from http.listeners (KTS_HTTP_LISTENERS) now; listeners is "
            "the brokers' key and will stop being read as kts's. Rename it to http.listeners."
        )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, _PropertiesFile(settings_cls, _loading.get() or _Load())


# What the current load reads. pydantic-settings builds its sources from the class, so the file's values and
# the backends' groups reach the source and the validators through a context variable (safe across threads and
# tasks).
_loading: ContextVar[_Load | None] = ContextVar("kts_settings_load", default=None)


def _no_cluster(backends: Sequence[type[BackendGroup]]) -> str:
    """The one line when no backend's key is set: the first's key, and the others' as alternatives."""
    if not backends:
        return "no cluster backend: the composition root gives the backends' settings groups"
    first, *others = backends
    alternatives = "".join(f", or {property_key(other.selector)} for {other.purpose}" for other in others)
    variables = " / ".join(env_name(backend.selector) for backend in backends)
    return f"{property_key(first.selector)}: missing (set it{alternatives}, in the properties file or as {variables})"


def allow_everyone_warning(settings: Settings) -> str | None:
    """What ``allow.everyone.if.no.acl.found=true`` lets in, for the log at start; None when it is off."""
    if not settings.allow_everyone_if_no_acl_found:
        return None
    return (
        "allow.everyone.if.no.acl.found=true: any authenticated user may do anything on a resource that has no "
        "ACL, e.g. with no ACL on Cluster:kafka-cluster manage SCRAM credentials (a super user's password "
        "included) and ACLs, and with no ACL on User:<name> create tokens that authenticate as that user."
    )


def jwt_super_user_warnings(settings: Settings) -> list[str]:
    """One start-up warning per ``super.users`` entry a JWT could authenticate as: JWT logins on, no
    ``sasl.oauthbearer.principal.prefix``, and a ``User:`` principal."""
    if settings.sasl_oauthbearer_jwks_endpoint_url is None or settings.sasl_oauthbearer_principal_prefix:
        return []
    claim = settings.sasl_oauthbearer_sub_claim_name
    return [
        f"super.users: {principal} is also what a JWT whose {claim} is {principal.name!r} authenticates as, so "
        "whoever the JWT issuer names so is a super user; set sasl.oauthbearer.principal.prefix (e.g. jwt:) to give "
        "JWT callers principals of their own"
        for principal in settings.super_user_principals
        if principal.is_user
    ]


def setting_fields(backends: Sequence[type[BackendGroup]]) -> dict[str, FieldInfo]:
    """Every key kts reads (``zookeeper_connect``: a key's name with ``_`` for ``.``) and its field: the service's
    and each backend's."""
    return dict(Settings.model_fields) | {
        name: info for name, info in group_fields(backends).items() if name not in Settings.model_fields
    }


def read_settings(config_file: Path | None, backends: Sequence[type[BackendGroup]], **overrides: Any) -> Settings:
    """Build settings, with each of ``backends``' groups, from the file, the environment and explicit overrides
    (keyed like the fields: ``zookeeper_connect=...``), or raise ConfigError. A key of the file that is neither
    kts's nor Kafka's but a likely misspelling of a kts key refuses the start (app/config_names/typos.py)."""
    if config_file is not None and not config_file.is_file():
        raise ConfigError(f"configuration file {config_file} does not exist")
    file_values: dict[str, str] = {}
    if config_file is not None:
        try:
            file_values = read_properties(config_file)
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read configuration file {config_file}: {exc}") from None
        keys = [property_key(name) for name in setting_fields(backends)]
        for key in file_values:
            if (intended := likely_intended(key, keys)) is not None:
                raise ConfigError(f"{key}: not a kts or Kafka key; did you mean {intended}?")
    reset = _loading.set(_Load(tuple(backends), file_values, overrides))
    try:
        return Settings(**overrides)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read configuration file {config_file}: {exc}") from None
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc)) from None
    finally:
        _loading.reset(reset)


def describe_validation_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    location = [str(part) for part in first.get("loc", ()) if part != "__root__"]
    message = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
    if not location:
        return message
    field = location[0]
    if first.get("type") == "missing":
        return f"{property_key(field)}: missing (set it in the properties file or as {env_name(field)})"
    return f"{property_key(field)}: {message}"
