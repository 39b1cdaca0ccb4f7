"""The catalogue of znodes kts reads and writes, as Kafka's ``ZkData.scala`` keeps its own: each znode family is
one object with its path(s), ``encode`` and ``decode``. Paths are relative to the ``zookeeper.connect`` chroot.

- ``TokenZNode``, ``TokenChangeZNode``       (tokens.py)        /delegation_token/...
- ``UserConfigZNode``, ``ConfigChangeZNode`` (user_configs.py)  /config/users, /config/changes
- ``AclZNode``, ``AclChangeZNode``           (acls.py)          /kafka-acl..., /kafka-acl-changes...
- ``ClusterIdZNode``, ``BrokerIdsZNode``,      (cluster.py)       /cluster/id, /brokers/ids, /controller,
  ``ControllerZNode``, ``ControllerEpochZNode``,                  /controller_epoch, /migration (read only:
  ``MigrationZNode``                                              who runs the cluster, its migration to KRaft)
- ``KtsZNodes``, ``SecretFingerprintZNode``,  (kts.py)           /kts: audit intents, sweeper election, quota guards,
  ``ShareLedgerZNode``                                           share ledgers, secret key fingerprint, lockouts
- ``ZnodeAcls``                              (znode_acls.py)    the ZooKeeper ACL each znode gets

Decoders raise ``MalformedZNode``. Wire formats live here and nowhere else (golden-byte tests in
tests/unit/storage/zk/znodes).
"""

from __future__ import annotations

from app.domain.acl import PatternType
from app.storage.zk.znodes.acls import AclChangeZNode, AclZNode
from app.storage.zk.znodes.cluster import (
    BrokerIdsZNode,
    ClusterIdZNode,
    ControllerEpochZNode,
    ControllerZNode,
    MigrationZNode,
)
from app.storage.zk.znodes.kts import KtsZNodes, SecretFingerprintZNode, ShareLedgerZNode
from app.storage.zk.znodes.malformed import MalformedZNode
from app.storage.zk.znodes.tokens import TokenChangeZNode, TokenZNode
from app.storage.zk.znodes.user_configs import ConfigChangeZNode, UserConfigZNode
from app.storage.zk.znodes.znode_acls import ZnodeAcls

# Created on start so every later write can assume its parent exists, as brokers do.
PERSISTENT_PATHS = (
    KtsZNodes.AUDIT_INTENTS,
    KtsZNodes.SWEEPER_ELECTION,
    KtsZNodes.LOCKOUTS,
    KtsZNodes.OWNER_QUOTAS,
    KtsZNodes.REQUESTER_QUOTAS,
    KtsZNodes.TOKEN_SHARES,
    TokenZNode.ROOT,
    TokenChangeZNode.ROOT,
    UserConfigZNode.ROOT,
    ConfigChangeZNode.ROOT,
    AclChangeZNode.LITERAL_ROOT,
    AclChangeZNode.PREFIXED_ROOT,
    *(
        AclZNode.type_root(pattern_type, kind)
        for pattern_type in (PatternType.LITERAL, PatternType.PREFIXED)
        for kind in AclZNode.RESOURCE_TYPES
    ),
)

__all__ = [
    "PERSISTENT_PATHS",
    "AclChangeZNode",
    "AclZNode",
    "BrokerIdsZNode",
    "ClusterIdZNode",
    "ConfigChangeZNode",
    "ControllerEpochZNode",
    "ControllerZNode",
    "KtsZNodes",
    "MalformedZNode",
    "MigrationZNode",
    "SecretFingerprintZNode",
    "ShareLedgerZNode",
    "TokenChangeZNode",
    "TokenZNode",
    "UserConfigZNode",
    "ZnodeAcls",
]
