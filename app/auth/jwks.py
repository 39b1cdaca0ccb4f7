"""The keys that sign workload JWTs: the JWK set at ``sasl.oauthbearer.jwks.endpoint.url``, fetched and cached.

The URL is ``https://`` (verified against the system CAs, or ``sasl.oauthbearer.jwks.endpoint.cafile``) or
``file:`` (a JWK set mounted from a ConfigMap, say). The cache, with R = ``sasl.oauthbearer.jwks.endpoint.refresh.ms``:

- keys fetched less than R ago are used as they are;
- older keys are refetched at the next JWT login that needs them; while the endpoint cannot be fetched they keep
  serving until they are 2R old, when they leave the cache and JWT logins get 503 until it answers again;
- a ``kid`` the cached keys lack triggers one refetch, so a key the issuer has just rotated in is found at once;
- fetches are at most one every ``MIN_FETCH_INTERVAL_MS``, one at a time: JWTs naming random ``kid`` values, or
  logins while the endpoint is down, cannot turn into a stream of fetches, and no login waits for another's fetch.

Only asymmetric signing keys are kept (RSA, EC P-256/384/521, Ed25519): an ``oct`` key or a key whose ``alg`` is
not allowed is skipped, so no JWT can be checked with an HMAC whose secret is the public key.
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

from jwt import PyJWK
from jwt.exceptions import PyJWTError

from app.domain.clock import Clock
from app.domain.errors import StoreUnavailable

log = logging.getLogger(__name__)

ALLOWED_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
_RSA_ALGORITHMS = frozenset(a for a in ALLOWED_ALGORITHMS if a[:2] in ("RS", "PS"))
_EC_ALGORITHMS = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}
MIN_FETCH_INTERVAL_MS = 10_000
FETCH_TIMEOUT_S = 10.0
MAX_JWKS_BYTES = 1024 * 1024  # a JWK set is a few KiB; a larger answer is not one
KEYS_UNAVAILABLE = "The keys that sign JWTs cannot be fetched now; retry later."


class JwksFetchFailed(Exception):
    """The JWK set could not be fetched or holds no usable key; the message says why (for the log)."""


@dataclass(frozen=True, slots=True)
class SigningKey:
    kid: str | None
    key: Any  # a cryptography public key object
    algorithms: frozenset[str]  # the JWT algorithms this key may verify


def jwks_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a JWKS endpoint, or None: ``https://host/...`` or ``file:/path``."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return None
    if parts.scheme == "file" and parts.path:
        if parts.netloc not in ("", "localhost"):
            return "a file: URL must name a local path, e.g. file:///etc/kts/jwks.json"
        if not Path(url2pathname(parts.path)).is_file():
            return f"{url2pathname(parts.path)} is not a readable file"
        return None
    return "must be an https:// URL or a file: URL of a JWK set"


def parse_jwks(document: bytes) -> tuple[SigningKey, ...]:
    """The usable signing keys of a JWK set document (RFC 7517); JwksFetchFailed when there is none."""
    try:
        keys = json.loads(document)["keys"]
    except (ValueError, TypeError, KeyError):
        raise JwksFetchFailed("the answer is not a JWK set (a JSON object with a keys list)") from None
    if not isinstance(keys, list):
        raise JwksFetchFailed("the answer is not a JWK set (keys is not a list)")
    usable = tuple(key for key in map(_signing_key, keys) if key is not None)
    if not usable:
        raise JwksFetchFailed("the JWK set holds no usable signing key (RSA, EC or Ed25519)")
    return usable


def _signing_key(jwk: object) -> SigningKey | None:
    if not isinstance(jwk, dict) or jwk.get("use", "sig") != "sig" or jwk.get("kty") not in ("RSA", "EC", "OKP"):
        return None
    declared = jwk.get("alg")
    if declared is not None and declared not in ALLOWED_ALGORITHMS:
        return None
    try:
        parsed = PyJWK(jwk)
    except PyJWTError:
        return None
    if declared is not None:
        algorithms = frozenset({declared})
    elif jwk["kty"] == "RSA":
        algorithms = _RSA_ALGORITHMS
    elif jwk["kty"] == "EC" and jwk.get("crv") in _EC_ALGORITHMS:
        algorithms = frozenset({_EC_ALGORITHMS[jwk["crv"]]})
    elif jwk["kty"] == "OKP" and jwk.get("crv") == "Ed25519":
        algorithms = frozenset({"EdDSA"})
    else:
        return None
    kid = jwk.get("kid")
    return SigningKey(kid if isinstance(kid, str) else None, parsed.key, algorithms)


def fetcher(url: str, ssl_context: ssl.SSLContext | None = None) -> Callable[[], bytes]:
    """Reads the JWK set document at ``url`` (JwksFetchFailed when it cannot)."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        path = Path(url2pathname(parts.path))

        def read_file() -> bytes:
            try:
                with path.open("rb") as handle:
                    return handle.read(MAX_JWKS_BYTES + 1)
            except OSError as exc:
                raise JwksFetchFailed(f"cannot read {path}: {exc.strerror or exc}") from None

        return read_file

    def get() -> bytes:
        import httpx  # here, not at the top: only a replica with a JWKS URL needs it (about 5 MB and 0.2 s)

        try:
            with httpx.Client(verify=ssl_context or True, timeout=FETCH_TIMEOUT_S, follow_redirects=False) as client:
                with client.stream("GET", url, headers={"Accept": "application/json"}) as response:
                    if response.status_code != 200:
                        raise JwksFetchFailed(f"HTTP {response.status_code}")
                    body = b""
                    for chunk in response.iter_bytes():
                        body += chunk
                        if len(body) > MAX_JWKS_BYTES:
                            break
                    return body
        except httpx.HTTPError as exc:
            raise JwksFetchFailed(str(exc) or type(exc).__name__) from None

    return get


