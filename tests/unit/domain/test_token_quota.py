"""The per-user token quota rules (app/domain/token_quota.py): which counter a create is charged to (always
its requester's: a KIP-373 requester cannot fill the owner's quota), what counts against each, and the
refusal's sentence (the caller's own figures only)."""

from __future__ import annotations

import pytest

from app.domain.errors import TokenQuotaExceeded
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey, QuotaKind, TokenQuota, counts_against, ensure_within

NOW = 1_700_000_000_000
ALICE = KafkaPrincipal.user("alice")
NIMBUS = KafkaPrincipal.user("nimbus")
OWNER = QuotaKey(QuotaKind.OWNER, ALICE)
REQUESTER = QuotaKey(QuotaKind.REQUESTER, NIMBUS)


def _token(
    owner: KafkaPrincipal = ALICE, requester: KafkaPrincipal | None = None, expiry: int = NOW + 1
) -> TokenInformation:
    return TokenInformation("tok", owner, requester or owner, (), NOW - 10, expiry, NOW + 100)


def test_a_create_for_oneself_is_charged_to_the_owner_quota_only() -> None:
    assert TokenQuota(5, 5).keys(_token(), requester_is_super_user=False) == [OWNER]


def test_a_create_for_another_owner_is_charged_to_the_requester_quota_only_never_the_owners() -> None:
    assert TokenQuota(5, 5).keys(_token(requester=NIMBUS), requester_is_super_user=False) == [REQUESTER]


@pytest.mark.parametrize(("per_owner", "per_requester", "expected"), [(0, 5, [REQUESTER]), (5, 0, []), (0, 0, [])])
def test_zero_is_no_limit_and_charges_nothing(per_owner: int, per_requester: int, expected: list[QuotaKey]) -> None:
    quota = TokenQuota(per_owner, per_requester)
    assert quota.keys(_token(requester=NIMBUS), requester_is_super_user=False) == expected


def test_super_users_are_charged_unless_exempt() -> None:
    token = _token(requester=NIMBUS)
    assert TokenQuota(5, 5).keys(token, requester_is_super_user=True) == [REQUESTER]
    assert TokenQuota(5, 5).keys(_token(), requester_is_super_user=True) == [OWNER]
    assert TokenQuota(5, 5, exempt_super_users=True).keys(token, requester_is_super_user=True) == []
    assert TokenQuota(5, 5, exempt_super_users=True).keys(token, requester_is_super_user=False) == [REQUESTER]


def test_negative_quotas_are_refused() -> None:
    with pytest.raises(ValueError, match="0 \\(no limit\\) or more"):
        TokenQuota(-1, 0)


def test_what_counts_against_each_quota() -> None:
    assert counts_against(OWNER, _token(), NOW)
    assert not counts_against(OWNER, _token(requester=NIMBUS), NOW)  # owned, but made by another: not alice's
    assert not counts_against(OWNER, _token(owner=NIMBUS), NOW)
    assert counts_against(REQUESTER, _token(requester=NIMBUS), NOW)
    assert not counts_against(REQUESTER, _token(owner=NIMBUS), NOW)  # its own token is not held for others


def test_expired_tokens_never_count() -> None:
    assert counts_against(OWNER, _token(expiry=NOW), NOW)  # at its expiry instant it may still be renewed
    assert not counts_against(OWNER, _token(expiry=NOW - 1), NOW)
    assert not counts_against(REQUESTER, _token(requester=NIMBUS, expiry=NOW - 1), NOW)


def test_within_the_limit_passes_and_at_it_refuses_naming_quota_limit_and_count() -> None:
    quota = TokenQuota(3, 2)
    ensure_within(quota, {OWNER: 2, REQUESTER: 1})
    with pytest.raises(TokenQuotaExceeded) as owner:
        ensure_within(quota, {OWNER: 3, REQUESTER: 0})
    assert owner.value.message == (
        "The owner quota of User:alice (token.quota.per.owner) is 3 live tokens and 3 live tokens count "
        "against it; expire a token or wait for one to expire."
    )
    with pytest.raises(TokenQuotaExceeded) as requester:
        ensure_within(quota, {OWNER: 0, REQUESTER: 5})  # lowered since: the count is said as it is
    assert requester.value.message == (
        "The quota of tokens User:nimbus holds for other owners (token.quota.per.requester) is 2 live tokens "
        "and 5 live tokens count against it; expire a token or wait for one to expire."
    )
