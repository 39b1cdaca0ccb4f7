"""The cluster's secret key fingerprint in ``/kts/secret-key-fingerprint``, written once, read at every start."""

from __future__ import annotations

from kazoo.exceptions import NodeExistsError

from app.domain.secret_fingerprint import SecretFingerprint, SecretKeyMismatch
from app.storage.zk.connection import ZkConnection
from app.storage.zk.znodes import MalformedZNode, SecretFingerprintZNode


class ZkSecretFingerprintStore:
    PATH = SecretFingerprintZNode.PATH

    def __init__(self, zk: ZkConnection) -> None:
        self._zk = zk

    def record(self, fingerprint: SecretFingerprint) -> SecretFingerprint:
        """Create the znode unless it exists (race-safe: ZooKeeper's create fails for all but one replica), then
        return the fingerprint it holds."""
        self._zk.ensure_connected()
        try:
            self._zk.wait(
                self._zk.client.create_async(
                    self.PATH, SecretFingerprintZNode.encode(fingerprint), acl=self._zk.acl_for(self.PATH)
                )
            )
            return fingerprint
        except NodeExistsError:
            pass
        answer = self._zk.get(self.PATH)
        if answer is None:  # deleted between the two requests: someone is resetting it; try once more
            return self.record(fingerprint)
        try:
            return SecretFingerprintZNode.decode(answer[0])
        except MalformedZNode as exc:
            raise SecretKeyMismatch(
                f"ZooKeeper's {self.PATH} holds no fingerprint kts can read ({exc}); delete it only if every "
                "replica and broker uses the same delegation.token.secret.key"
            ) from None
