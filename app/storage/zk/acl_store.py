"""ACL resource znodes with compare-and-set, each change written with its notification in one transaction."""

from __future__ import annotations

import logging
from collections.abc import Callable

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError

from app.domain.acl import AccessControlEntry, PatternType, ResourcePattern
from app.domain.errors import ConcurrentModification, StoreUnavailable
from app.storage.zk.connection import ZkConnection
from app.storage.zk.znodes import AclChangeZNode, AclZNode, MalformedZNode

log = logging.getLogger(__name__)

Entries = frozenset[AccessControlEntry]
_MAX_ATTEMPTS = 8


class ZkAclStore:
    def __init__(self, zk: ZkConnection) -> None:
        self._zk = zk

    def read(self, pattern: ResourcePattern) -> tuple[Entries, int]:
        """The entries of one resource znode and its version (-1 when the znode does not exist)."""
        self._zk.ensure_connected()
        path = AclZNode.path(pattern)
        try:
            data, stat = self._zk.wait(self._zk.client.get_async(path))
        except NoNodeError:
            return frozenset(), -1
        try:
            return AclZNode.decode(data), stat.version
        except MalformedZNode as exc:
            # Like the broker, treat an unreadable znode as holding no ACLs, and say so.
            log.warning("ignoring unreadable ACL znode %s: %s", path, exc)
            return frozenset(), stat.version

    def load_all(self) -> dict[ResourcePattern, Entries]:
        """Every ACL resource znode, read with pipelined requests."""
        self._zk.ensure_connected()
        client = self._zk.client
        patterns: list[ResourcePattern] = []
        for pattern_type in PatternType:
            listings = [
                (kind, client.get_children_async(AclZNode.type_root(pattern_type, kind)))
                for kind in AclZNode.RESOURCE_TYPES
            ]
            for kind, listing in listings:
                try:
                    names = self._zk.wait(listing)
                except NoNodeError:
                    continue
                patterns += [ResourcePattern(kind, name, pattern_type) for name in names]
        pending = [(pattern, client.get_async(AclZNode.path(pattern))) for pattern in patterns]
        loaded: dict[ResourcePattern, Entries] = {}
        for pattern, result in pending:
            try:
                data, _ = self._zk.wait(result)
                loaded[pattern] = AclZNode.decode(data)
            except NoNodeError:
                continue
            except MalformedZNode as exc:
                log.warning("ignoring unreadable ACL znode for %s: %s", pattern, exc)
        return loaded

    def change(
        self, pattern: ResourcePattern, edit: Callable[[Entries], Entries], intent: str | None = None
    ) -> tuple[Entries, Entries]:
        """Apply ``edit`` to the resource's entries with compare-and-set; returns (before, after).

        An empty result deletes the znode, as Kafka does. No change, no write and no notification.
        """
        path = AclZNode.path(pattern)
        for _ in range(_MAX_ATTEMPTS):
            before, version = self.read(pattern)
            after = frozenset(edit(before))
            if after == before and (version >= 0 or not after):
                return before, after
            transaction = self._zk.client.transaction()
            if version < 0:
                transaction.create(path, AclZNode.encode(after), acl=self._zk.acl_for(path))
            elif after:
                transaction.set_data(path, AclZNode.encode(after), version=version)
            else:
                transaction.delete(path, version=version)
            change = AclChangeZNode.prefix(pattern.pattern_type)
            transaction.create(change, AclChangeZNode.encode(pattern), acl=self._zk.acl_for(change), sequence=True)
            if intent is not None:
                transaction.create(intent, b"", acl=self._zk.acl_for(intent))
            failure = self._zk.commit(transaction)
            if failure is None:
                return before, after
            if not isinstance(failure, BadVersionError | NodeExistsError | NoNodeError | NotEmptyError):
                raise StoreUnavailable(f"ZooKeeper refused the ACL change: {type(failure).__name__}.")
        raise ConcurrentModification(f"The ACLs of {pattern.resource_type}:{pattern.name} kept changing; retry.")
