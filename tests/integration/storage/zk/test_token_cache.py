"""TokenCache on a real ZooKeeper: loads every token znode, follows change notifications from any writer
(another kts replica or a Kafka broker), keeps its HMAC and principal indexes in step, and survives a
session expiry and a ZooKeeper restart."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey, QuotaKind
from app.domain.token_secret import TokenSecret
from app.service.ports import EXPIRE_NOW, CreateTerms, LoadedToken, Renewal, StoredToken, TokenChange
from app.storage.zk.connection import ZkConnection
from app.storage.zk.token_cache import TokenCache
from app.storage.zk.token_store import ZkTokenStore
from app.storage.zk.znodes import TokenChangeZNode, TokenZNode
from tests.api.helpers import broker_writes_token, eventually
from tests.conftest import SECRET

DAY = 86_400_000
NOW = int(time.time() * 1000)
ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")
CAROL = KafkaPrincipal.user("carol")
DAVE = KafkaPrincipal.user("dave")
ERIN = KafkaPrincipal.user("erin")
SECRET_KEY = TokenSecret(SECRET)


def _token(
    token_id: str,
    owner: KafkaPrincipal = ALICE,
    *,
    requester: KafkaPrincipal | None = None,
    renewers: tuple[KafkaPrincipal, ...] = (BOB,),
    expiry: int = NOW + DAY,
) -> TokenInformation:
    return TokenInformation(token_id, owner, requester or owner, renewers, NOW, expiry, NOW + 7 * DAY)


def _broker_znode(
    token_id: str,
    version: int,
    *,
    owner: str = "User%3Aalice",
    requester: str = "User%3Aalice",
    renewers: tuple[str, ...] = ("User%3Abob",),
    expiry: int = NOW + DAY,
) -> bytes:
    """A token znode's data exactly as a Kafka broker of that znode version writes it (its key order)."""
    doc: dict[str, object] = {"issueTimestamp": NOW, "renewers": list(renewers)}
    if version == 3:
        doc["tokenRequester"] = requester
    doc |= {"tokenId": token_id, "owner": owner, "expiryTimestamp": expiry, "maxTimestamp": NOW + 7 * DAY}
    doc["version"] = version
    return json.dumps(doc, separators=(",", ":")).encode()


def _notify(raw_zk: KazooClient, data: bytes) -> None:
    raw_zk.create(f"{TokenChangeZNode.ROOT}/token_change_", data, sequence=True)


def _connection(connect: str) -> ZkConnection:
    connection = ZkConnection(connect, session_timeout_ms=6000)
    connection.start()
    return connection


def _becomes(token: TokenInformation) -> Callable[[StoredToken], TokenChange[None]]:
    """A change (by compare-and-set, as a request on another replica makes it) to exactly ``token``."""
    return lambda stored: TokenChange(token, None, Renewal(-1))


def _ids(cache: TokenCache) -> set[str]:
    return {stored.token.token_id for stored in cache.tokens()}


def _expire_session(zk_connect: str, zk: ZkConnection) -> None:
    """Make ZooKeeper expire ``zk``'s session: a second client attaches to the session and closes it."""
    session_id, password = zk.client.client_id
    twin = KazooClient(hosts=zk_connect.partition("/")[0], client_id=(session_id, password))
    twin.start(10)
    twin.stop()
    twin.close()
    eventually(lambda: zk.connected and zk.client.client_id[0] != session_id, timeout_s=10)


@pytest.fixture
def zk(zk_connect: str) -> Iterator[ZkConnection]:
    connection = _connection(zk_connect)
    yield connection
    connection.stop()


@pytest.fixture
def other_replica(zk_connect: str) -> Iterator[ZkTokenStore]:
    """Another writer, on a ZooKeeper session of its own."""
    connection = _connection(zk_connect)
    yield ZkTokenStore(connection)
    connection.stop()


@pytest.fixture
def start_cache(zk: ZkConnection) -> Iterator[Callable[[], TokenCache]]:
    caches: list[TokenCache] = []

    def start() -> TokenCache:
        cache = TokenCache(zk, ZkTokenStore(zk), SECRET_KEY)
        cache.start()
        caches.append(cache)
        return cache

    yield start
    for cache in caches:
        cache.stop()


