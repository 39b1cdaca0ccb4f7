"""The ``UserStore`` and ``CredentialSource`` contract (app/service/ports.py), run against the stores that answer
SCRAM keys: ZooKeeper (a real server, read through the credential cache Basic logins use) and memory; both check
HTTP Basic passwords against the stored keys (``StoredKeyCredentials``). A credential written is told by its
mechanism and iterations (never its keys), checks its password and no other, and is checked again on another
replica; replacing or deleting one changes its fingerprint and refuses the old password; a user unknown is
NO_SUCH_USER, a known one with a wrong password REFUSED; deleting what is not there is CredentialNotFound. What
one store alone does (the config znodes kafka-configs.sh reads) stays in its own suite."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from app.auth.basic import StoredKeyCredentials
from app.domain.credentials import Mechanism, Verdict
from app.domain.errors import CredentialNotFound
from app.domain.scram import derive
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


@pytest.fixture(params=["zookeeper", "memory"])
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
    else:
        store = MemoryUserStore()
        yield Users("memory", store, StoredKeyCredentials(store), StoredKeyCredentials(store))


def test_a_credential_written_checks_its_password_on_every_replica(users: Users) -> None:
    assert users.other.verify("ann", "pw") is Verdict.NO_SUCH_USER  # read (and perhaps cached) before the write
    users.store.put_credential("ann", SHA256, derive(SHA256, "pw", 4096))
    users.store.put_credential("ann", SHA512, derive(SHA512, "pw", 8192))

    assert users.store.mechanisms("ann") == {SHA256: 4096, SHA512: 8192}
    assert users.source.verify("ann", "pw") is Verdict.ACCEPTED
    assert users.source.verify("ann", "pW") is Verdict.REFUSED
    eventually(lambda: users.other.verify("ann", "pw") is Verdict.ACCEPTED)


def test_an_unknown_user_has_no_credentials(users: Users) -> None:
    assert users.store.mechanisms("nobody") == {}
    assert users.source.verify("nobody", "pw") is Verdict.NO_SUCH_USER
    assert users.source.fingerprint("nobody") == b""
    with pytest.raises(CredentialNotFound):
        users.store.delete_credential("nobody", SHA256)


def test_replacing_a_credential_changes_its_fingerprint_and_refuses_the_old_password(users: Users) -> None:
    users.store.put_credential("ann", SHA256, derive(SHA256, "old", 4096))
    before = users.source.fingerprint("ann")

    users.store.put_credential("ann", SHA256, derive(SHA256, "new", 4096))

    assert users.source.fingerprint("ann") not in (before, b"")
    assert users.source.verify("ann", "old") is Verdict.REFUSED
    assert users.source.verify("ann", "new") is Verdict.ACCEPTED
    eventually(lambda: users.other.verify("ann", "old") is Verdict.REFUSED)


def test_deleting_a_credential_keeps_the_other_mechanism(users: Users) -> None:
    users.store.put_credential("ann", SHA256, derive(SHA256, "pw", 4096))
    users.store.put_credential("ann", SHA512, derive(SHA512, "pw", 4096))

    users.store.delete_credential("ann", SHA512)

    assert users.store.mechanisms("ann") == {SHA256: 4096}
    with pytest.raises(CredentialNotFound):
        users.store.delete_credential("ann", SHA512)
    users.store.delete_credential("ann", SHA256)
    assert users.store.mechanisms("ann") == {}
    assert users.source.verify("ann", "pw") is not Verdict.ACCEPTED


def test_the_store_never_tells_the_salted_password(users: Users) -> None:
    """The salted password kts derived (what a cluster taking KIP-554's form needs) is not kept: a credential
    read back holds the keys a broker holds, and no more."""
    users.store.put_credential("ann", SHA256, derive(SHA256, "pw", 4096))

    assert all(credential.salted_password == b"" for credential in users.store.credentials("ann").values())
