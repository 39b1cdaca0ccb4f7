"""How many children the lists brokers must list hold, read from ZooKeeper (the ``ChildListGauge`` port of
app/storage/zk/capacity.py). Counts come from the parents' Stat (``numChildren``), one pipelined round trip for
both lists, never from listing them: names have fixed lengths, so a count is a size (app/domain/capacity.py).
"""

from __future__ import annotations

from kazoo.exceptions import NoNodeError

from app.domain.capacity import ChildList
from app.storage.zk.connection import ZkConnection
from app.storage.zk.znodes import TokenChangeZNode, TokenZNode

_PATHS = {ChildList.TOKENS: TokenZNode.ROOT, ChildList.TOKEN_CHANGES: TokenChangeZNode.ROOT}


class ZkChildLists:
    def __init__(self, zk: ZkConnection) -> None:
        self._zk = zk

    def entries(self) -> dict[ChildList, int]:
        self._zk.ensure_connected()
        pending = {child_list: self._zk.client.exists_async(path) for child_list, path in _PATHS.items()}
        stats = {child_list: self._zk.wait(result) for child_list, result in pending.items()}
        return {child_list: 0 if stat is None else stat.numChildren for child_list, stat in stats.items()}

    def oldest_notification_created_ms(self) -> int | None:
        """Sequence numbers are zero-padded, so the smallest name is the oldest notification."""
        self._zk.ensure_connected()
        try:
            names = self._zk.wait(self._zk.client.get_children_async(TokenChangeZNode.ROOT))
        except NoNodeError:
            return None
        for name in sorted(names):
            stat = self._zk.wait(self._zk.client.exists_async(f"{TokenChangeZNode.ROOT}/{name}"))
            if stat is not None:  # else purged meanwhile: the next one is the oldest
                return int(stat.ctime)
        return None
