"""``/kts/secret-key-fingerprint``: golden bytes and strict decoding."""

from __future__ import annotations

import pytest

from app.domain.secret_fingerprint import SecretFingerprint
from app.storage.zk.znodes import MalformedZNode, SecretFingerprintZNode

FINGERPRINT = SecretFingerprint(b"\x01" * 32, b"\x02" * 32)
GOLDEN = (
    b'{"version":1,"algorithm":"HMAC-SHA256","salt":"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=",'
    b'"fingerprint":"AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI="}'
)


def test_golden_bytes() -> None:
    assert SecretFingerprintZNode.PATH == "/kts/secret-key-fingerprint"
    assert SecretFingerprintZNode.encode(FINGERPRINT) == GOLDEN
    assert SecretFingerprintZNode.decode(GOLDEN) == FINGERPRINT


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"secret",
        b"[]",
        b'{"version":2,"algorithm":"HMAC-SHA256","salt":"AQ==","fingerprint":"AQ=="}',
        b'{"version":1,"algorithm":"MD5","salt":"AQ==","fingerprint":"AQ=="}',
        b'{"version":1,"algorithm":"HMAC-SHA256","salt":"AQ==","fingerprint":"AQ=="}',
        b'{"version":1,"algorithm":"HMAC-SHA256","salt":"!!","fingerprint":"AQ=="}',
        b'{"version":1,"algorithm":"HMAC-SHA256"}',
    ],
)
def test_malformed(data: bytes) -> None:
    with pytest.raises(MalformedZNode):
        SecretFingerprintZNode.decode(data)
