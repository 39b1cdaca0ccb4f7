"""Hostile bytes where the schema-driven fuzzer (test_fuzz.py) cannot put them: control characters, NUL, lone
surrogates and invalid UTF-8 in Basic credentials (inside and outside the base64), in Bearer token headers, and
in the describe and audit filters, sent as raw HTTP to a real ``kts serve`` auditing to PostgreSQL (which refuses
NUL in text). Nothing may get a 5xx; afterwards the service still serves and audits.

Requests are written on a socket byte for byte: an HTTP client library would refuse or re-encode most of these
headers before they left. Only CR and LF are kept out of header values (they would end the header, which is a
different request, not a hostile value). The run is derandomized.
"""

from __future__ import annotations

import base64
import os
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote_from_bytes

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kazoo.client import KazooClient

from tests.api.conftest import ADMIN, ALICE, basic, put_user
from tests.conftest import SECRET
from tests.e2e.conftest import start_kts
from tests.kafka.brokers import RunningBroker
from tests.postgres_server import PostgresServer

EXAMPLES = int(os.environ.get("KTS_FUZZ_EXAMPLES", "24")) * 4
FILTERS = (
    "/v1/tokens?owner=",
    "/v1/tokens?cursor=",
    "/v1/audit?principal=",
    "/v1/audit?tokenId=",
    "/v1/audit?action=",
    "/v1/audit?outcome=",
    "/v1/audit?cursor=",
    "/v1/acls?principal=",
    "/v1/acls?resourceName=",
)

# Text with every code point (controls, NUL, lone surrogates), encoded as Python can (surrogates as the
# invalid UTF-8 they would be on the wire), and raw bytes that are no UTF-8 at all.
hostile = st.one_of(
    st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None), max_size=24).map(
        lambda text: text.encode("utf-8", "surrogatepass")
    ),
    st.binary(max_size=24),
    st.sampled_from([b"\x00", b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"admin\x00", b"\x1b[2J", b"\x7f"]),
)
in_header = hostile.map(lambda value: value.replace(b"\r", b"").replace(b"\n", b""))


def _settings() -> settings:
    return settings(
        max_examples=EXAMPLES, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck)
    )


def _status(port: int, request: bytes) -> int:
    """The status code of the answer to ``request`` (0: the server closed the connection without one)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while b"\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                return 0
            answer += chunk
    return int(answer.split(b" ", 2)[1])


def _get(path: bytes, authorization: bytes | None) -> bytes:
    lines = [b"GET " + path + b" HTTP/1.1", b"Host: kts", b"Connection: close"]
    if authorization is not None:
        lines.append(b"Authorization: " + authorization)
    return b"\r\n".join(lines) + b"\r\n\r\n"


@dataclass(frozen=True)
class Target:
    port: int
    admin: tuple[str, str]
    alice: tuple[str, str]


@pytest.fixture(params=["zookeeper", "kraft"])
def target(
    request: pytest.FixtureRequest,
    postgres: PostgresServer,
    processes: list[subprocess.Popen[str]],
    tmp_path: Path,
) -> Target:
    """``kts serve`` on ZooKeeper, and on the real KRaft broker through the Kafka protocol (where a Basic login
    that the cache does not answer is a SCRAM exchange with the broker: hostile names and passwords reach it)."""
    common = {
        "KTS_DELEGATION_TOKEN_SECRET_KEY": SECRET,
        "KTS_AUDIT_DB_URL": postgres.create_database(),
        "KTS_AUTH_FAILURES_MAX": "0",  # every case comes from 127.0.0.1: the throttle would answer them all 429
    }
    if request.param == "zookeeper":
        raw_zk: KazooClient = request.getfixturevalue("raw_zk")
        for user in (ADMIN, ALICE):
            put_user(raw_zk, *user)
        settings = common | {
            "KTS_ZOOKEEPER_CONNECT": request.getfixturevalue("zk_connect"),
            "KTS_SUPER_USERS": "User:admin",
        }
        admin, alice = ADMIN, ALICE
    else:
        broker: RunningBroker = request.getfixturevalue("kafka_kraft_broker")
        made = broker.new_user("alice")
        admin, alice = (broker.admin.name, broker.admin.password), (made.name, made.password)
        settings = common | {
            "KTS_BOOTSTRAP_SERVERS": broker.bootstrap,
            "KTS_ADMIN_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "KTS_ADMIN_SASL_MECHANISM": "SCRAM-SHA-512",
            "KTS_ADMIN_SASL_JAAS_CONFIG": broker.kts_jaas,  # kts's own login, never a caller's
            "KTS_SUPER_USERS": f"User:{admin[0]}",
        }
    url = start_kts(processes, tmp_path, f"hostile-{request.param}", **settings)
    return Target(int(url.rsplit(":", 1)[1]), admin, alice)


def _statuses_are_never_5xx(port: int, admin_user: tuple[str, str]) -> list[int]:
    seen: list[int] = []

    def check(request: bytes) -> None:
        status = _status(port, request)
        seen.append(status)
        assert status < 500, request

    @_settings()
    @given(user=hostile, password=hostile)
    def basic_inside_base64(user: bytes, password: bytes) -> None:
        check(_get(b"/v1/tokens", b"Basic " + base64.b64encode(user + b":" + password)))

    @_settings()
    @given(scheme=st.sampled_from([b"Basic ", b"Bearer ", b"basic ", b""]), value=in_header)
    def raw_header(scheme: bytes, value: bytes) -> None:
        check(_get(b"/v1/tokens", scheme + value))

    @_settings()
    @given(token_id=in_header, mac=in_header)
    def bearer_pair(token_id: bytes, mac: bytes) -> None:
        check(_get(b"/v1/tokens", b"Bearer " + token_id + b":" + base64.b64encode(mac)))
        body = b'{"tokenId": "' + token_id.replace(b'"', b"") + b'", "hmac": "AAAA"}'
        check(
            b"POST /v1/tokens/verify HTTP/1.1\r\nHost: kts\r\nConnection: close\r\nContent-Type: application/json\r\n"
            + b"Authorization: Bearer "
            + token_id
            + b":AAAA\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body
        )

    admin = basic(admin_user)["Authorization"].encode()

    @_settings()
    @given(path=st.sampled_from(FILTERS), value=hostile)
    def filters(path: str, value: bytes) -> None:
        check(_get(path.encode() + quote_from_bytes(value, safe="").encode(), admin))

    for run in (basic_inside_base64, raw_header, bearer_pair, filters):
        run()
    return seen


def test_hostile_bytes_in_credentials_and_filters_never_get_a_5xx(target: Target) -> None:
    port = target.port
    seen = _statuses_are_never_5xx(port, target.admin)
    print(f"{len(seen)} hostile requests, statuses: {sorted(set(seen))}")
    assert {401, 422} <= set(seen)  # positive control: bad credentials and bad filters were told so
    url = f"http://127.0.0.1:{port}"
    assert httpx.get(f"{url}/readyz").status_code == 200
    assert httpx.get(f"{url}/v1/tokens", headers=basic(target.alice)).status_code == 200
    audit = httpx.get(f"{url}/v1/audit?action=authentication&limit=1000", headers=basic(target.admin))
    assert audit.status_code == 200
    assert any(event["outcome"] == "denied" for event in audit.json()["events"])
