"""The ``UserStore`` and ``CredentialSource`` contract (app/service/ports.py), run against ZooKeeper (a real
server, read through the credential cache Basic logins use) and memory, which check HTTP Basic passwords against
the stored keys (``StoredKeyCredentials``), and the Kafka protocol (the real KRaft broker, which checks them in a
SCRAM exchange: ``BrokerCredentials``). A credential written is told by its mechanism and iterations (never its
keys), checks its password and no other, on every replica; replacing one changes its fingerprint and refuses the
old password; a user unknown is NO_SUCH_USER, a known one with a wrong password REFUSED; deleting what is not
there is CredentialNotFound. A broker takes a change in a moment after answering it: reads are waited for. What
one store alone does (the config znodes kafka-configs.sh reads) stays in its own suite."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from app.auth.basic import StoredKeyCredentials
from app.domain.credentials import Mechanism, Verdict
from app.domain.errors import CredentialNotFound
from app.domain.scram import derive
from app.storage.kafka.users import BrokerCredentials, KafkaUserStore
from app.storage.memory.intents import MemoryIntentStore
from app.storage.memory.users import MemoryUserStore
from app.storage.zk.connection import ZkConnection
from app.storage.zk.credential_cache import CredentialCache
from app.storage.zk.user_store import ZkUserStore
from tests.api.helpers import eventually

SHA256, SHA512 = Mechanism.SCRAM_SHA_256, Mechanism.SCRAM_SHA_512


@dataclass
class Users:
    """``store`` and its replica's credential ``source``; ``other``: another replica's source."""

    name: str
    store: Any
    source: Any
    other: Any


@pytest.fixture(params=["zookeeper", "kraft", "memory"])
def users(request: pytest.FixtureRequest) -> Iterator[Users]:
    if request.param == "zookeeper":
        connect: str = request.getfixturevalue("zk_connect")
        connections = [ZkConnection(connect, session_timeout_ms=6000) for _ in range(2)]
        for connection in connections:
            connection.start()
        stores = [ZkUserStore(connection) for connection in connections]
        caches = [CredentialCache(connection, store) for connection, store in zip(connections, stores, strict=True)]
        for cache in caches:
            cache.start()
        yield Users("zookeeper", stores[0], StoredKeyCredentials(caches[0]), StoredKeyCredentials(caches[1]))
        for cache in caches:
            cache.stop()
        for connection in connections:
            connection.stop()
    elif request.param == "kraft":
        clusters: Callable[[], Any] = request.getfixturevalue("kraft_clusters")
        wires = [clusters().wire for _ in range(2)]
        stores = [KafkaUserStore(wire, MemoryIntentStore()) for wire in wires]
        yield Users("kraft", stores[0], BrokerCredentials(wires[0], stores[0]), BrokerCredentials(wires[1], stores[1]))
    else:
        store = MemoryUserStore()
        yield Users("memory", store, StoredKeyCredentials(store), StoredKeyCredentials(store))


@pytest.fixture
def ann() -> str:
    """A user of the test's own (the KRaft broker is the whole session's)."""
    return f"ann-{uuid.uuid4().hex[:8]}"


def test_a_credential_written_checks_its_password_on_every_replica(users: Users, ann: str) -> None:
    assert users.other.verify(ann, "pw") is Verdict.NO_SUCH_USER  # read (and perhaps cached) before the write
    users.store.put_credential(ann, SHA256, derive(SHA256, "pw", 4096))
    users.store.put_credential(ann, SHA512, derive(SHA512, "pw", 8192))

    eventually(lambda: users.store.mechanisms(ann) == {SHA256: 4096, SHA512: 8192})
    eventually(lambda: users.source.verify(ann, "pw") is Verdict.ACCEPTED)
    assert users.source.verify(ann, "pW") is Verdict.REFUSED
    eventually(lambda: users.other.verify(ann, "pw") is Verdict.ACCEPTED)


def test_an_unknown_user_has_no_credentials(users: Users, ann: str) -> None:
    assert users.store.mechanisms(ann) == {}
    assert users.source.verify(ann, "pw") is Verdict.NO_SUCH_USER
    with pytest.raises(CredentialNotFound):
        users.store.delete_credential(ann, SHA256)


def test_replacing_a_credential_changes_its_fingerprint_and_refuses_the_old_password(users: Users, ann: str) -> None:
    users.store.put_credential(ann, SHA256, derive(SHA256, "old", 4096))
    eventually(lambda: users.source.verify(ann, "old") is Verdict.ACCEPTED)
    before = users.source.fingerprint(ann)

    users.store.put_credential(ann, SHA256, derive(SHA256, "new", 4096))

    assert users.source.fingerprint(ann) not in (before, b"")
    eventually(lambda: users.source.verify(ann, "new") is Verdict.ACCEPTED)
    assert users.source.verify(ann, "old") is Verdict.REFUSED
    eventually(lambda: users.other.verify(ann, "old") is Verdict.REFUSED)


def test_deleting_a_credential_keeps_the_other_mechanism(users: Users, ann: str) -> None:
    users.store.put_credential(ann, SHA256, derive(SHA256, "pw", 4096))
    users.store.put_credential(ann, SHA512, derive(SHA512, "pw", 4096))

    users.store.delete_credential(ann, SHA512)

    eventually(lambda: users.store.mechanisms(ann) == {SHA256: 4096})
    with pytest.raises(CredentialNotFound):
        users.store.delete_credential(ann, SHA512)
    users.store.delete_credential(ann, SHA256)
    eventually(lambda: users.store.mechanisms(ann) == {})
    eventually(lambda: users.source.verify(ann, "pw") is not Verdict.ACCEPTED)
