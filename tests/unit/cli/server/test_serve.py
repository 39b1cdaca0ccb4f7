"""``kts serve``: which listeners get the plain-HTTP warning, the TLS policy, each listener's caps, forwarded
addresses and the open-file limit."""

from __future__ import annotations

import logging
import resource
import ssl
from pathlib import Path

import pytest
import uvicorn

from app.api.app import create_app
from app.backends import load_settings
from app.cli.server.serve import (
    DESCRIPTOR_RESERVE,
    MANAGEMENT_MAX_CONNECTIONS,
    management_options,
    plaintext_warning,
    raise_open_file_limit,
    serve,
    uvicorn_options,
)
from app.settings import ConfigError, Settings, allow_everyone_warning
from tests.conftest import SECRET
from tests.tls_material import CertificateAuthority


def _settings(listeners: str, **extra: object) -> Settings:
    return load_settings(
        zookeeper_connect="127.0.0.1:2181", delegation_token_secret_key=SECRET, http_listeners=listeners, **extra
    )


@pytest.mark.parametrize(
    "listeners",
    ["http://127.0.0.1:8080", "http://127.0.0.2:8080", "http://localhost:8080", "http://[::1]:8080"],
)
def test_loopback_http_is_quiet(listeners: str) -> None:
    assert plaintext_warning(_settings(listeners)) is None


@pytest.mark.parametrize(
    "listeners",
    ["http://0.0.0.0:8080", "http://[::]:8080", "http://192.0.2.10:8080", "http://kts.example.com:8080"],
)
def test_non_loopback_http_warns(listeners: str) -> None:
    warning = plaintext_warning(_settings(listeners))
    assert warning is not None
    assert "PLAINTEXT" in warning and "TLS-terminating" in warning and "https://" in warning


def test_https_never_warns(tmp_path: Path) -> None:
    server = CertificateAuthority(tmp_path).issue("server", server=True, CN="localhost")
    settings = _settings("https://0.0.0.0:8443", ssl_certfile=server.cert, ssl_keyfile=server.key)
    assert plaintext_warning(settings) is None


def test_the_https_context_is_hardened_and_uvicorn_does_no_tls_of_its_own(tmp_path: Path) -> None:
    """kts does the handshake itself, once the connection is counted (app/cli/server/uvicorn_h11.py)."""
    server = CertificateAuthority(tmp_path).issue("server", server=True, CN="localhost")
    settings = _settings(
        "https://127.0.0.1:8443", ssl_certfile=server.cert, ssl_keyfile=server.key, http_tls_handshake_timeout_ms=2500
    )
    options = uvicorn_options(settings)
    config = uvicorn.Config(create_app(settings), **options, log_config=None)
    config.load()
    assert config.ssl is None
    context = options["http"].tls
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2
    assert context.options & ssl.OP_NO_RENEGOTIATION
    tls12 = [cipher["name"] for cipher in context.get_ciphers() if cipher["protocol"] == "TLSv1.2"]
    assert tls12 and all(name.startswith("ECDHE-") for name in tls12)
    assert options["http"].tls_handshake_timeout_s == 2.5


def test_forwarded_headers_are_believed_only_from_http_trusted_proxies() -> None:
    default = _settings("http://127.0.0.1:8080", http_management_listeners="http://127.0.0.1:9090")
    assert uvicorn_options(default)["proxy_headers"] is False
    assert management_options(default)["proxy_headers"] is False
    trusting = _settings("http://127.0.0.1:8080", http_trusted_proxies="198.51.100.0/24, 127.0.0.1")
    assert uvicorn_options(trusting)["forwarded_allow_ips"] == ["198.51.100.0/24", "127.0.0.1"]
    assert uvicorn_options(trusting)["proxy_headers"] is True


@pytest.mark.parametrize("entry", ["*", "proxy.example.com", "198.51.100.0/33"])
def test_http_trusted_proxies_takes_addresses_and_networks_only(entry: str) -> None:
    with pytest.raises(ConfigError, match=r"http\.trusted\.proxies"):
        _settings("http://127.0.0.1:8080", http_trusted_proxies=entry)


