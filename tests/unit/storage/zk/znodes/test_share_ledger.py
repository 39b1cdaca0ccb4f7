"""``/kts/token-shares/<principal>``: golden bytes, the sanitized path, and strict decoding."""

from __future__ import annotations

import pytest

from app.domain.principal import KafkaPrincipal
from app.domain.token_share import ShareLedger
from app.storage.zk.znodes import MalformedZNode, ShareLedgerZNode

LEDGER = ShareLedger(((1_700_000_040_000, 3), (1_700_000_100_000, 1)))
GOLDEN = b'{"version":1,"notifications":[[1700000040000,3],[1700000100000,1]]}'


def test_golden_bytes() -> None:
    assert ShareLedgerZNode.encode(LEDGER) == GOLDEN
    assert ShareLedgerZNode.decode(GOLDEN) == LEDGER
    assert ShareLedgerZNode.encode(ShareLedger()) == b'{"version":1,"notifications":[]}'


def test_the_path_is_the_principal_sanitized_as_kafka_sanitizes_user_names() -> None:
    assert ShareLedgerZNode.path(KafkaPrincipal.user("alice")) == "/kts/token-shares/User%3Aalice"
    assert ShareLedgerZNode.path(KafkaPrincipal("User", "nimbus/host@REALM")) == (
        "/kts/token-shares/User%3Animbus%2Fhost%40REALM"
    )


def test_a_full_ledger_stays_small() -> None:
    minutes = tuple((1_700_000_040_000 + n * 60_000, 10**6) for n in range(17))
    assert len(ShareLedgerZNode.encode(ShareLedger(minutes))) < 500


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xff",
        b"[]",
        b'{"version":2,"notifications":[]}',
        b'{"version":1}',
        b'{"version":1,"notifications":[[1,2,3]]}',
        b'{"version":1,"notifications":[["a",1]]}',
        b'{"version":1,"notifications":[[1,-1]]}',
        b'{"version":1,"notifications":[[2,1],[1,1]]}',
    ],
)
def test_malformed(data: bytes) -> None:
    with pytest.raises(MalformedZNode):
        ShareLedgerZNode.decode(data)
