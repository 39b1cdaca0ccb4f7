"""ACL resource znodes with compare-and-set, each change written with its notification in one transaction."""

from __future__ import annotations

import logging
from collections.abc import Callable

from kazoo.exceptions import NoNodeError

from app.domain.acl import AccessControlEntry, PatternType, ResourcePattern
from app.storage.zk.compare_and_set import compare_and_set
from app.storage.zk.connection import ZkConnection
from app.storage.zk.errors import Subject
from app.storage.zk.transaction import ABSENT, ChangeTransaction
from app.storage.zk.znodes import AclChangeZNode, AclZNode, MalformedZNode

log = logging.getLogger(__name__)

Entries = frozenset[AccessControlEntry]


class ZkAclStore:
    def __init__(self, zk: ZkConnection) -> None:
        self._zk = zk

    def read(self, pattern: ResourcePattern) -> tuple[Entries, int]:
        """The entries of one resource znode and its version (-1 when the znode does not exist)."""
        path = AclZNode.path(pattern)
        found = self._zk.get(path)
        if found is None:
            return frozenset(), ABSENT
        data, stat = found
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
        self, pattern: ResourcePattern, edit: Callable[[Entries], Entries], intent: int | None = None
    ) -> tuple[Entries, Entries]:
        """Apply ``edit`` to the resource's entries with compare-and-set; returns (before, after).

        An empty result deletes the znode, as Kafka does. No change, no write and no notification.
        """
        subject = Subject(f"The ACLs of {pattern.resource_type}:{pattern.name}", "ACL")

        def attempt() -> tuple[Entries, Entries]:
            before, version = self.read(pattern)
            after = frozenset(edit(before))
            if after == before:
                return before, after
            transaction = ChangeTransaction(self._zk)
            transaction.write(AclZNode.path(pattern), AclZNode.encode(after) if after else None, version)
            transaction.notify(AclChangeZNode.prefix(pattern.pattern_type), AclChangeZNode.encode(pattern))
            transaction.mark_intent(intent)
            transaction.commit(subject)
            return before, after

        return compare_and_set(attempt, subject)
