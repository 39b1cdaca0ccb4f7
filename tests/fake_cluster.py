"""A stand-in for a Kafka controller's delegation tokens, for tests of what replicas share in the database
before the Kafka-protocol adapter is wired to them: it picks token ids, stamps issue/expiry/max from its own
clock, records the requester as whoever sent the create, and lists what it holds. Its state is a SQLite file
of its own (not the audit database), so several processes acting as replicas share one "cluster" and a
replica killed mid-create leaves behind exactly what a controller would: the token, or nothing.

It is a fake: no Kafka semantics beyond those the coordination code relies on (ids chosen by the cluster,
the requester it records, expiry from the cluster's clock). The same scenarios run against the real KRaft
broker once the adapter exists (tests/kafka/).
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation

DAY_MS = 86_400_000
MAX_LIFETIME_MS = 7 * DAY_MS


class FakeCluster:
    def __init__(self, path: Path) -> None:
        self.path = path
        with self._connection() as connection:
            connection.execute(
                "CREATE TABLE IF NOT EXISTS tokens (token_id TEXT PRIMARY KEY, owner TEXT NOT NULL, body TEXT NOT NULL)"
            )
            connection.execute("CREATE TABLE IF NOT EXISTS peaks (owner TEXT PRIMARY KEY, tokens INTEGER NOT NULL)")

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        connection = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        try:
            connection.execute("BEGIN IMMEDIATE")
            yield connection
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        finally:
            connection.close()

    def create(
        self,
        *,
        requester: KafkaPrincipal,
        owner: KafkaPrincipal,
        renewers: tuple[KafkaPrincipal, ...] = (),
        max_lifetime_ms: int = -1,
        renew_ms: int = DAY_MS,
        now_ms: int | None = None,
    ) -> TokenInformation:
        """CreateDelegationToken as the controller answers it (``now_ms``: the controller's clock)."""
        now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        lifetime = MAX_LIFETIME_MS if max_lifetime_ms <= 0 else min(max_lifetime_ms, MAX_LIFETIME_MS)
        token = TokenInformation(
            token_id=secrets.token_urlsafe(16),
            owner=owner,
            token_requester=requester,
            renewers=renewers,
            issue_timestamp=now,
            expiry_timestamp=min(now + renew_ms, now + lifetime),
            max_timestamp=now + lifetime,
        )
        self.put(token)
        return token

    def put(self, token: TokenInformation) -> None:
        """Store ``token``, and note the most tokens its owner has held at once (counted in the same
        transaction, so no interleaving hides a peak)."""
        owner = str(token.owner)
        with self._connection() as connection:
            connection.execute(
                "INSERT OR REPLACE INTO tokens VALUES (?, ?, ?)", (token.token_id, owner, _encode(token))
            )
            (held,) = connection.execute("SELECT count(*) FROM tokens WHERE owner = ?", (owner,)).fetchone()
            connection.execute(
                "INSERT INTO peaks VALUES (?, ?) "
                "ON CONFLICT (owner) DO UPDATE SET tokens = max(tokens, excluded.tokens)",
                (owner, held),
            )

    def peak(self, owner: KafkaPrincipal) -> int:
        """The most tokens ``owner`` has held at once."""
        with self._connection() as connection:
            row = connection.execute("SELECT tokens FROM peaks WHERE owner = ?", (str(owner),)).fetchone()
        return 0 if row is None else int(row[0])

    def delete(self, token_id: str) -> None:
        with self._connection() as connection:
            connection.execute("DELETE FROM tokens WHERE token_id = ?", (token_id,))

    def list_tokens(self) -> list[TokenInformation]:
        """DescribeDelegationToken for every owner."""
        with self._connection() as connection:
            rows = connection.execute("SELECT body FROM tokens ORDER BY token_id").fetchall()
        return [_decode(body) for (body,) in rows]


def _encode(token: TokenInformation) -> str:
    return json.dumps(
        {
            "id": token.token_id,
            "owner": str(token.owner),
            "requester": str(token.token_requester),
            "renewers": [str(renewer) for renewer in token.renewers],
            "issue": token.issue_timestamp,
            "expiry": token.expiry_timestamp,
            "max": token.max_timestamp,
        }
    )


def _decode(body: str) -> TokenInformation:
    data = json.loads(body)
    return TokenInformation(
        token_id=data["id"],
        owner=KafkaPrincipal.parse(data["owner"]),
        token_requester=KafkaPrincipal.parse(data["requester"]),
        renewers=tuple(KafkaPrincipal.parse(renewer) for renewer in data["renewers"]),
        issue_timestamp=data["issue"],
        expiry_timestamp=data["expiry"],
        max_timestamp=data["max"],
    )