@pytest.mark.parametrize("allow_everyone", [True, False])
def test_serve_logs_once_what_allow_everyone_if_no_acl_found_allows(
    allow_everyone: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(uvicorn.Server, "run", lambda self: None)  # everything up to the listening socket
    settings = _settings(
        "http://127.0.0.1:8080",
        allow_everyone_if_no_acl_found=allow_everyone,
        log_format="text",
        # serve() starts the runtime early, which opens the audit database: the default is in the working directory
        audit_db_url=f"sqlite:///{tmp_path / 'audit.db'}",
    )
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        serve(settings)  # logs to stdout (configure_logging)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    logged = capsys.readouterr().out
    expected = allow_everyone_warning(settings)
    if allow_everyone:
        assert expected is not None and "manage SCRAM credentials" in expected and "create tokens" in expected
        assert logged.count(expected) == 1
    else:
        assert expected is None
        assert "allow.everyone.if.no.acl.found" not in logged


def test_the_main_listener_caps_connections_itself_with_the_error_envelope() -> None:
    """uvicorn's limit_concurrency answers a bare-text 503: the cap is the protocol's (``max_connections``); the
    listener holds at most twice as many connections."""
    settings = _settings("http://127.0.0.1:8080", http_max_connections=7, http_max_connections_per_address=3)
    options = uvicorn_options(settings)
    assert "limit_concurrency" not in options
    assert options["http"].max_connections == 7
    assert (options["http"].slots.per_address, options["http"].slots.total) == (3, 14)


def test_the_management_listener_has_a_small_cap_a_share_of_its_own_and_the_main_tls(tmp_path: Path) -> None:
    server = CertificateAuthority(tmp_path).issue("server", server=True, CN="localhost")
    settings = _settings(
        "https://127.0.0.1:8443",
        ssl_certfile=server.cert,
        ssl_keyfile=server.key,
        http_management_listeners="https://127.0.0.1:9443",
    )
    main, management = uvicorn_options(settings), management_options(settings)
    assert management["http"].max_connections is None
    assert management["http"].slots is not main["http"].slots
    assert (management["http"].slots.per_address, management["http"].slots.total) == (16, MANAGEMENT_MAX_CONNECTIONS)
    assert management["http"].request_timeout_s == main["http"].request_timeout_s
    assert (management["lifespan"], management["access_log"]) == ("off", False)
    assert management["http"].tls.minimum_version == ssl.TLSVersion.TLSv1_2


@pytest.mark.parametrize("prefix", ["", "jwt:"])
def test_serve_warns_once_per_super_user_a_jwt_could_be(
    prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(uvicorn.Server, "run", lambda self: None)
    jwks = tmp_path / "jwks.json"
    jwks.write_text('{"keys": []}')
    settings = _settings(
        "http://127.0.0.1:8080",
        super_users="User:admin;User:ops",
        sasl_oauthbearer_jwks_endpoint_url=jwks.as_uri(),
        sasl_oauthbearer_principal_prefix=prefix,
        log_format="text",
        audit_db_url=f"sqlite:///{tmp_path / 'audit.db'}",  # not the default, in the working directory
    )
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        serve(settings)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    warned = [line for line in capsys.readouterr().out.splitlines() if "sasl.oauthbearer.principal.prefix" in line]
    if prefix:
        assert warned == []
    else:
        assert len(warned) == 2
        assert "super.users: User:admin is also what a JWT whose sub is 'admin'" in warned[0]
        assert "User:ops" in warned[1]


def test_the_open_file_limit_is_raised_for_the_caps_or_named() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
        assert raise_open_file_limit(_settings("http://127.0.0.1:8080", http_max_connections=100)) is None
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == 2 * 100 + DESCRIPTOR_RESERVE  # raised, not more
        if hard != resource.RLIM_INFINITY:
            over = _settings("http://127.0.0.1:8080", http_max_connections=hard)
            warning = raise_open_file_limit(over)
            assert warning is not None and "http.max.connections" in warning
            assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == hard
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
