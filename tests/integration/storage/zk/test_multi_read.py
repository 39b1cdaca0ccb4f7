"""multiRead on a real ZooKeeper: many znodes in one round trip, per-path errors, chroots, and the token
store's fallback to one request per token when a server does not answer it."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.service.ports import Renewal, TokenChange
from app.storage.zk import connection as connection_module
from app.storage.zk.connection import MULTI_READ_BATCH, ZkConnection
from app.storage.zk.multi_read import MultiReadNotSupported, read_many_async
from app.storage.zk.token_store import ZkTokenStore


def _token(n: int) -> TokenInformation:
    owner = KafkaPrincipal.user(f"user{n}")
    return TokenInformation(f"MultiReadToken{n:08d}", owner, owner, (), 1000, 2000 + n, 9000)


def test_answers_each_path_in_order_with_data_stat_or_error(zk: ZkConnection, raw_zk: KazooClient) -> None:
    raw_zk.create("/m/a", b"alpha", makepath=True)
    raw_zk.create("/m/b", b"")
    raw_zk.set("/m/b", b"beta")  # version 1

    answers = read_many_async(zk.client, ["/m/a", "/m/missing", "/m/b"]).get(timeout=10)

    assert [type(answer) for answer in answers] == [tuple, NoNodeError, tuple]
    (data_a, stat_a), _, (data_b, stat_b) = answers
    assert (data_a, stat_a.version) == (b"alpha", 0)
    assert (data_b, stat_b.version) == (b"beta", 1)


def test_paths_are_relative_to_the_chroot(zk: ZkConnection, raw_zk: KazooClient, zk_connect: str) -> None:
    raw_zk.create("/inside", b"in the chroot")
    hosts = zk_connect.partition("/")[0]
    outside = KazooClient(hosts=hosts)
    outside.start(10)
    try:
        outside.create("/inside", b"at the root")
        [(data, _)] = read_many_async(zk.client, ["/inside"]).get(timeout=10)
        assert data == b"in the chroot"
    finally:
        outside.delete("/inside")
        outside.stop()


def test_store_reads_more_tokens_than_one_batch_and_reports_missing_ones(zk: ZkConnection) -> None:
    store = ZkTokenStore(zk)
    tokens = [_token(n) for n in range(MULTI_READ_BATCH * 2 + 7)]
    for token in tokens:
        store.create(token)

    found = store.get_many([token.token_id for token in tokens] + ["MultiReadMissingAAAAAA"])

    assert found.pop("MultiReadMissingAAAAAA") is None
    assert {token_id: stored.token if stored else None for token_id, stored in found.items()} == {
        token.token_id: token for token in tokens
    }
    assert sorted(stored.token.token_id for stored in store.list()) == sorted(t.token_id for t in tokens)


def test_falls_back_to_one_read_per_znode_when_the_server_does_not_answer_multi_read(
    zk: ZkConnection, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A ZooKeeper older than 3.6 cannot be started here; its refusal is what reaches the store."""

    class _Refused:
        def get(self, timeout: float) -> Any:
            raise MultiReadNotSupported("unexpected operation type 0 in a multiRead answer")

    calls = []

    def refusing(client: KazooClient, paths: list[str]) -> _Refused:
        calls.append(paths)
        return _Refused()

    monkeypatch.setattr(connection_module, "read_many_async", refusing)
    store = ZkTokenStore(zk)
    token = _token(1)
    store.create(token)

    with caplog.at_level(logging.WARNING):
        first = store.get_many([token.token_id, "MultiReadMissingAAAAAA"])
        second = store.list()

    assert first[token.token_id] is not None and first["MultiReadMissingAAAAAA"] is None
    assert [stored.token for stored in second] == [token]
    assert len(calls) == 1  # asked once, then remembered
    assert "does not answer multiRead" in caplog.text


