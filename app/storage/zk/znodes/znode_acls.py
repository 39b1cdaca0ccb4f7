"""The ZooKeeper ACL each znode kts creates gets, chosen as Kafka brokers choose it (``ZkData.defaultAcls``).

With ``zookeeper.set.acl=false`` every znode is open to the world, as brokers make it. With ``true``, the
creator (the identity kts authenticated as: ``sasl:<user>`` or ``x509:<subject>``) gets every permission,
and the world may read everything except the sensitive subtrees: token znodes, SCRAM credentials and broker
configs (Kafka's ``SensitiveRootPaths``), and kts's own ``/kts`` znodes (audit intents, the sweeper
election), which no broker or tool needs to read.
"""

from __future__ import annotations

from kazoo.security import ACL, CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

from app.storage.zk.znodes.kts import KtsZNodes
from app.storage.zk.znodes.tokens import TokenZNode
from app.storage.zk.znodes.user_configs import UserConfigZNode

CONFIG_BROKERS = "/config/brokers"  # kts never writes it; named for this policy
SENSITIVE_ROOTS = (UserConfigZNode.ROOT, CONFIG_BROKERS, TokenZNode.ROOT, KtsZNodes.ROOT)


def is_sensitive(path: str) -> bool:
    """``path`` (relative to the chroot) is a sensitive root or lies under one. Kafka's ``sensitivePath`` tests
    a plain string prefix; kts compares whole path components, so a chroot named ``/kts-prod`` is not taken
    for ``/kts`` (the two differ on no znode Kafka or kts writes)."""
    return any(path == root or path.startswith(root + "/") for root in SENSITIVE_ROOTS)


class ZnodeAcls:
    """The ACL policy of one ZooKeeper session."""

    def __init__(self, *, secure: bool) -> None:
        self.secure = secure

    def for_path(self, path: str) -> list[ACL]:
        if not self.secure:
            return list(OPEN_ACL_UNSAFE)
        if is_sensitive(path):
            return list(CREATOR_ALL_ACL)
        return [*CREATOR_ALL_ACL, *READ_ACL_UNSAFE]

    @property
    def default(self) -> list[ACL]:
        """For znodes whose path kts does not choose (kazoo recipes such as the sweeper election): the
        strictest policy, so nothing unlisted is ever world-readable."""
        return list(CREATOR_ALL_ACL) if self.secure else list(OPEN_ACL_UNSAFE)
