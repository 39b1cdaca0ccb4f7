"""CredentialCache on a real ZooKeeper: a user's credentials are read once, then answered from memory until a
/config/changes notification names the user (written as kafka-configs.sh writes it, or by another replica), the
user is written through this replica, or the session is lost."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient

from app.domain.credentials import Mechanism, ScramCredential
from app.domain.scram import derive, password_matches
from app.storage.zk.connection import ZkConnection
from app.storage.zk.credential_cache import CredentialCache
from app.storage.zk.user_store import ZkUserStore
from app.storage.zk.znodes import ConfigChangeZNode, UserConfigZNode
from tests.api.helpers import eventually

SHA512 = Mechanism.SCRAM_SHA_512


class Replica:
    """One replica's session, user store and credential cache."""

    def __init__(self, zk_connect: str) -> None:
        self.zk = ZkConnection(zk_connect, session_timeout_ms=6000)
        self.zk.start()
        self.store = ZkUserStore(self.zk)
        self.cache = CredentialCache(self.zk, self.store)
        self.cache.start()

    def accepts(self, user: str, password: str) -> bool:
        credential = self.cache.credentials(user).get(SHA512)
        return credential is not None and password_matches(SHA512, credential, password)

    def stop(self) -> None:
        self.cache.stop()
        self.zk.stop()


@pytest.fixture
def replicas(zk_connect: str) -> Iterator[Callable[[], Replica]]:
    started: list[Replica] = []

    def start() -> Replica:
        started.append(Replica(zk_connect))
        return started[-1]

    yield start
    for replica in started:
        replica.stop()


def _config(password: str) -> bytes:
    return UserConfigZNode.encode({SHA512.value: UserConfigZNode.credential_to_string(derive(SHA512, password, 4096))})


def kafka_configs_sh_writes(raw_zk: KazooClient, user: str, password: str | None) -> None:
    """What kafka-configs.sh --alter --entity-type users makes a ZooKeeper-mode broker write (AdminZkClient): the
    user's config znode (None: deleted, as --delete-config of the last entry leaves it), then, separately, the
    version 2 change notification naming ``users/<sanitized name>``."""
    path = UserConfigZNode.path(user)
    if password is None:
        raw_zk.delete(path)
    elif raw_zk.exists(path):
        raw_zk.set(path, _config(password))
    else:
        raw_zk.create(path, _config(password), makepath=True)
    raw_zk.create(ConfigChangeZNode.PREFIX, ConfigChangeZNode.encode(user), sequence=True, makepath=True)


def test_a_user_is_read_once_then_answered_from_memory(replicas: Callable[[], Replica], raw_zk: KazooClient) -> None:
    kafka_configs_sh_writes(raw_zk, "ann", "ann-pw")
    replica = replicas()
    assert replica.accepts("ann", "ann-pw")

    raw_zk.set(UserConfigZNode.path("ann"), _config("other"))  # no notification: this replica cannot know

    assert replica.accepts("ann", "ann-pw")
    assert len(replica.cache) == 1


def test_a_kafka_configs_sh_notification_makes_the_changed_credential_count(
    replicas: Callable[[], Replica], raw_zk: KazooClient
) -> None:
    kafka_configs_sh_writes(raw_zk, "CN=ann b,O=x*y", "old-pw")
    kafka_configs_sh_writes(raw_zk, "bob", "bob-pw")
    replica = replicas()
    assert replica.accepts("CN=ann b,O=x*y", "old-pw") and replica.accepts("bob", "bob-pw")

    kafka_configs_sh_writes(raw_zk, "CN=ann b,O=x*y", "new-pw")

    eventually(lambda: replica.accepts("CN=ann b,O=x*y", "new-pw"))
    assert not replica.accepts("CN=ann b,O=x*y", "old-pw")
    assert len(replica.cache) == 2  # bob was not forgotten: the notification named only the changed user


def test_a_credential_deleted_with_kafka_configs_sh_no_longer_logs_in(
    replicas: Callable[[], Replica], raw_zk: KazooClient
) -> None:
    kafka_configs_sh_writes(raw_zk, "cat", "cat-pw")
    replica = replicas()
    assert replica.accepts("cat", "cat-pw")

    kafka_configs_sh_writes(raw_zk, "cat", None)

    eventually(lambda: replica.cache.credentials("cat") == {})