def test_read_batches_answers_in_order_with_a_bounded_read_ahead(
    zk: ZkConnection, raw_zk: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Start-up decodes the tokens a batch at a time: no more than READ_WINDOW batches are asked ahead of the one
    consumed, so the raw answers of a whole list are never held at once."""
    monkeypatch.setattr(connection_module, "MULTI_READ_BATCH", 3)
    monkeypatch.setattr(connection_module, "READ_WINDOW", 2)
    paths = [f"/batches/z{n:02d}" for n in range(11)]
    for n, path in enumerate(paths):
        raw_zk.create(path, f"data {n}".encode(), makepath=True)
    paths.insert(4, "/batches/missing")
    outstanding = []
    most = 0

    class _Counted:
        def __init__(self, result: Any) -> None:
            self._result = result

        def get(self, timeout: float) -> Any:
            outstanding.remove(self)
            return self._result.get(timeout=timeout)

    def counted(client: KazooClient, batch: list[str]) -> _Counted:
        nonlocal most
        answer = _Counted(read_many_async(client, batch))
        outstanding.append(answer)
        most = max(most, len(outstanding))
        return answer

    monkeypatch.setattr(connection_module, "read_many_async", counted)

    batches = list(zk.read_batches(paths))

    assert [len(batch) for batch in batches] == [3, 3, 3, 3]
    answers = [answer for batch in batches for answer in batch]
    assert isinstance(answers[4], NoNodeError)
    assert [answer[0] for answer in answers if not isinstance(answer, Exception)] == [
        f"data {n}".encode() for n in range(11)
    ]
    assert most <= 2
    assert list(zk.read_batches([])) == []


def test_read_batches_falls_back_to_one_read_per_znode(
    zk: ZkConnection, raw_zk: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refusing(client: KazooClient, paths: list[str]) -> Any:
        raise MultiReadNotSupported("unexpected operation type 0 in a multiRead answer")

    monkeypatch.setattr(connection_module, "read_many_async", refusing)
    monkeypatch.setattr(connection_module, "MULTI_READ_BATCH", 2)
    for n in range(5):
        raw_zk.create(f"/fallback/z{n}", str(n).encode(), makepath=True)

    batches = list(zk.read_batches([f"/fallback/z{n}" for n in range(5)]))

    assert [[answer[0] for answer in batch] for batch in batches] == [[b"0", b"1"], [b"2", b"3"], [b"4"]]


def test_version_batches_answer_data_and_version_in_order(
    zk: ZkConnection, raw_zk: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Start-up's reads: the data and version of each znode (not its Stat), errors in place, batch by batch."""
    monkeypatch.setattr(connection_module, "MULTI_READ_BATCH", 2)
    raw_zk.create("/versions/a", b"alpha", makepath=True)
    raw_zk.create("/versions/b", b"")
    raw_zk.set("/versions/b", b"beta")
    raw_zk.set("/versions/b", b"beta again")  # version 2
    raw_zk.create("/versions/c", b"gamma")

    batches = list(zk.read_version_batches(["/versions/a", "/versions/missing", "/versions/b", "/versions/c"]))

    assert len(batches) == 2
    (a, missing), (b, c) = batches
    assert (a, b, c) == ((b"alpha", 0), (b"beta again", 2), (b"gamma", 0))
    assert isinstance(missing, NoNodeError)
    # The same znodes named in their folder (start-up's reads of the token folder), chrooted as the paths are.
    named = list(zk.read_version_batches(["a", "missing", "b", "c"], "/versions/"))
    assert [answer for batch in named for answer in batch if not isinstance(answer, Exception)] == [a, b, c]
    assert isinstance(named[0][1], NoNodeError)


def test_version_batches_fall_back_to_one_read_per_znode(
    zk: ZkConnection, raw_zk: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refusing(client: KazooClient, paths: list[str]) -> Any:
        raise MultiReadNotSupported("unexpected operation type 0 in a multiRead answer")

    monkeypatch.setattr(connection_module, "read_many_async", refusing)
    monkeypatch.setattr(connection_module, "MULTI_READ_BATCH", 2)
    for n in range(3):
        raw_zk.create(f"/version-fallback/z{n}", str(n).encode(), makepath=True)

    batches = list(zk.read_version_batches([f"/version-fallback/z{n}" for n in (0, 1, 2, 9)]))

    assert batches[0] == [(b"0", 0), (b"1", 0)]
    assert batches[1][0] == (b"2", 0) and isinstance(batches[1][1], NoNodeError)
    named = list(zk.read_version_batches(["z0", "z1", "z2", "z9"], "/version-fallback/"))
    assert named[0] == batches[0] and named[1][0] == batches[1][0] and isinstance(named[1][1], NoNodeError)


def test_store_answers_a_known_state_still_at_its_version_and_reads_a_changed_one(zk: ZkConnection) -> None:
    """The sweep passes its cache's states: one whose znode is still at that version is answered as given (not
    decoded again); one written since is decoded from what is stored now."""
    store = ZkTokenStore(zk)
    unchanged, renewed = _token(1), _token(2)
    held = {token.token_id: store.create(token) for token in (unchanged, renewed)}
    now = store.change(renewed.token_id, lambda stored: TokenChange(stored.token.with_expiry(5000), None, Renewal(-1)))[
        0
    ]

    found = store.get_many([unchanged.token_id, renewed.token_id, "MultiReadMissingAAAAAA"], held)

    assert found[unchanged.token_id] is held[unchanged.token_id]
    assert found[renewed.token_id] == now and now is not None and now.token.expiry_timestamp == 5000
    assert found["MultiReadMissingAAAAAA"] is None
