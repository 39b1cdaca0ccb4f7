"""``kts cluster prepare-migration`` on a real ZooKeeper with a real SQLite audit database, run as an operator runs it
(``kts`` with the server's properties file): kts's principal on bootstrap.servers (``admin.sasl.jaas.config``)
becomes a renewer of every live token, each change with its notification and a ``token.renewer.add`` event; expired
tokens and tokens it could renew already are left alone; once a KRaft controller has claimed the cluster it refuses
and writes nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from sqlalchemy import Engine

from app.cli.main import main
from app.domain.audit import EventQuery
from app.domain.clock import SystemClock
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.storage.audit import migrations
from app.storage.audit.database import make_engine
from app.storage.audit.sink import SqlAuditLog
from app.storage.zk.connection import ZkConnection
from app.storage.zk.token_store import ZkTokenStore
from app.storage.zk.znodes import TokenChangeZNode, TokenZNode
from tests import kafka_znodes
from tests.conftest import SECRET

ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")
KTS = KafkaPrincipal.user("kts")
HOUR = 3_600_000


def _token(
    token_id: str, *, owner: KafkaPrincipal = ALICE, renewers: tuple[KafkaPrincipal, ...] = (), expired: bool = False
) -> TokenInformation:
    now = time.time_ns() // 1_000_000
    expiry = now - HOUR if expired else now + HOUR
    return TokenInformation(token_id, owner, owner, renewers, now - 2 * HOUR, expiry, now + 24 * HOUR)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    audit_engine = make_engine(f"sqlite:///{tmp_path / 'audit.db'}")
    migrations.upgrade(audit_engine)
    yield audit_engine
    audit_engine.dispose()


@pytest.fixture
def config(tmp_path: Path, zk_connect: str, raw_zk: KazooClient, engine: Engine) -> Path:
    kafka_znodes.register_broker(raw_zk, 0)
    kafka_znodes.elect_zookeeper_controller(raw_zk, 0)
    path = tmp_path / "kts.properties"
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="kts" password="kts-pw";'
    path.write_text(
        f"zookeeper.connect={zk_connect}\n"
        f"audit.db.url=sqlite:///{tmp_path / 'audit.db'}\n"
        f"delegation.token.secret.key={SECRET}\n"
        f"admin.sasl.jaas.config={jaas}\n"
        "service.id=kts-prep\n"
    )
    return path


@pytest.fixture
def store(zk_connect: str) -> Iterator[ZkTokenStore]:
    connection = ZkConnection(zk_connect, session_timeout_ms=6000)
    connection.start()
    yield ZkTokenStore(connection)
    connection.stop()


def _renewers(raw_zk: KazooClient, token_id: str) -> tuple[KafkaPrincipal, ...]:
    return TokenZNode.decode(raw_zk.get(TokenZNode.path(token_id))[0]).renewers


def _notified(raw_zk: KazooClient) -> list[str]:
    names = sorted(raw_zk.get_children(TokenChangeZNode.ROOT))
    return [raw_zk.get(f"{TokenChangeZNode.ROOT}/{name}")[0].decode() for name in names]


def test_prepare_migration_makes_kts_a_renewer_of_every_live_token_audited_with_notifications(
    config: Path, store: ZkTokenStore, raw_zk: KazooClient, engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    store.create(_token("AliceWithBobAAAAAAAAAA", renewers=(BOB,)))
    store.create(_token("AliceAloneAAAAAAAAAAAA"))
    store.create(_token("KtsRenewsAlreadyAAAAAA", renewers=(KTS,)))
    store.create(_token("OwnedByKtsAAAAAAAAAAAA", owner=KTS))
    store.create(_token("ExpiredAAAAAAAAAAAAAAA", expired=True))
    before = _notified(raw_zk)

    assert main(["cluster", "prepare-migration", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "User:kts added to the renewers of 2 live tokens (2 had it already" in out, out

    assert _renewers(raw_zk, "AliceWithBobAAAAAAAAAA") == (BOB, KTS)
    assert _renewers(raw_zk, "AliceAloneAAAAAAAAAAAA") == (KTS,)
    assert _renewers(raw_zk, "KtsRenewsAlreadyAAAAAA") == (KTS,)
    assert _renewers(raw_zk, "ExpiredAAAAAAAAAAAAAAA") == ()
    assert sorted(_notified(raw_zk)[len(before) :]) == ["AliceAloneAAAAAAAAAAAA", "AliceWithBobAAAAAAAAAA"]
    events = SqlAuditLog(engine, service_id="kts-prep", clock=SystemClock()).query(
        EventQuery(action="token.renewer.add")
    )
    assert sorted((event.token_id, event.outcome) for event in events) == [
        ("AliceAloneAAAAAAAAAAAA", "succeeded"),
        ("AliceWithBobAAAAAAAAAA", "succeeded"),
    ]
    assert all(event.details["renewer"] == "User:kts" and event.details["operatingSystemUser"] for event in events)
    assert not raw_zk.get_children("/kts/audit-intents")  # settled, markers cleared

    # Run again: nothing left to do, nothing written.
    assert main(["cluster", "prepare-migration", "--config", str(config)]) == 0
    assert "added to the renewers of 0 live tokens (4 had it already" in capsys.readouterr().out
    assert len(_notified(raw_zk)) == len(before) + 2


def test_prepare_migration_is_refused_once_a_kraft_controller_has_claimed_the_cluster(
    config: Path, store: ZkTokenStore, raw_zk: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    store.create(_token("AliceAloneAAAAAAAAAAAA"))
    kafka_znodes.provision_kraft_quorum(raw_zk)
    kafka_znodes.claim_for_kraft(raw_zk)
    assert main(["cluster", "prepare-migration", "--config", str(config)]) == 1
    assert "migrating" in capsys.readouterr().err
    assert _renewers(raw_zk, "AliceAloneAAAAAAAAAAAA") == ()
    assert _notified(raw_zk) == ["AliceAloneAAAAAAAAAAAA"]  # the create's own