@pytest.fixture
def cache(start_cache: Callable[[], TokenCache]) -> TokenCache:
    return start_cache()


def test_loads_every_token_present_at_start_including_broker_v1_and_v3_znodes(
    zk: ZkConnection, raw_zk: KazooClient, start_cache: Callable[[], TokenCache]
) -> None:
    ours = _token("KtsWrittenTokenAAAAAAA")
    ZkTokenStore(zk).create(ours)
    broker_writes_token(raw_zk, "BrokerV1tokenAAAAAAAAA", _broker_znode("BrokerV1tokenAAAAAAAAA", 1))
    broker_writes_token(
        raw_zk, "BrokerV3tokenAAAAAAAAA", _broker_znode("BrokerV3tokenAAAAAAAAA", 3, requester="User%3Acarol")
    )
    raw_zk.create(TokenZNode.path("UnreadableTokenAAAAAAA"), b"{not json")  # a broker would skip it too

    cache = start_cache()

    assert cache.loaded
    assert len(cache) == 3
    assert _ids(cache) == {"KtsWrittenTokenAAAAAAA", "BrokerV1tokenAAAAAAAAA", "BrokerV3tokenAAAAAAAAA"}
    stored = cache.get("KtsWrittenTokenAAAAAAA")
    assert stored is not None and stored.token == ours and stored.version == 0
    v1 = cache.get("BrokerV1tokenAAAAAAAAA")
    assert v1 is not None
    assert (v1.token.owner, v1.token.token_requester, v1.token.renewers) == (ALICE, ALICE, (BOB,))
    v3 = cache.get("BrokerV3tokenAAAAAAAAA")
    assert v3 is not None and (v3.token.owner, v3.token.token_requester) == (ALICE, CAROL)
    assert cache.get("UnreadableTokenAAAAAAA") is None


def test_a_token_created_updated_and_deleted_by_another_replica_appears_changes_and_disappears(
    cache: TokenCache, other_replica: ZkTokenStore
) -> None:
    token = _token("OtherReplicaTokenAAAAA")
    other_replica.create(token)
    eventually(lambda: cache.get(token.token_id) is not None)
    assert cache.find_by_hmac(SECRET_KEY.hmac(token.token_id)) == token.token_id

    other_replica.change(token.token_id, _becomes(token.with_expiry(NOW + 2 * DAY)))
    eventually(lambda: (stored := cache.get(token.token_id)) is not None and stored.version == 1)
    renewed = cache.get(token.token_id)
    assert renewed is not None and renewed.token.expiry_timestamp == NOW + 2 * DAY

    other_replica.delete_many([(token.token_id, 1, None)])
    eventually(lambda: cache.get(token.token_id) is None)
    assert cache.find_by_hmac(SECRET_KEY.hmac(token.token_id)) is None
    assert cache.related_to([ALICE, BOB]) == []
    assert len(cache) == 0


@pytest.mark.parametrize("version", [1, 3])
def test_a_token_written_by_a_broker_appears_changes_and_disappears(
    cache: TokenCache, raw_zk: KazooClient, version: int
) -> None:
    token_id = f"BrokerWrittenV{version}AAAAAAA"
    broker_writes_token(raw_zk, token_id, _broker_znode(token_id, version))
    eventually(lambda: cache.get(token_id) is not None)

    raw_zk.set(TokenZNode.path(token_id), _broker_znode(token_id, version, expiry=NOW + 3 * DAY))
    _notify(raw_zk, token_id.encode())
    eventually(lambda: (stored := cache.get(token_id)) is not None and stored.token.expiry_timestamp == NOW + 3 * DAY)

    raw_zk.delete(TokenZNode.path(token_id))
    _notify(raw_zk, token_id.encode())
    eventually(lambda: cache.get(token_id) is None)


