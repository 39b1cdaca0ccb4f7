"""Forwarded client addresses in a real ``kts serve``: X-Forwarded-For (and Forwarded) from loopback change nothing
by default, although uvicorn on its own believes X-Forwarded-For from 127.0.0.1; with ``http.trusted.proxies``
naming the proxy, its X-Forwarded-For is the client address the audit trail (and the lockout, the throttle and
host ACLs) see."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest
from kazoo.client import KazooClient

from tests.api.conftest import ADMIN, ALICE, basic, put_user
from tests.api.helpers import eventually
from tests.conftest import SECRET
from tests.e2e.conftest import start_kts

FORGED = "203.0.113.9"


@pytest.mark.parametrize(("trusted", "seen"), [(None, "127.0.0.1"), ("127.0.0.1", FORGED)], ids=["default", "set"])
def test_forwarded_addresses_count_only_from_trusted_proxies(
    trusted: str | None,
    seen: str,
    zk_connect: str,
    raw_zk: KazooClient,
    processes: list[subprocess.Popen[str]],
    tmp_path: Path,
) -> None:
    put_user(raw_zk, *ADMIN)
    put_user(raw_zk, *ALICE)
    extra = {} if trusted is None else {"KTS_HTTP_TRUSTED_PROXIES": trusted}
    url = start_kts(
        processes,
        tmp_path,
        "proxied",
        KTS_ZOOKEEPER_CONNECT=zk_connect,
        KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET,
        KTS_SUPER_USERS="User:admin",
        **extra,
    )
    forged = {"X-Forwarded-For": FORGED, "Forwarded": f"for={FORGED}"}
    with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.1"), timeout=30) as client:
        refused = client.get(f"{url}/v1/tokens", headers={**basic((ALICE[0], "wrong")), **forged})
    assert refused.status_code == 401
    addresses: list[str] = []

    def recorded() -> bool:
        events = httpx.get(
            f"{url}/v1/audit",
            params={"action": "authentication", "principal": "User:alice"},
            headers=basic(ADMIN),
            timeout=30,
        ).json()["events"]
        addresses[:] = [event["clientAddress"] for event in events]
        return bool(addresses)

    eventually(recorded, timeout_s=60)
    print(
        f"http.trusted.proxies={trusted or '(empty)'}: the failed login from 127.0.0.1 forwarding for {FORGED} "
        f"was audited from {addresses}"
    )
    assert addresses == [seen]
