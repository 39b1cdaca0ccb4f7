"""``OPEN_ADMISSION`` (app/service/admission.py), the admission of a backend without limits of its own: every write
admitted, nothing charged or settled, bulk deletions cut by size alone, in the order a revocation answers."""

from __future__ import annotations

import pytest

from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.service import admission as admission_module
from app.service.admission import OPEN_ADMISSION, TokenWrite
from tests.unit.fakes import NOW

ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")


def _token(token_id: str, requester: KafkaPrincipal) -> TokenInformation:
    return TokenInformation(token_id, requester, requester, (), NOW, NOW + 1, NOW + 2)


@pytest.mark.parametrize("write", list(TokenWrite))
def test_every_write_is_admitted_and_nothing_is_charged(write: TokenWrite) -> None:
    OPEN_ADMISSION.judge(ALICE, write)
    with OPEN_ADMISSION.turn(ALICE):
        assert OPEN_ADMISSION.charge(ALICE, write) is None
    assert OPEN_ADMISSION.deletion(_token("t", ALICE)) is None
    assert OPEN_ADMISSION.deletion_charges([_token("t", ALICE)]) == []
    OPEN_ADMISSION.settle([None])


def test_deletions_are_cut_by_size_alone_in_requester_then_id_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admission_module, "OPEN_BATCH", 2)
    tokens = [_token("b1", BOB), _token("a2", ALICE), _token("a1", ALICE)]
    batches = OPEN_ADMISSION.deletion_batches(tokens)
    assert [[token.token_id for token in batch] for batch in batches] == [["a1", "a2"], ["b1"]]