def test_a_token_is_only_dropped_when_a_notification_names_its_absent_znode(
    cache: TokenCache, other_replica: ZkTokenStore, raw_zk: KazooClient
) -> None:
    token = _token("SilentlyDeletedAAAAAAA")
    other_replica.create(token)
    eventually(lambda: cache.get(token.token_id) is not None)

    raw_zk.delete(TokenZNode.path(token.token_id))  # no notification yet: the cache cannot know
    other_replica.create(_token("SyncPointTokenAAAAAAAA"))
    eventually(lambda: cache.get("SyncPointTokenAAAAAAAA") is not None)
    assert cache.get(token.token_id) is not None

    _notify(raw_zk, token.token_id.encode())
    eventually(lambda: cache.get(token.token_id) is None)
    assert cache.find_by_hmac(SECRET_KEY.hmac(token.token_id)) is None


@pytest.mark.parametrize(
    "garbage",
    [
        b"{not json",
        b'{"version":3,"tokenId":"x"}',
        b'{"version":9,"owner":"User%3Aalice","renewers":[],"issueTimestamp":1,"expiryTimestamp":2,'
        b'"maxTimestamp":3,"tokenId":"UnparsableTokenAAAAAAA"}',
        _broker_znode("SomeOtherTokenIdAAAAAA", 3),  # well formed, but names another token
    ],
)
def test_a_notification_naming_an_unparsable_znode_drops_the_token(
    cache: TokenCache, other_replica: ZkTokenStore, raw_zk: KazooClient, garbage: bytes
) -> None:
    token = _token("UnparsableTokenAAAAAAA", renewers=(BOB, DAVE))
    other_replica.create(token)
    eventually(lambda: cache.get(token.token_id) is not None)

    raw_zk.set(TokenZNode.path(token.token_id), garbage)
    _notify(raw_zk, token.token_id.encode())

    eventually(lambda: cache.get(token.token_id) is None)
    assert cache.find_by_hmac(SECRET_KEY.hmac(token.token_id)) is None
    assert cache.related_to([ALICE, BOB, DAVE]) == []
    assert cache.get("SomeOtherTokenIdAAAAAA") is None


def test_a_notification_for_a_token_id_that_never_existed_is_harmless(
    cache: TokenCache, other_replica: ZkTokenStore, raw_zk: KazooClient
) -> None:
    existing = _token("ExistingTokenAAAAAAAAA")
    other_replica.create(existing)
    eventually(lambda: cache.get(existing.token_id) is not None)

    for data in (b"NeverExistedTokenAAAAA", b"", b"\xff\xfe", b"a/b", b"..", b"../tokens"):
        _notify(raw_zk, data)
    other_replica.create(_token("AfterTheNoiseAAAAAAAAA"))

    eventually(lambda: cache.get("AfterTheNoiseAAAAAAAAA") is not None)
    assert _ids(cache) == {"ExistingTokenAAAAAAAAA", "AfterTheNoiseAAAAAAAAA"}
    assert cache.get("NeverExistedTokenAAAAA") is None


def test_find_by_hmac_maps_the_hmac_of_a_token_id_under_the_shared_secret_to_that_id(
    cache: TokenCache, other_replica: ZkTokenStore
) -> None:
    token = _token("E8gTWaIxRUOaSRH7wY3N1w")
    other_replica.create(token)
    eventually(lambda: cache.get(token.token_id) is not None)

    assert cache.find_by_hmac(TokenSecret(SECRET).hmac(token.token_id)) == token.token_id
    assert cache.find_by_hmac(TokenSecret("another-secret").hmac(token.token_id)) is None
    assert cache.find_by_hmac(b"\x00" * 64) is None


def test_related_to_finds_tokens_by_owner_renewer_and_requester(cache: TokenCache, other_replica: ZkTokenStore) -> None:
    owned = _token("AliceOwnsAAAAAAAAAAAAA", ALICE, renewers=(BOB,))
    requested = _token("AliceRequestedAAAAAAAA", CAROL, requester=ALICE, renewers=(DAVE,))
    unrelated = _token("ErinOwnsAAAAAAAAAAAAAA", ERIN, renewers=())
    for token in (owned, requested, unrelated):
        other_replica.create(token)
    eventually(lambda: len(cache) == 3)

    def related(*principals: KafkaPrincipal) -> set[str]:
        return {stored.token.token_id for stored in cache.related_to(principals)}

    assert related(ALICE) == {owned.token_id, requested.token_id}  # owner of one, requester of the other
    assert related(BOB) == {owned.token_id}  # renewer
    assert related(CAROL) == {requested.token_id}  # owner
    assert related(DAVE) == {requested.token_id}  # renewer
    assert related(ERIN) == {unrelated.token_id}
    assert related(BOB, ERIN) == {owned.token_id, unrelated.token_id}
    assert related(KafkaPrincipal.user("zed")) == set()
    assert related(KafkaPrincipal("Group", "alice")) == set()  # the principal type counts
    assert related() == set()


