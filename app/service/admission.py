"""The admission strategy: what a backend limits about token writes beyond the token rules and quotas.

The token services (app/service/tokens.py, app/service/revocation.py) call one ``Admission`` for every create,
renew, expire and deletion, in three steps:

1. ``judge``: the first judgement, before anything is written (a refusal is audited as one);
2. ``charge`` / ``deletion`` / ``deletion_charges``: what the admission writes with the change (handed to the
   token store with it, opaque to the services), taken inside ``turn``, so that one principal's writes on this
   replica do not make each other's compare-and-set fail;
3. ``settle``: once the write that carried a charge succeeded.

It also says how a bulk deletion is cut into batches (``deletion_batches``), since what fits one write is the
backend's. A backend without such limits supplies ``OPEN_ADMISSION``: every write is admitted and nothing is
charged (the Kafka protocol, whose controller guards its own lists). The ZooKeeper backend's admission, the
capacity guard and the write shares, is app/storage/zk/admission.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from enum import Enum
from typing import Protocol

from app.domain.principal import KafkaPrincipal
from app.domain.revocation import deletion_batches
from app.domain.token import TokenInformation

# Tokens a bulk deletion asks for per batch where the backend sets no other size (each batch is one audit commit).
OPEN_BATCH = 500


class TokenWrite(Enum):
    """A token write as an admission judges it. Deleting a token (an expire now, a revocation, the sweep) is never
    judged, so that revocation always works: it is only charged."""

    CREATE = "create"
    RENEW = "renew"  # also an expire that extends a token's life: a renew by another name, admitted as one
    EXPIRE = "expire"  # an expire that shortens a token's life (and keeps it)


class WriteCharge(Protocol):
    """What an admission writes together with one token write (ZooKeeper: a charge to a principal's share
    ledger, in the same transaction). Opaque to the services: they hand it to the token store with the change."""


class Admission(Protocol):
    def judge(self, principal: KafkaPrincipal, write: TokenWrite) -> None:
        """The first judgement of ``principal``'s write, before anything is written: raises a KtsError to refuse."""
        ...

    def turn(self, principal: KafkaPrincipal) -> AbstractContextManager[None]:
        """Writes charged to ``principal`` on this replica take turns inside this block."""
        ...

    def charge(self, principal: KafkaPrincipal, write: TokenWrite) -> WriteCharge | None:
        """The charge written with ``principal``'s write, judged exactly as it is written (None: nothing)."""
        ...

    def deletion(self, token: TokenInformation) -> WriteCharge | None:
        """The charge written with the deletion of ``token`` (never refused; None: nothing)."""
        ...

    def deletion_charges(self, tokens: Iterable[TokenInformation]) -> list[WriteCharge]:
        """The charges written with the deletion of ``tokens`` in one batch (never refused)."""
        ...

    def settle(self, charges: Iterable[WriteCharge | None]) -> None:
        """After the write that carried ``charges`` succeeded."""
        ...

    def deletion_batches(self, tokens: Iterable[TokenInformation]) -> list[list[TokenInformation]]:
        """``tokens`` cut into the batches a bulk deletion writes one at a time."""
        ...


class _OpenAdmission:
    """No limit beyond the rules: every write admitted, nothing charged."""

    def judge(self, principal: KafkaPrincipal, write: TokenWrite) -> None:
        return None

    def turn(self, principal: KafkaPrincipal) -> AbstractContextManager[None]:
        return nullcontext()

    def charge(self, principal: KafkaPrincipal, write: TokenWrite) -> WriteCharge | None:
        return None

    def deletion(self, token: TokenInformation) -> WriteCharge | None:
        return None

    def deletion_charges(self, tokens: Iterable[TokenInformation]) -> list[WriteCharge]:
        return []

    def settle(self, charges: Iterable[WriteCharge | None]) -> None:
        return None

    def deletion_batches(self, tokens: Iterable[TokenInformation]) -> list[list[TokenInformation]]:
        return deletion_batches(tokens, size=OPEN_BATCH)


OPEN_ADMISSION: Admission = _OpenAdmission()