class JwksKeys:
    """The cached keys of one JWKS endpoint (see the module docstring); thread-safe."""

    def __init__(self, url: str, fetch: Callable[[], bytes], *, refresh_ms: int, clock: Clock) -> None:
        self._url = url
        self._fetch = fetch
        self._refresh_ms = refresh_ms
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: tuple[SigningKey, ...] = ()
        self._fetched_ms: int | None = None  # when the cached keys were fetched
        self._attempted_ms: int | None = None  # when the last fetch was tried, whatever came of it
        self._failing = False  # whether the last fetch failed

    def keys_for(self, kid: str | None) -> tuple[SigningKey, ...]:
        """The keys that may have signed a JWT naming ``kid`` (every key without one); empty when none does,
        even after a refetch. StoreUnavailable when the endpoint cannot be fetched and no keys are cached.

        The request that takes a due fetch makes it (outside the lock); the others meanwhile answer from the
        cache at once rather than wait, so a slow endpoint holds one request at a time, never the thread pool."""
        now = self._clock.now_ms()
        with self._lock:
            stale = self._fetched_ms is None or now - self._fetched_ms >= self._refresh_ms
            unknown = kid is not None and not _matching(self._keys, kid)  # a key rotated in since the last fetch?
            fetch = (stale or unknown) and (
                self._attempted_ms is None or now - self._attempted_ms >= MIN_FETCH_INTERVAL_MS
            )
            if fetch:
                self._attempted_ms = now  # taken: concurrent requests do not fetch too
        if fetch:
            self._refresh(now)
        with self._lock:
            if self._fetched_ms is None or now - self._fetched_ms >= 2 * self._refresh_ms:
                raise StoreUnavailable(KEYS_UNAVAILABLE)
            if kid is None:
                return self._keys
            matching = _matching(self._keys, kid)
            if not matching and self._failing:  # perhaps a key the endpoint would have given: cannot tell now
                raise StoreUnavailable(KEYS_UNAVAILABLE)
            return matching

    def _refresh(self, now: int) -> None:
        try:
            document = self._fetch()
            if len(document) > MAX_JWKS_BYTES:
                raise JwksFetchFailed(f"the answer is larger than {MAX_JWKS_BYTES} bytes")
            keys = parse_jwks(document)
        except JwksFetchFailed as exc:
            log.warning("cannot fetch the JWT signing keys from %s: %s", self._url, exc)
            with self._lock:
                self._failing = True
            return
        with self._lock:
            if {key.kid for key in keys} != {key.kid for key in self._keys}:
                log.info("JWT signing keys from %s: %s", self._url, ", ".join(sorted(str(key.kid) for key in keys)))
            self._failing = False
            self._keys = keys
            self._fetched_ms = now


def _matching(keys: tuple[SigningKey, ...], kid: str) -> tuple[SigningKey, ...]:
    return tuple(key for key in keys if key.kid == kid)