def test_an_update_that_drops_a_renewer_removes_the_token_from_that_renewers_index(
    cache: TokenCache, other_replica: ZkTokenStore
) -> None:
    token = _token("RenewerDroppedAAAAAAAA", renewers=(BOB, DAVE))
    other_replica.create(token)
    eventually(lambda: len(cache.related_to([DAVE])) == 1)

    other_replica.change(token.token_id, _becomes(_token(token.token_id, renewers=(BOB,))))

    eventually(lambda: cache.related_to([DAVE]) == [])
    assert [stored.token.token_id for stored in cache.related_to([BOB])] == [token.token_id]


def test_tokens_returns_a_copy_the_caller_may_change(cache: TokenCache, other_replica: ZkTokenStore) -> None:
    other_replica.create(_token("CopiedTokenAAAAAAAAAAA"))
    eventually(lambda: len(cache) == 1)

    snapshot = cache.tokens()
    snapshot.clear()

    assert len(cache.tokens()) == 1
    assert cache.tokens() is not cache.tokens()


def test_after_stop_no_change_is_followed(start_cache: Callable[[], TokenCache], other_replica: ZkTokenStore) -> None:
    stopped = start_cache()
    running = start_cache()
    stopped.stop()

    other_replica.create(_token("AfterStopTokenAAAAAAAA"))
    eventually(lambda: running.get("AfterStopTokenAAAAAAAA") is not None)  # the change was announced
    time.sleep(0.2)

    assert stopped.get("AfterStopTokenAAAAAAAA") is None
    assert len(stopped) == 0


def test_after_a_session_expiry_the_cache_reloads_everything_and_follows_again(
    zk_connect: str, zk: ZkConnection, cache: TokenCache, other_replica: ZkTokenStore, raw_zk: KazooClient
) -> None:
    """Notifications may have been missed and purged while the session was gone: only a reload finds out."""
    other_replica.create(_token("DeletedUnseenAAAAAAAAA"))
    eventually(lambda: cache.get("DeletedUnseenAAAAAAAAA") is not None)
    raw_zk.create(TokenZNode.path("CreatedUnseenAAAAAAAAA"), _broker_znode("CreatedUnseenAAAAAAAAA", 3))
    raw_zk.delete(TokenZNode.path("DeletedUnseenAAAAAAAAA"))
    other_replica.create(_token("SyncPointTokenAAAAAAAA"))
    eventually(lambda: cache.get("SyncPointTokenAAAAAAAA") is not None)
    assert cache.get("CreatedUnseenAAAAAAAAA") is None  # nothing announced these two changes
    assert cache.get("DeletedUnseenAAAAAAAAA") is not None

    _expire_session(zk_connect, zk)

    eventually(lambda: _ids(cache) == {"CreatedUnseenAAAAAAAAA", "SyncPointTokenAAAAAAAA"})
    assert cache.find_by_hmac(SECRET_KEY.hmac("CreatedUnseenAAAAAAAAA")) == "CreatedUnseenAAAAAAAAA"
    assert cache.find_by_hmac(SECRET_KEY.hmac("DeletedUnseenAAAAAAAAA")) is None
    other_replica.create(_token("AfterExpiryTokenAAAAAA"))
    eventually(lambda: cache.get("AfterExpiryTokenAAAAAA") is not None)


def test_every_load_of_every_token_runs_inside_the_reload_context_the_first_and_after_a_session_expiry(
    zk_connect: str, zk: ZkConnection, other_replica: ZkTokenStore
) -> None:
    """The composition root pauses the garbage collector around these loads and freezes what they loaded."""
    entered: list[int] = []

    @contextmanager
    def while_reloading() -> Iterator[None]:
        entered.append(len(cache))
        yield

    other_replica.create(_token("ReloadContextAAAAAAAAA"))
    cache = TokenCache(zk, ZkTokenStore(zk), SECRET_KEY, while_reloading=while_reloading)
    cache.start()
    try:
        assert entered == [0] and len(cache) == 1
        _expire_session(zk_connect, zk)
        eventually(lambda: len(entered) == 2)
        assert entered == [0, 1]
    finally:
        cache.stop()