def test_a_credential_changed_or_deleted_on_another_replica_counts_there_at_once_and_here_soon(
    replicas: Callable[[], Replica],
) -> None:
    here, there = replicas(), replicas()
    there.store.put_credential("dan", SHA512, derive(SHA512, "first", 4096))
    assert here.accepts("dan", "first") and there.accepts("dan", "first")

    there.store.put_credential("dan", SHA512, derive(SHA512, "second", 4096))
    assert there.accepts("dan", "second")  # its own write: read again at once
    eventually(lambda: here.accepts("dan", "second"))
    assert not here.accepts("dan", "first")

    there.store.delete_credential("dan", SHA512)
    assert there.cache.credentials("dan") == {}
    eventually(lambda: here.cache.credentials("dan") == {})


def test_an_unreadable_notification_forgets_every_user(replicas: Callable[[], Replica], raw_zk: KazooClient) -> None:
    kafka_configs_sh_writes(raw_zk, "eve", "eve-pw")
    replica = replicas()
    assert replica.accepts("eve", "eve-pw")
    raw_zk.set(UserConfigZNode.path("eve"), _config("changed"))

    raw_zk.create(ConfigChangeZNode.PREFIX, b"\xff not json", sequence=True)

    eventually(lambda: replica.accepts("eve", "changed"))


def test_notifications_about_other_entities_forget_nothing(
    replicas: Callable[[], Replica], raw_zk: KazooClient
) -> None:
    kafka_configs_sh_writes(raw_zk, "fay", "fay-pw")
    replica = replicas()
    assert replica.accepts("fay", "fay-pw")

    raw_zk.create(ConfigChangeZNode.PREFIX, b'{"version":2,"entity_path":"topics/orders"}', sequence=True)
    kafka_configs_sh_writes(raw_zk, "gus", "gus-pw")  # a later change, to know the earlier one was handled

    eventually(lambda: replica.cache._generation >= 2)  # gus's notification was handled
    assert len(replica.cache) == 1


def test_a_user_without_credentials_is_not_remembered(replicas: Callable[[], Replica], raw_zk: KazooClient) -> None:
    replica = replicas()
    assert replica.cache.credentials("hal") == {}

    raw_zk.create(UserConfigZNode.path("hal"), _config("hal-pw"), makepath=True)  # by hand, no notification

    assert replica.accepts("hal", "hal-pw")


def test_a_lost_session_forgets_every_user(
    replicas: Callable[[], Replica], zk_connect: str, raw_zk: KazooClient
) -> None:
    kafka_configs_sh_writes(raw_zk, "ivy", "ivy-pw")
    replica = replicas()
    assert replica.accepts("ivy", "ivy-pw")
    raw_zk.set(UserConfigZNode.path("ivy"), _config("changed"))  # no notification

    session_id, password = replica.zk.client.client_id
    twin = KazooClient(hosts=zk_connect.partition("/")[0], client_id=(session_id, password))
    twin.start(10)
    twin.stop()  # closing the session from another connection expires it for the replica
    twin.close()

    eventually(lambda: replica.zk.connected and replica.accepts("ivy", "changed"), timeout_s=15)


def test_a_read_that_a_forgetting_overtook_is_not_remembered(
    replicas: Callable[[], Replica], raw_zk: KazooClient
) -> None:
    kafka_configs_sh_writes(raw_zk, "jo", "old-pw")
    replica = replicas()
    read = replica.store.credentials

    def slow_read(user: str) -> dict[Mechanism, ScramCredential]:
        found = read(user)  # the old credential...
        replica.cache.forget(user)  # ...and meanwhile the notification of a change was handled
        raw_zk.set(UserConfigZNode.path(user), _config("new-pw"))
        return found

    replica.store.credentials = slow_read  # type: ignore[method-assign]
    assert replica.accepts("jo", "old-pw")  # what was read is answered, but not kept
    replica.store.credentials = read  # type: ignore[method-assign]

    assert replica.accepts("jo", "new-pw")


def test_while_disconnected_nothing_is_answered_from_memory(
    replicas: Callable[[], Replica], raw_zk: KazooClient
) -> None:
    kafka_configs_sh_writes(raw_zk, "kim", "kim-pw")
    replica = replicas()
    assert replica.accepts("kim", "kim-pw")
    replica.zk.client.stop()

    with pytest.raises(Exception, match="not connected"):
        replica.cache.credentials("kim")
