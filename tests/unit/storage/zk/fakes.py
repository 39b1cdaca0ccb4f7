"""In-memory fakes of the ZooKeeper backend's own ports (the capacity guard's child-list gauge), and its admission
over them, for the unit tests of the capacity guard, the write shares and the sweeper."""

from __future__ import annotations

from app.domain.authorization import Authorizer
from app.domain.capacity import CapacityPolicy, ChildList
from app.domain.clock import Clock
from app.domain.token_share import SharePolicy
from app.service.ports import TokenView
from app.storage.zk.admission import ZkAdmission
from app.storage.zk.capacity import CapacityGuard
from app.storage.zk.token_shares import TokenShares

CAPACITY = CapacityPolicy(10_000)


class FakeChildLists:
    """The child lists' sizes as a test sets them (``counts``), counting how often they are read."""

    def __init__(self, tokens: int = 0, changes: int = 0, oldest_ms: int | None = None) -> None:
        self.counts = {ChildList.TOKENS: tokens, ChildList.TOKEN_CHANGES: changes}
        self.oldest_ms = oldest_ms
        self.reads = 0
        self.oldest_reads = 0

    def entries(self) -> dict[ChildList, int]:
        self.reads += 1
        return dict(self.counts)

    def oldest_notification_created_ms(self) -> int | None:
        self.oldest_reads += 1
        return self.oldest_ms


def zk_admission(
    view: TokenView,
    *,
    clock: Clock,
    authorizer: Authorizer,
    shares: SharePolicy = SharePolicy(0),  # noqa: B008 - frozen
    gauge: FakeChildLists | None = None,
    capacity: CapacityPolicy = CAPACITY,
) -> ZkAdmission:
    """The ZooKeeper admission over ``view``, with no share and room to spare unless told otherwise."""
    guard = CapacityGuard(gauge or FakeChildLists(), capacity, clock=clock, next_expiry_ms=lambda: None)
    return ZkAdmission(guard, TokenShares(shares, view, clock=clock, authorizer=authorizer), authorizer=authorizer)