def test_a_zookeeper_restart_keeps_reads_served_meanwhile_and_changes_followed_afterwards(tmp_path: Path) -> None:
    zookeeper = EmbeddedZooKeeper(tmp_path / "zk")
    zookeeper.start()
    connect = f"{zookeeper.connect_string}/kts"
    zk = _connection(connect)
    writer_zk = _connection(connect)
    writer = ZkTokenStore(writer_zk)
    cache = TokenCache(zk, ZkTokenStore(zk), SECRET_KEY)
    try:
        cache.start()
        token = _token("BeforeRestartAAAAAAAAA")
        writer.create(token)
        eventually(lambda: cache.get(token.token_id) is not None)

        zookeeper.stop()
        eventually(lambda: not zk.connected, timeout_s=10)
        stored = cache.get(token.token_id)
        assert stored is not None and stored.token == token
        assert cache.find_by_hmac(SECRET_KEY.hmac(token.token_id)) == token.token_id
        assert [s.token.token_id for s in cache.related_to([BOB])] == [token.token_id]
        assert [s.token for s in cache.tokens()] == [token]

        zookeeper.start()  # same port, same data directory
        eventually(lambda: zk.connected and writer_zk.connected, timeout_s=15)
        writer.create(_token("AfterRestartAAAAAAAAAA"))
        eventually(lambda: cache.get("AfterRestartAAAAAAAAAA") is not None)
        writer.delete_many([(token.token_id, 0, None)])
        eventually(lambda: cache.get(token.token_id) is None)
        assert _ids(cache) == {"AfterRestartAAAAAAAAAA"}
    finally:
        cache.stop()
        writer_zk.stop()
        zk.stop()
        zookeeper.stop()


def test_the_tokens_root_holds_exactly_what_the_cache_shows(
    cache: TokenCache, other_replica: ZkTokenStore, raw_zk: KazooClient
) -> None:
    for index in range(5):
        other_replica.create(_token(f"ManyTokens{index}AAAAAAAAAAA"))
    other_replica.delete_many([("ManyTokens2AAAAAAAAAAA", 0, None)])
    eventually(lambda: _ids(cache) == set(raw_zk.get_children(TokenZNode.ROOT)))
    assert len(cache) == 4


class _OwnWriteDuringReload(ZkTokenStore):
    """Lets a request on this replica renew a token and refresh the cache (as TokenService does after each
    write) while a reload's listing is in flight, then holds the follower's catch-up on that token until the
    test has looked at the cache."""

    def __init__(self, zk: ZkConnection, writer: ZkTokenStore, token_id: str) -> None:
        super().__init__(zk)
        self._writer = writer
        self._token_id = token_id
        self.cache: TokenCache | None = None
        self.armed = False
        self.request_done = threading.Event()
        self.follower_waiting = threading.Event()
        self.release_follower = threading.Event()

    def list_batches(self) -> Iterator[list[LoadedToken]]:
        listed = list(super().list_batches())
        if self.armed:
            self.armed = False
            threading.Thread(target=self._request, name="request", daemon=True).start()
            self.request_done.wait(0.5)  # long enough for the request unless the reload holds it back
        yield from listed

    def _request(self) -> None:
        assert self.cache is not None
        self._writer.change(
            self._token_id, lambda current: TokenChange(current.token.with_expiry(NOW + 2 * DAY), None, Renewal(-1))
        )
        self.cache.refresh(self._token_id)
        self.request_done.set()

    def _hold_follower(self, token_ids: list[str]) -> None:
        if self._token_id in token_ids and threading.current_thread().name == "token-cache":
            self.follower_waiting.set()
            self.release_follower.wait(5)

    def get(self, token_id: str) -> StoredToken | None:
        self._hold_follower([token_id])
        return super().get(token_id)

    def get_many(self, token_ids: list[str]) -> dict[str, StoredToken | None]:
        self._hold_follower(token_ids)
        return super().get_many(token_ids)


