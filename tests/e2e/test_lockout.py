"""The per-account lockout against two real ``kts serve`` replicas on one ZooKeeper, guessed at from many
loopback source addresses (127.0.0.x, each request from its own): a lock one replica publishes is honoured by
the other, at most ``threshold + replicas`` guesses are ever checked, the right password then gets 429, and a
super user's unlock lets the user in on both.

A guess was checked when it got 401 (a refused one gets 429 before any password hashing); the replicas'
audit rows of failed password checks say the same.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import httpx
import pytest
from kazoo.client import KazooClient

from tests.api.conftest import ADMIN, ALICE, basic, put_user
from tests.api.helpers import eventually
from tests.conftest import SECRET
from tests.e2e.conftest import start_kts

THRESHOLD = 10
REPLICAS = 2
WRONG = "Invalid user name or password."


class Addresses:
    """A new loopback source address for every request."""

    def __init__(self) -> None:
        self._next = 2

    def get(self, url: str, user: tuple[str, str]) -> httpx.Response:
        address = f"127.0.0.{self._next}"
        self._next += 1
        assert self._next < 255
        with httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=30) as client:
            return client.get(f"{url}/v1/tokens", headers=basic(user))


def _replicas_seen(url: str) -> float:
    match = re.search(r"^kts_replicas (\S+)$", httpx.get(f"{url}/metrics").text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def _failed_checks(url: str) -> int:
    """Audit rows of this replica's failed password checks for alice (not of refused attempts)."""
    events = httpx.get(
        f"{url}/v1/audit?action=authentication&principal=User:alice&limit=1000", headers=basic(ADMIN)
    ).json()["events"]
    return sum(1 for event in events if event["details"].get("reason") == WRONG)


def _audited(url: str, action: str) -> list[dict[str, object]]:
    response = httpx.get(f"{url}/v1/audit?action={action}&limit=1000", headers=basic(ADMIN))
    assert response.status_code == 200, response.text
    events: list[dict[str, object]] = response.json()["events"]
    return events


def _assert_locked(response: httpx.Response) -> None:
    assert response.status_code == 429, response.text
    assert response.json()["error"] == "ACCOUNT_LOCKED"
    assert int(response.headers["Retry-After"]) >= 1


@pytest.fixture
def replicas(zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]], tmp_path: Path) -> list[str]:
    put_user(raw_zk, *ALICE)
    put_user(raw_zk, *ADMIN)
    settings = {
        "KTS_ZOOKEEPER_CONNECT": zk_connect,
        "KTS_DELEGATION_TOKEN_SECRET_KEY": SECRET,
        "KTS_SUPER_USERS": "User:admin",
        "KTS_AUTH_LOCKOUT_THRESHOLD": str(THRESHOLD),
    }
    urls = [start_kts(processes, tmp_path, f"replica-{n}", **settings) for n in range(REPLICAS)]
    for url in urls:  # each divides the threshold among the replicas it sees
        eventually(lambda url=url: _replicas_seen(url) == REPLICAS, timeout_s=30)
    return urls


def test_a_lock_published_by_one_replica_is_honoured_by_the_other(replicas: list[str]) -> None:
    first, second = replicas
    addresses = Addresses()
    share = -(-THRESHOLD // REPLICAS)
    statuses = [addresses.get(first, (ALICE[0], f"guess-{n}")).status_code for n in range(share)]
    assert statuses == [401] * share
    _assert_locked(addresses.get(first, ALICE))
    # The second replica has seen no failure of its own: only the published lock can refuse the right password.
    eventually(lambda: addresses.get(second, ALICE).status_code == 429, timeout_s=30)
    _assert_locked(addresses.get(second, ALICE))

    unlocked = httpx.delete(f"{second}/v1/users/alice/lockout", headers=basic(ADMIN))
    assert unlocked.status_code == 200, unlocked.text
    assert unlocked.json() == {"user": "alice", "wasLocked": True}
    assert addresses.get(second, ALICE).status_code == 200
    eventually(lambda: addresses.get(first, ALICE).status_code == 200, timeout_s=30)


def test_many_addresses_and_two_replicas_get_at_most_threshold_plus_replicas_guesses(replicas: list[str]) -> None:
    addresses = Addresses()
    statuses = [addresses.get(replicas[n % REPLICAS], (ALICE[0], f"guess-{n}")).status_code for n in range(100)]
    assert set(statuses) == {401, 429}
    checked = statuses.count(401)
    assert checked <= THRESHOLD + REPLICAS
    assert sum(_failed_checks(url) for url in replicas) == checked
    print(f"guesses sent: {len(statuses)}, checked: {checked}, threshold + replicas: {THRESHOLD + REPLICAS}")

    for url in replicas:  # the right password, from addresses that never failed
        _assert_locked(addresses.get(url, ALICE))
    locks = [event for url in replicas for event in _audited(url, "account.lock")]
    assert locks and all(event["principal"] == "User:alice" for event in locks)
    assert all(ALICE[1] not in str(event) for event in locks)

    unlocked = httpx.delete(f"{replicas[0]}/v1/users/alice/lockout", headers=basic(ADMIN))
    assert unlocked.json() == {"user": "alice", "wasLocked": True}
    for url in replicas:
        eventually(lambda url=url: addresses.get(url, ALICE).status_code == 200, timeout_s=30)
    releases = _audited(replicas[0], "account.unlock")
    assert [(event["principal"], event["owner"], event["details"]["reason"]) for event in releases] == [
        ("User:admin", "User:alice", "unlocked")
    ]
