"""Which tokens a revoke selects, and which lose their grant when an ACL is removed (app/domain/revocation.py)."""

from __future__ import annotations

import pytest

from app.domain.acl import AccessControlEntry, AclAuthorizer, AclBinding, AclSnapshot, PatternType, ResourcePattern
from app.domain.errors import InvalidInput
from app.domain.principal import KafkaPrincipal
from app.domain.revocation import RevokeSelector, deletion_batches, tokens_without_grant
from app.domain.token import TokenInformation

PREFIXED = PatternType.PREFIXED
JOE = KafkaPrincipal.user("joe")
NIMBUS = KafkaPrincipal.user("nimbus")
ADMIN = KafkaPrincipal.user("admin")


def _token(token_id: str, owner: KafkaPrincipal, requester: KafkaPrincipal) -> TokenInformation:
    return TokenInformation(token_id, owner, requester, (), 0, 10, 20)


def _binding(
    name: str,
    *,
    pattern: PatternType = PatternType.LITERAL,
    principal: str = "User:nimbus",
    host: str = "*",
    operation: str = "CreateTokens",
    permission: str = "Allow",
    resource_type: str = "User",
) -> AclBinding:
    entry = AccessControlEntry(principal, host, operation, permission)
    return AclBinding(ResourcePattern(resource_type, name, pattern), entry)


def _authorizer(*remaining: AclBinding, allow_everyone: bool = False) -> AclAuthorizer:
    snapshot = AclSnapshot()
    for binding in remaining:
        snapshot = snapshot.replace(binding.pattern, snapshot.entries(binding.pattern) | {binding.entry})
    return AclAuthorizer([ADMIN], lambda: snapshot, allow_everyone_if_no_acl_found=allow_everyone)


def test_a_selector_names_an_owner_a_requester_or_both() -> None:
    with pytest.raises(InvalidInput):
        RevokeSelector()
    mine = _token("a", JOE, JOE)
    for_joe = _token("b", JOE, NIMBUS)
    assert [RevokeSelector(owner=JOE).matches(t) for t in (mine, for_joe)] == [True, True]
    assert [RevokeSelector(token_requester=NIMBUS).matches(t) for t in (mine, for_joe)] == [False, True]
    assert [RevokeSelector(owner=JOE, token_requester=JOE).matches(t) for t in (mine, for_joe)] == [True, False]
    assert RevokeSelector(owner=JOE, token_requester=NIMBUS).principals == [JOE, NIMBUS]


def test_removing_a_literal_grant_takes_that_requesters_tokens_for_that_owner() -> None:
    tokens = [
        _token("lost", JOE, NIMBUS),
        _token("own", NIMBUS, NIMBUS),
        _token("other-owner", KafkaPrincipal.user("mary"), NIMBUS),
        _token("other-requester", JOE, KafkaPrincipal.user("oozie")),
        _token("super", JOE, ADMIN),
    ]
    lost = tokens_without_grant([_binding("User:joe")], tokens, _authorizer())
    assert [token.token_id for token in lost] == ["lost"]


@pytest.mark.parametrize(
    ("removed", "remaining", "lost"),
    [
        pytest.param(_binding("User:joe", permission="Deny"), [], False, id="removed-deny"),
        pytest.param(_binding("User:joe", operation="DescribeTokens"), [], False, id="other-operation"),
        pytest.param(_binding("User:joe", operation="All"), [], True, id="all"),
        pytest.param(_binding("User:joe", resource_type="DelegationToken"), [], False, id="other-resource-type"),
        pytest.param(_binding("User:j", pattern=PREFIXED), [], True, id="prefix-covers"),
        pytest.param(_binding("User:x", pattern=PREFIXED), [], False, id="prefix-misses"),
        pytest.param(_binding("*"), [], True, id="wildcard-resource"),
        pytest.param(_binding("User:joe", principal="User:*"), [], True, id="wildcard-principal"),
        pytest.param(_binding("User:joe", principal="User:oozie"), [], False, id="another-principal"),
        pytest.param(_binding("User:j", pattern=PREFIXED), [_binding("User:joe")], False, id="literal-stays"),
        pytest.param(_binding("User:joe"), [_binding("User:jo", pattern=PREFIXED)], False, id="prefix-stays"),
        pytest.param(_binding("User:joe"), [_binding("User:joe", principal="User:*")], False, id="everyone-stays"),
        pytest.param(_binding("User:joe"), [_binding("User:joe", host="192.0.2.7")], True, id="host-bound-stays"),
        pytest.param(_binding("User:joe", host="192.0.2.7"), [_binding("*")], False, id="host-removed-wildcard-stays"),
        pytest.param(
            _binding("User:joe"),
            [_binding("User:joe", operation="Describe", principal="User:other")],
            True,
            id="unrelated-acl-stays",
        ),
    ],
)
def test_the_rule_for_each_kind_of_removed_and_remaining_acl(
    removed: AclBinding, remaining: list[AclBinding], lost: bool
) -> None:
    token = _token("t", JOE, NIMBUS)
    assert tokens_without_grant([removed], [token], _authorizer(*remaining)) == ([token] if lost else [])


def test_with_allow_everyone_an_owner_left_without_acls_keeps_its_tokens() -> None:
    token = _token("t", JOE, NIMBUS)
    assert tokens_without_grant([_binding("User:joe")], [token], _authorizer(allow_everyone=True)) == []
    # but a remaining Deny still takes them
    deny = _binding("User:joe", permission="Deny")
    assert tokens_without_grant([_binding("User:joe")], [token], _authorizer(deny, allow_everyone=True)) == [token]


def _expired(token_id: str, requester: str) -> TokenInformation:
    principal = KafkaPrincipal.user(requester)
    return TokenInformation(token_id, principal, principal, (), 1_000, 1_999, 3_000)


def test_deletion_batches_group_by_requester_and_hold_at_most_size_tokens_and_so_many_requesters() -> None:
    tokens = [_expired(f"T{n:02d}", f"u{n % 4}") for n in range(12)]
    batches = deletion_batches(tokens, size=5, max_requesters=2)
    assert [[token.token_id for token in batch] for batch in batches] == [
        ["T00", "T04", "T08", "T01", "T05"],  # u0's three, then u1's first two: five tokens
        ["T09", "T02", "T06", "T10"],  # u1's last, then u2: two requesters
        ["T03", "T07", "T11"],
    ]
    assert sorted(token.token_id for batch in batches for token in batch) == sorted(t.token_id for t in tokens)
    assert deletion_batches([], size=5) == []
    assert len(deletion_batches(tokens, size=5)) == 3  # no bound on requesters: only the size cuts