def test_a_reload_never_puts_back_a_version_older_than_this_replicas_own_refreshed_write(
    zk_connect: str, zk: ZkConnection, other_replica: ZkTokenStore
) -> None:
    token = _token("OwnWriteDuringReloadAA")
    other_replica.create(token)
    store = _OwnWriteDuringReload(zk, other_replica, token.token_id)
    cache = TokenCache(zk, store, SECRET_KEY)
    store.cache = cache
    cache.start()
    try:
        store.armed = True
        _expire_session(zk_connect, zk)  # the follower reloads everything
        assert store.follower_waiting.wait(10)  # the reload is over; its catch-up on the token is held
        assert store.request_done.wait(5)

        stored = cache.get(token.token_id)
        assert stored is not None
        assert (stored.version, stored.token.expiry_timestamp) == (1, NOW + 2 * DAY)
    finally:
        store.release_follower.set()
        cache.stop()


class _CountingReads(ZkTokenStore):
    """The cache's store, counting the tokens its follower reads back."""

    def __init__(self, zk: ZkConnection) -> None:
        super().__init__(zk)
        self.read: list[str] = []

    def get_many(self, token_ids: list[str]) -> dict[str, StoredToken | None]:
        self.read.extend(token_ids)
        return super().get_many(token_ids)


def test_a_token_created_on_the_caches_own_session_is_read_back_unless_its_writer_installed_it(
    zk: ZkConnection, other_replica: ZkTokenStore
) -> None:
    store = _CountingReads(zk)
    cache = TokenCache(zk, store, SECRET_KEY)
    cache.start()
    try:
        plain = _token("OwnCreateReadBackAAAAA")
        store.create(plain)  # nobody installs it: the follower reads it back, as one from elsewhere
        eventually(lambda: cache.get(plain.token_id) is not None)
        assert store.read == [plain.token_id]

        installed = _token("OwnCreateInstalledAAAA")
        cache.apply(store.create(installed, CreateTerms(installed=True)))  # as TokenQuotas.create does
        last = _token("OtherReplicaAfterAAAAA")
        other_replica.create(last)  # its notification comes after the installed one's: once handled, so is that
        eventually(lambda: cache.get(last.token_id) is not None)

        assert store.read == [plain.token_id, last.token_id]  # the installed token was not read back
        stored = cache.get(installed.token_id)
        assert stored is not None and stored.token == installed
    finally:
        cache.stop()


def test_after_pages_every_token_in_token_id_order_as_tokens_come_and_go(
    cache: TokenCache, other_replica: ZkTokenStore
) -> None:
    ids = [f"Ordered{letter}AAAAAAAAAAAAAA" for letter in "DBECA"]
    for token_id in ids:
        other_replica.create(_token(token_id))
    eventually(lambda: len(cache) == 5)

    def page(after: str | None, count: int) -> list[str]:
        return [stored.token.token_id for stored in cache.after(after, count)]

    ordered = sorted(ids)
    assert page(None, 10) == ordered
    assert page(None, 2) == ordered[:2]
    assert page(ordered[1], 2) == ordered[2:4]
    assert page("OrderedBZ", 10) == ordered[2:]  # a cursor between two ids
    assert page(ordered[-1], 10) == []

    other_replica.change(ordered[2], lambda stored: TokenChange(None, None, EXPIRE_NOW))  # deleted elsewhere
    other_replica.create(_token("OrderedBBAAAAAAAAAAAAA"))
    eventually(lambda: len(cache) == 5 and cache.get(ordered[2]) is None)
    assert page(ordered[1], 2) == ["OrderedBBAAAAAAAAAAAAA", ordered[3]]


