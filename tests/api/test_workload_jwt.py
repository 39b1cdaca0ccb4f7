"""Workload JWTs over HTTP on the real app and a real ZooKeeper, with the JWK set served over HTTPS (a test CA)
or from a file: the KIP-373 story for a Kubernetes service account, every refusal (401 with its reason, audited),
a key rotated in, and the endpoint going down (cached keys serve, then 503 for JWTs only) and coming back."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kazoo.client import KazooClient

from app.api.app import create_app
from app.auth.authorization_header import MAX_JWT_LENGTH
from app.auth.jwks import MIN_FETCH_INTERVAL_MS
from app.backends import load_settings
from tests.api.conftest import ADMIN, ALICE, basic, put_user
from tests.conftest import SECRET
from tests.jwt_material import AUDIENCE, ISSUER, SPARK, JwksServer, JwtKey, claims_for, forge, jwks, jwks_server
from tests.unit.fakes import FakeClock

REFRESH_MS = 600_000
SIGNER = JwtKey.rsa("cluster-key-1")
ROTATED = JwtKey.ec("cluster-key-2", ec.SECP256R1())


@pytest.fixture
def server(tmp_path: Path) -> Iterator[JwksServer]:
    with jwks_server(tmp_path, SIGNER) as running:
        yield running


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def app_for(
    zk_connect: str, raw_zk: KazooClient, tmp_path: Path, clock: FakeClock
) -> Iterator[Callable[..., TestClient]]:
    for name, password in (ADMIN, ALICE):
        put_user(raw_zk, name, password)
    clients: list[TestClient] = []

    def make(url: str, **overrides: Any) -> TestClient:
        values: dict[str, Any] = {
            "zookeeper_connect": zk_connect,
            "delegation_token_secret_key": SECRET,
            "super_users": "User:admin",
            "service_id": "test",
            "audit_db_url": f"sqlite:///{tmp_path / 'audit.db'}",
            "auth_failures_max": 0,  # each refusal below is audited in full
            "sasl_oauthbearer_jwks_endpoint_url": url,
            "sasl_oauthbearer_expected_issuer": ISSUER,
            "sasl_oauthbearer_expected_audience": f"other,{AUDIENCE}",
            "sasl_oauthbearer_jwks_endpoint_refresh_ms": REFRESH_MS,
            **overrides,
        }
        client = TestClient(create_app(load_settings(**values), clock=clock), raise_server_exceptions=False)
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def client(app_for: Callable[..., TestClient], server: JwksServer) -> TestClient:
    return app_for(server.url, sasl_oauthbearer_jwks_endpoint_cafile=str(server.ca.path))


def jwt_header(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def user_acl(operation: str, *, principal: str, name: str) -> dict[str, str]:
    return {
        "resourceType": "User",
        "resourceName": name,
        "patternType": "LITERAL",
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permissionType": "Allow",
    }


def test_a_service_account_mints_for_itself_and_for_joe_only_once_granted(client: TestClient) -> None:
    spark = jwt_header(SIGNER.mint())
    own = client.post("/v1/tokens", json={}, headers=spark)
    assert own.status_code == 201, own.text
    assert (own.json()["owner"], own.json()["tokenRequester"]) == (f"User:{SPARK}", f"User:{SPARK}")

    refused = client.post("/v1/tokens", json={"owner": "User:joe"}, headers=spark)
    assert (refused.status_code, refused.json()["code"]) == (403, 65)

    acl = user_acl("CreateTokens", principal=f"User:{SPARK}", name="User:joe")
    assert client.post("/v1/acls", json=acl, headers=basic(ADMIN)).status_code == 201
    created = client.post("/v1/tokens", json={"owner": "User:joe", "renewers": [f"User:{SPARK}"]}, headers=spark)
    assert created.status_code == 201, created.text
    token = created.json()
    assert (token["owner"], token["tokenRequester"]) == ("User:joe", f"User:{SPARK}")
    # a full principal: it renews and expires what it may, as a password login would
    assert client.post("/v1/tokens/renew", json={"hmac": token["hmac"]}, headers=spark).status_code == 200
    assert client.post(f"/v1/tokens/{token['tokenId']}/expire", json={}, headers=spark).status_code == 200


def test_the_jwk_set_can_be_a_file(app_for: Callable[..., TestClient], tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(jwks(SIGNER)))
    client = app_for(path.as_uri())
    assert client.get("/v1/tokens", headers=jwt_header(SIGNER.mint())).status_code == 200


def _long_jwt() -> str:
    padded = SIGNER.mint(claims_for(padding="x" * MAX_JWT_LENGTH))
    assert len(padded) > MAX_JWT_LENGTH
    return padded


REFUSALS: list[tuple[str, Callable[[], str], str]] = [
    ("bad-signature", lambda: JwtKey.rsa(SIGNER.kid).mint(), "The JWT's signature does not verify."),
    ("alg-none", lambda: forge({"alg": "none", "kid": SIGNER.kid}, claims_for()), "algorithm is not accepted"),
    (
        "hs256-with-the-public-key",
        lambda: forge({"alg": "HS256", "kid": SIGNER.kid}, claims_for(), SIGNER.public_pem()),
        "signature algorithm is not accepted",
    ),
    ("unknown-kid", lambda: JwtKey.rsa("nobody-publishes-this").mint(), "kid names no key"),
    ("wrong-issuer", lambda: SIGNER.mint(iss="https://evil.example"), "not from the expected issuer"),
    ("wrong-audience", lambda: SIGNER.mint(aud="vault"), "not meant for this service"),
    ("expired", lambda: SIGNER.mint(lifetime_s=-60), "The JWT has expired."),
    ("not-yet-valid", lambda: SIGNER.mint(issued_s_ago=-3600), "not valid yet"),
    ("no-sub", lambda: SIGNER.mint(sub=None), "The JWT has no sub claim"),
    ("sub-wildcard", lambda: SIGNER.mint(sub="*"), "The JWT's sub claim is not a usable principal name."),
    ("sub-list", lambda: SIGNER.mint(sub="admin;User:ops"), "The JWT's sub claim is not a usable principal name."),
    (
        "lives-a-year",
        lambda: SIGNER.mint(lifetime_s=365 * 86_400),
        "The JWT lives longer than 86400 seconds (sasl.oauthbearer.max.lifetime.seconds).",
    ),
    ("too-long", _long_jwt, f"The JWT is longer than {MAX_JWT_LENGTH} characters."),
]


@pytest.mark.parametrize(("case", "make_token", "reason"), REFUSALS, ids=[case for case, _, _ in REFUSALS])
def test_each_refusal_is_401_with_its_reason_and_audited_as_a_failed_login(
    client: TestClient, case: str, make_token: Callable[[], str], reason: str
) -> None:
    token = make_token()
    refused = client.post("/v1/tokens", json={}, headers=jwt_header(token))
    assert refused.status_code == 401, refused.text
    assert refused.json()["error"] == "AUTHENTICATION_FAILED"
    assert reason in refused.json()["message"]
    assert refused.headers["WWW-Authenticate"].startswith("Basic")
    events = client.get("/v1/audit", params={"action": "authentication"}, headers=basic(ADMIN)).json()["events"]
    assert [event["outcome"] for event in events] == ["denied"]
    assert reason in events[0]["details"]["reason"]
    signature = token.split(".")[-1]
    assert not signature or signature not in json.dumps(events)


def test_sub_admin_is_the_super_user_unless_a_prefix_gives_jwts_a_namespace(
    app_for: Callable[..., TestClient], server: JwksServer
) -> None:
    """The attack: an issuer that names a workload ``admin`` (or whoever controls such a name there) makes a
    super user. With ``sasl.oauthbearer.principal.prefix=jwt:`` that JWT is ``User:jwt:admin``, an ordinary user."""
    cafile = str(server.ca.path)
    as_admin = jwt_header(SIGNER.mint(sub="admin"))
    unprefixed = app_for(server.url, sasl_oauthbearer_jwks_endpoint_cafile=cafile)
    assert unprefixed.get("/v1/audit", headers=as_admin).status_code == 200  # why kts warns at start

    prefixed = app_for(
        server.url, sasl_oauthbearer_jwks_endpoint_cafile=cafile, sasl_oauthbearer_principal_prefix="jwt:"
    )
    own = prefixed.post("/v1/tokens", json={}, headers=as_admin)
    assert own.status_code == 201, own.text
    assert own.json()["owner"] == "User:jwt:admin"
    assert prefixed.get("/v1/audit", headers=as_admin).status_code == 403
    refused = prefixed.post("/v1/tokens", json={"owner": "User:joe"}, headers=as_admin)
    assert (refused.status_code, refused.json()["code"]) == (403, 65)
    assert prefixed.get("/v1/audit", headers=basic(ADMIN)).status_code == 200  # the real admin is unaffected


def test_an_rsa_key_under_2048_bits_is_refused(app_for: Callable[..., TestClient], server: JwksServer) -> None:
    small = JwtKey.rsa("small", bits=1024)
    server.publish(SIGNER, small)
    client = app_for(server.url, sasl_oauthbearer_jwks_endpoint_cafile=str(server.ca.path))
    refused = client.get("/v1/tokens", headers=jwt_header(small.mint()))
    assert refused.status_code == 401
    assert refused.json()["message"] == "The JWT is signed with an RSA key under 2048 bits."


def test_a_key_rotated_in_is_found_by_one_refetch(client: TestClient, server: JwksServer, clock: FakeClock) -> None:
    assert client.get("/v1/tokens", headers=jwt_header(SIGNER.mint())).status_code == 200
    fetched = server.requests
    server.publish(SIGNER, ROTATED)
    clock.advance(MIN_FETCH_INTERVAL_MS)
    assert client.get("/v1/tokens", headers=jwt_header(ROTATED.mint())).status_code == 200
    assert server.requests == fetched + 1
    server.publish(ROTATED)  # the old key retired by the issuer: gone at the next refresh
    clock.advance(REFRESH_MS)
    assert client.get("/v1/tokens", headers=jwt_header(ROTATED.mint())).status_code == 200
    assert client.get("/v1/tokens", headers=jwt_header(SIGNER.mint())).status_code == 401


def test_the_endpoint_down_serves_cached_keys_then_503_for_jwts_only_and_back(
    client: TestClient, server: JwksServer, clock: FakeClock
) -> None:
    spark = jwt_header(SIGNER.mint())
    assert client.get("/v1/tokens", headers=spark).status_code == 200
    server.down = True
    clock.advance(REFRESH_MS)  # due for a refresh, which fails
    assert client.get("/v1/tokens", headers=spark).status_code == 200
    clock.advance(REFRESH_MS)  # the cached keys have left the cache
    unavailable = client.get("/v1/tokens", headers=spark)
    assert unavailable.status_code == 503
    assert unavailable.json()["message"] == "The keys that sign JWTs cannot be fetched now; retry later."
    assert "Retry-After" in unavailable.headers
    assert client.get("/v1/tokens", headers=basic(ALICE)).status_code == 200  # other schemes unaffected
    server.down = False
    clock.advance(MIN_FETCH_INTERVAL_MS)
    assert client.get("/v1/tokens", headers=spark).status_code == 200
    events = client.get("/v1/audit", params={"action": "authentication"}, headers=basic(ADMIN)).json()["events"]
    assert events == []  # an unavailable endpoint is no failed login


def test_an_untrusted_endpoint_certificate_is_an_unavailable_endpoint(
    app_for: Callable[..., TestClient], server: JwksServer
) -> None:
    client = app_for(server.url)  # the system CAs do not know the test CA
    assert client.get("/v1/tokens", headers=jwt_header(SIGNER.mint())).status_code == 503
    assert server.requests == 0


def test_without_a_jwks_url_a_jwt_is_refused_and_other_logins_work(
    app_for: Callable[..., TestClient],
) -> None:
    client = app_for(None)
    refused = client.get("/v1/tokens", headers=jwt_header(SIGNER.mint()))
    assert refused.status_code == 401
    assert "not enabled" in refused.json()["message"]
    assert client.get("/v1/tokens", headers=basic(ALICE)).status_code == 200


# -------------------- fuzzing the Bearer JWT scheme

_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.lists(st.text(max_size=10), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
_HEADERS = st.fixed_dictionaries(
    {},
    optional={
        "alg": st.one_of(st.sampled_from(["RS256", "none", "HS256", "ES256", "EdDSA", "PS512", "", "RS1"]), _VALUES),
        "kid": st.one_of(st.just(SIGNER.kid), _VALUES),
        "typ": _VALUES,
        "crit": _VALUES,
    },
)
_CLAIMS = st.fixed_dictionaries(
    {},
    optional={
        "sub": st.one_of(st.just(SPARK), _VALUES),
        "iss": st.one_of(st.just(ISSUER), _VALUES),
        "aud": st.one_of(st.just(AUDIENCE), _VALUES),
        # made at each draw: the module may be imported long before the test runs
        "exp": st.one_of(st.builds(lambda: claims_for()["exp"]), _VALUES),
        "iat": st.one_of(st.builds(lambda: claims_for()["iat"]), _VALUES),
        "nbf": _VALUES,
    },
)
_BASE64URL = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", max_size=60)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@st.composite
def bearer_jwts(draw: st.DrawFn) -> str:
    """JWT-shaped Bearer values: random parts, or JSON header and claims of any shape, some signed by the real key."""
    if draw(st.integers(0, 3)) == 0:
        return ".".join((draw(_BASE64URL), draw(_BASE64URL), draw(_BASE64URL)))
    header, claims = draw(_HEADERS), draw(_CLAIMS)
    signing_input = _b64url(json.dumps(header).encode()) + "." + _b64url(json.dumps(claims).encode())
    if draw(st.booleans()):  # signed by the published key, so the claims checks are reached
        signature = SIGNER.private.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    else:
        signature = draw(st.binary(max_size=300))
    return signing_input + "." + _b64url(signature)


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")  # the app's own use of random
@settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(token=bearer_jwts())
def test_any_jwt_shaped_bearer_value_is_answered_401_or_accepted_never_a_5xx(client: TestClient, token: str) -> None:
    response = client.get("/v1/tokens", headers=jwt_header(token))
    assert response.status_code in (200, 401), response.text
    if response.status_code == 401:
        assert response.json()["error"] == "AUTHENTICATION_FAILED"
        assert response.json()["message"].startswith(("The JWT", "A Bearer JWT", "Several keys"))


def test_the_fuzzer_reaches_acceptance_and_the_claims_checks(client: TestClient) -> None:
    """Positive control for the property above: a hand-made signed JWT of the generator's form is accepted."""
    header, claims = {"alg": "RS256", "kid": SIGNER.kid}, claims_for()
    signing_input = _b64url(json.dumps(header).encode()) + "." + _b64url(json.dumps(claims).encode())
    signature = SIGNER.private.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    assert client.get("/v1/tokens", headers=jwt_header(f"{signing_input}.{_b64url(signature)}")).status_code == 200


def test_failed_jwt_logins_are_throttled_like_failed_passwords(
    app_for: Callable[..., TestClient], server: JwksServer
) -> None:
    client = app_for(server.url, sasl_oauthbearer_jwks_endpoint_cafile=str(server.ca.path), auth_failures_max=2)
    forged = JwtKey.rsa(SIGNER.kid)  # claims the service account, signed by someone else
    for _ in range(2):
        assert client.get("/v1/tokens", headers=jwt_header(forged.mint())).status_code == 401
    throttled = client.get("/v1/tokens", headers=jwt_header(SIGNER.mint()))  # the same claimed subject
    assert throttled.status_code == 429
    assert "Retry-After" in throttled.headers
    assert client.get("/v1/tokens", headers=basic(ALICE)).status_code == 200  # another principal goes ahead
    events = client.get("/v1/audit", params={"action": "authentication"}, headers=basic(ADMIN)).json()["events"]
    assert events[0]["principal"] == f"User:{SPARK}"
