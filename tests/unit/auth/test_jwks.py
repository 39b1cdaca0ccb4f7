"""The JWK set cache over a scripted endpoint and a fake clock: refresh, the refetch on an unknown kid (and its
rate limit), serving cached keys while the endpoint is down until they leave the cache, and coming back."""

from __future__ import annotations

import json
import threading

import pytest

from app.auth.jwks import KEYS_UNAVAILABLE, MIN_FETCH_INTERVAL_MS, JwksFetchFailed, JwksKeys, jwks_url_problem
from app.domain.errors import StoreUnavailable
from tests.jwt_material import JwtKey, jwks
from tests.unit.fakes import FakeClock

REFRESH_MS = 3_600_000
OLD = JwtKey.rsa("old")
NEW = JwtKey.ec("new")


class Endpoint:
    def __init__(self, *keys: JwtKey) -> None:
        self.document = json.dumps(jwks(*keys)).encode()
        self.down = False
        self.fetches = 0

    def publish(self, *keys: JwtKey) -> None:
        self.document = json.dumps(jwks(*keys)).encode()

    def __call__(self) -> bytes:
        self.fetches += 1
        if self.down:
            raise JwksFetchFailed("HTTP 503")
        return self.document


def cache(endpoint: Endpoint, clock: FakeClock) -> JwksKeys:
    return JwksKeys("https://issuer.example/jwks", endpoint, refresh_ms=REFRESH_MS, clock=clock)


def kids(keys: JwksKeys, kid: str | None) -> list[str | None]:
    return [key.kid for key in keys.keys_for(kid)]


def test_keys_are_fetched_once_and_reused_until_refresh_ms() -> None:
    endpoint, clock = Endpoint(OLD), FakeClock()
    keys = cache(endpoint, clock)
    assert kids(keys, "old") == ["old"]
    clock.advance(REFRESH_MS - 1)
    assert kids(keys, "old") == ["old"]
    assert endpoint.fetches == 1
    endpoint.publish(NEW)
    clock.advance(1)
    assert kids(keys, "new") == ["new"]
    assert endpoint.fetches == 2


def test_a_new_kid_is_fetched_at_once_then_refetches_are_rate_limited() -> None:
    endpoint, clock = Endpoint(OLD), FakeClock()
    keys = cache(endpoint, clock)
    assert kids(keys, "old") == ["old"]
    endpoint.publish(OLD, NEW)  # the issuer rotates a key in
    clock.advance(MIN_FETCH_INTERVAL_MS)
    assert kids(keys, "new") == ["new"]
    assert endpoint.fetches == 2
    for _ in range(5):  # random kids within the interval cost no fetch
        assert kids(keys, "random") == []
    assert endpoint.fetches == 2
    clock.advance(MIN_FETCH_INTERVAL_MS)
    assert kids(keys, "random") == []
    assert endpoint.fetches == 3  # positive control: past the interval, an unknown kid is fetched again
    assert kids(keys, "old") == ["old"]


def test_cached_keys_serve_while_the_endpoint_is_down_until_they_leave_the_cache() -> None:
    endpoint, clock = Endpoint(OLD), FakeClock()
    keys = cache(endpoint, clock)
    assert kids(keys, "old") == ["old"]
    endpoint.down = True
    clock.advance(REFRESH_MS)  # due for a refresh, which fails: the cached keys still serve
    assert kids(keys, "old") == ["old"]
    clock.advance(REFRESH_MS - 1)
    assert kids(keys, "old") == ["old"]
    clock.advance(1)  # 2 * refresh.ms old: gone from the cache
    with pytest.raises(StoreUnavailable, match=KEYS_UNAVAILABLE):
        keys.keys_for("old")
    endpoint.down = False
    with pytest.raises(StoreUnavailable):  # within the fetch interval of the last attempt: no fetch yet
        keys.keys_for("old")
    clock.advance(MIN_FETCH_INTERVAL_MS)
    assert kids(keys, "old") == ["old"]  # back


def test_an_unknown_kid_while_the_endpoint_is_down_is_unavailable_not_refused() -> None:
    endpoint, clock = Endpoint(OLD), FakeClock()
    keys = cache(endpoint, clock)
    assert kids(keys, "old") == ["old"]
    endpoint.down = True
    clock.advance(MIN_FETCH_INTERVAL_MS)
    with pytest.raises(StoreUnavailable):
        keys.keys_for("new")
    assert kids(keys, "old") == ["old"]  # known keys still serve


def test_no_keys_yet_and_the_endpoint_down_is_unavailable() -> None:
    endpoint, clock = Endpoint(OLD), FakeClock()
    endpoint.down = True
    with pytest.raises(StoreUnavailable):
        cache(endpoint, clock).keys_for("old")


@pytest.mark.parametrize(
    "document",
    [b"not json", b"[]", b'{"keys": {}}', b'{"keys": []}', b'{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}'],
)
def test_an_answer_that_is_not_a_usable_jwk_set_leaves_the_cache_as_it_was(document: bytes) -> None:
    endpoint, clock = Endpoint(OLD), FakeClock()
    keys = cache(endpoint, clock)
    assert kids(keys, "old") == ["old"]
    endpoint.document = document
    clock.advance(REFRESH_MS)
    assert kids(keys, "old") == ["old"]
    assert endpoint.fetches == 2


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://kubernetes.default.svc/openid/v1/jwks", None),
        ("http://issuer.example/jwks", "must be an https:// URL or a file: URL of a JWK set"),
        ("ftp://issuer.example/jwks", "must be an https:// URL or a file: URL of a JWK set"),
        ("https:///jwks", "must be an https:// URL or a file: URL of a JWK set"),
        ("file://remote-host/jwks.json", "a file: URL must name a local path, e.g. file:///etc/kts/jwks.json"),
        ("file:///nonexistent/jwks.json", "/nonexistent/jwks.json is not a readable file"),
    ],
)
def test_jwks_urls(url: str, problem: str | None) -> None:
    assert jwks_url_problem(url) == problem


def test_while_one_login_fetches_the_others_answer_from_the_cache_without_waiting() -> None:
    endpoint, clock = Endpoint(OLD), FakeClock()
    keys = cache(endpoint, clock)
    assert kids(keys, "old") == ["old"]
    entered, release = threading.Event(), threading.Event()

    def slow() -> bytes:
        entered.set()
        release.wait(60)
        return json.dumps(jwks(OLD, NEW)).encode()

    keys._fetch = slow
    clock.advance(REFRESH_MS)
    fetching = threading.Thread(target=keys.keys_for, args=("old",))
    fetching.start()
    try:
        assert entered.wait(60)
        assert kids(keys, "old") == ["old"]  # a waiting call would hang here until the fetch ends
        assert kids(keys, "new") == []
        assert fetching.is_alive()  # positive control: the fetch was still under way
    finally:
        release.set()
        fetching.join(60)
    assert kids(keys, "new") == ["new"]
