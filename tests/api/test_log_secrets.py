"""No log line ever holds a password, an HMAC or the secret key: logins, verifications, renewals and
credential changes that succeed and fail, logged at DEBUG through the JSON formatter ``kts serve`` uses."""

from __future__ import annotations

import base64
import io
import logging
from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.cli.server.logging_config import JsonFormatter
from tests.api.conftest import ADMIN, ALICE, basic, bearer, put_user
from tests.conftest import SECRET

pytestmark = pytest.mark.only_on("zookeeper", "puts users as znodes and logs ZooKeeper's client at DEBUG")

WRONG_PASSWORD = "Wrong-Password-7731"
NEW_PASSWORD = "Fresh-Password-5519"


@pytest.fixture
def log_output(caplog: pytest.LogCaptureFixture) -> Iterator[io.StringIO]:
    """Everything logged during the test, formatted as ``kts serve`` formats it."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.WARNING, logger="kazoo")  # as kts serve runs it
    logging.getLogger().addHandler(handler)
    try:
        yield stream
    finally:
        logging.getLogger().removeHandler(handler)


def test_no_secret_reaches_a_log_line(
    make_client: Callable[..., TestClient], raw_zk: KazooClient, log_output: io.StringIO
) -> None:
    for name, password in (ADMIN, ALICE):
        put_user(raw_zk, name, password)
    client = make_client()  # start-up is logged too
    token = client.post("/v1/tokens", json={}, headers=basic(ALICE)).json()
    forged = base64.b64encode(b"\x01" * 64).decode()

    def verify(mac: str) -> int:
        body = {"tokenId": token["tokenId"], "hmac": mac}
        return client.post("/v1/tokens/verify", json=body, headers=basic(ALICE)).status_code

    assert verify(token["hmac"]) == 200
    assert verify(forged) == 401
    assert client.get("/v1/tokens", headers=bearer({**token, "hmac": forged})).status_code == 401
    assert client.get("/v1/tokens", headers=bearer(token)).status_code == 200
    assert client.get("/v1/tokens", headers=basic((ALICE[0], WRONG_PASSWORD))).status_code == 401
    assert client.post("/v1/tokens/renew", json={"hmac": forged}, headers=basic(ALICE)).status_code == 404
    assert client.post("/v1/tokens/renew", json={"hmac": token["hmac"]}, headers=basic(ALICE)).status_code == 200
    assert client.post("/v1/tokens/expire", json={"hmac": token["hmac"]}, headers=bearer(token)).status_code == 403
    changed = client.put(
        "/v1/users/alice/credentials",
        json={"mechanism": "SCRAM-SHA-512", "password": NEW_PASSWORD},
        headers=basic(ADMIN),
    )
    assert changed.status_code == 200

    output = log_output.getvalue()
    assert output.strip(), "nothing was logged: the check below would prove nothing"
    for secret in (token["hmac"], forged, ALICE[1], ADMIN[1], WRONG_PASSWORD, NEW_PASSWORD, SECRET):
        assert secret not in output
