"""ZkSecretFingerprintStore on a real ZooKeeper: written once, whoever races, and never the secret."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from app.domain.secret_fingerprint import SecretFingerprint, SecretKeyMismatch
from app.domain.token_secret import TokenSecret
from app.storage.zk.assembly import ensure_cluster_secret
from app.storage.zk.connection import ZkConnection
from app.storage.zk.secret_fingerprint_store import ZkSecretFingerprintStore

SECRET = "the-brokers-secret-key"


@pytest.fixture
def connections(zk_connect: str) -> Iterator[list[ZkConnection]]:
    opened = [ZkConnection(zk_connect, session_timeout_ms=6000) for _ in range(4)]
    for connection in opened:
        connection.start()
    yield opened
    for connection in opened:
        connection.stop()


def test_first_record_is_kept_and_returned_to_every_later_one(connections: list[ZkConnection]) -> None:
    store = ZkSecretFingerprintStore(connections[0])
    first = SecretFingerprint.of(TokenSecret(SECRET), b"\x01" * 32)
    second = SecretFingerprint.of(TokenSecret("another"), b"\x02" * 32)
    assert store.record(first) == first
    assert ZkSecretFingerprintStore(connections[1]).record(second) == first


def test_racing_replicas_all_see_one_fingerprint(connections: list[ZkConnection]) -> None:
    results: list[SecretFingerprint] = []
    barrier = threading.Barrier(len(connections))

    def record(index: int, connection: ZkConnection) -> None:
        barrier.wait()
        results.append(ZkSecretFingerprintStore(connection).record(SecretFingerprint(bytes([index]) * 32, b"f" * 32)))

    threads = [threading.Thread(target=record, args=(i, c)) for i, c in enumerate(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(results) == len(connections) and len(set(results)) == 1


def test_same_secret_passes_another_is_refused_and_the_znode_holds_no_secret(
    connections: list[ZkConnection], raw_zk: KazooClient
) -> None:
    ensure_cluster_secret(connections[0], TokenSecret(SECRET))
    ensure_cluster_secret(connections[1], TokenSecret(SECRET))
    with pytest.raises(SecretKeyMismatch, match=r"^delegation\.token\.secret\.key differs"):
        ensure_cluster_secret(connections[2], TokenSecret(SECRET + "-rotated"))
    data, _ = raw_zk.get(ZkSecretFingerprintStore.PATH)
    assert SECRET.encode() not in data


def test_an_unreadable_fingerprint_refuses_the_start(connections: list[ZkConnection], raw_zk: KazooClient) -> None:
    raw_zk.ensure_path("/kts")
    raw_zk.create(ZkSecretFingerprintStore.PATH, b"garbage")
    with pytest.raises(SecretKeyMismatch, match="/kts/secret-key-fingerprint"):
        ensure_cluster_secret(connections[0], TokenSecret(SECRET))
