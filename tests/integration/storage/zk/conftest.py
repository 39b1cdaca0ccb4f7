"""Fixtures of the ZooKeeper storage tests: a started ``ZkConnection`` to the suite's real ZooKeeper."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.storage.zk.connection import ZkConnection


@pytest.fixture
def zk(zk_connect: str) -> Iterator[ZkConnection]:
    connection = ZkConnection(zk_connect, session_timeout_ms=6000)
    connection.start()
    yield connection
    connection.stop()