def test_requested_and_expired_counts_follow_creates_changes_deletions_and_a_reload(
    zk_connect: str, zk: ZkConnection, cache: TokenCache, other_replica: ZkTokenStore
) -> None:
    other_replica.create(_token("MineAAAAAAAAAAAAAAAAAA", ALICE, expiry=NOW + DAY))
    other_replica.create(_token("MineShortAAAAAAAAAAAAA", ALICE, expiry=NOW + 1000))
    other_replica.create(_token("ForCarolAAAAAAAAAAAAAA", CAROL, requester=ALICE, expiry=NOW + 1000))
    other_replica.create(_token("CarolsAAAAAAAAAAAAAAAA", CAROL))
    eventually(lambda: len(cache) == 4)
    assert (cache.requested_count(ALICE), cache.requested_count(CAROL), cache.requested_count(DAVE)) == (3, 1, 0)
    assert (cache.expired_count(NOW), cache.expired_count(NOW + 1000), cache.expired_count(NOW + 1001)) == (0, 0, 2)

    def renew(stored: StoredToken) -> TokenChange[None]:
        return TokenChange(stored.token.with_expiry(NOW + DAY), None, Renewal(-1))

    other_replica.change("MineShortAAAAAAAAAAAAA", renew)
    eventually(lambda: cache.expired_count(NOW + 1001) == 1)  # renewed: no longer among the expired
    stored = other_replica.get("ForCarolAAAAAAAAAAAAAA")
    assert stored is not None
    other_replica.delete_many([("ForCarolAAAAAAAAAAAAAA", stored.version, None)])
    eventually(lambda: cache.requested_count(ALICE) == 2)
    assert cache.expired_count(NOW + 1001) == 0

    _expire_session(zk_connect, zk)
    other_replica.create(_token("AfterReloadAAAAAAAAAAA", ALICE, expiry=NOW + 1000))
    eventually(lambda: len(cache) == 4)
    assert (cache.requested_count(ALICE), cache.expired_count(NOW + 1001)) == (3, 1)


def test_live_count_counts_owned_and_requested_for_others_never_expired_ones(
    cache: TokenCache, other_replica: ZkTokenStore
) -> None:
    owner = QuotaKey(QuotaKind.OWNER, ALICE)
    requester = QuotaKey(QuotaKind.REQUESTER, ALICE)
    other_replica.create(_token("AliceLiveAAAAAAAAAAAAA", ALICE, expiry=NOW + DAY))
    other_replica.create(_token("AliceShortAAAAAAAAAAAA", ALICE, expiry=NOW + 1000))
    other_replica.create(_token("ForCarolAAAAAAAAAAAAAA", CAROL, requester=ALICE))
    other_replica.create(_token("ForCarolShortAAAAAAAAA", CAROL, requester=ALICE, expiry=NOW + 1000))
    other_replica.create(_token("BobRenewsAliceAAAAAAAA", BOB, renewers=(ALICE,)))
    eventually(lambda: len(cache) == 5)

    assert cache.live_count(owner, NOW) == 2
    assert cache.live_count(requester, NOW) == 2  # its own tokens are not held for others
    assert cache.live_count(QuotaKey(QuotaKind.OWNER, CAROL), NOW) == 0  # made for her by alice: alice's count
    later = NOW + 2000  # two have expired; nothing has deleted them
    assert (cache.live_count(owner, later), cache.live_count(requester, later)) == (1, 1)
    assert cache.live_count(QuotaKey(QuotaKind.OWNER, DAVE), NOW) == 0


def test_the_indexes_match_the_tokens_after_a_reload(
    zk_connect: str, zk: ZkConnection, cache: TokenCache, other_replica: ZkTokenStore
) -> None:
    for n in range(6):
        other_replica.create(_token(f"Reloaded{n}AAAAAAAAAAAAA", ALICE if n % 2 else CAROL, requester=ALICE))
    eventually(lambda: len(cache) == 6)
    owned = QuotaKey(QuotaKind.OWNER, ALICE)
    before = ([stored.token for stored in cache.after(None, 10)], cache.live_count(owned, NOW))

    _expire_session(zk_connect, zk)
    other_replica.create(_token("ReloadedLaterAAAAAAAAA", ALICE))
    eventually(lambda: len(cache) == 7)

    assert [stored.token for stored in cache.after(None, 10)] == sorted(
        [*before[0], _token("ReloadedLaterAAAAAAAAA", ALICE)], key=lambda token: token.token_id
    )
    assert cache.live_count(owned, NOW) == before[1] + 1
    assert cache.live_count(QuotaKey(QuotaKind.REQUESTER, ALICE), NOW) == 3
