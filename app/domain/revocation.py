"""Bulk revocation: which tokens a revoke selects, and which tokens lose their grant when an ACL goes.

A revoke names an owner, a token requester, or both (a token must then match both). When an ACL that let a
requester create tokens for others is removed, the tokens that requester made under it are revoked unless
the ACLs that remain still let it make them (``tokens_without_grant``):

- only an Allow of ``CreateTokens`` or ``All`` on a ``User`` pattern counts; removing a Deny widens access and
  revokes nothing;
- the tokens concerned are those whose requester is the ACL's principal (every requester for ``User:*``),
  whose owner is not the requester (nobody needs a grant for their own tokens), and whose owner's resource
  name ``User:<owner>`` the pattern covers (a LITERAL name or ``*``, or a PREFIXED start);
- such a token survives when the authorizer, over the ACLs left, still lets its requester create tokens for
  its owner from the host the removed ACL named (``*``: only an ACL for every host keeps it). Super users
  keep theirs, and with ``allow.everyone.if.no.acl.found=true`` an owner left without any ACL keeps them too,
  exactly as a new create would be judged. A token records no host, so one made under a host-specific grant
  that remains goes when a grant for another host is removed: revoking too much is the safe side.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from app.domain.acl import WILDCARD_PRINCIPAL, WILDCARD_RESOURCE, AclBinding, PatternType, Permission
from app.domain.authorization import Authorizer, Caller, Operation, ResourceType
from app.domain.errors import InvalidInput
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation


class RevocationReason(StrEnum):
    """Why tokens were revoked, as audit rows say it."""

    REQUEST = "request"  # POST /v1/tokens/revoke
    CREDENTIAL_DELETE = "credential.delete"  # token.revoke.on.credential.delete
    ACL_DELETE = "acl.delete"  # token.revoke.on.acl.delete


@dataclass(frozen=True, slots=True)
class RevokeSelector:
    """The tokens a revoke takes: those of ``owner``, those ``token_requester`` asked for, or with both
    given, those matching both."""

    owner: KafkaPrincipal | None = None
    token_requester: KafkaPrincipal | None = None

    def __post_init__(self) -> None:
        if self.owner is None and self.token_requester is None:
            raise InvalidInput("Name the tokens to revoke: give an owner, a tokenRequester, or both.")

    @property
    def principals(self) -> list[KafkaPrincipal]:
        """Every principal named (a token matching the selector is related to each)."""
        return [principal for principal in (self.owner, self.token_requester) if principal is not None]

    def matches(self, token: TokenInformation) -> bool:
        return (self.owner is None or token.owner == self.owner) and (
            self.token_requester is None or token.token_requester == self.token_requester
        )


def grants_create_tokens(binding: AclBinding) -> bool:
    """Whether ``binding`` lets its principal create tokens for owners its pattern covers."""
    return (
        binding.pattern.resource_type == ResourceType.USER
        and binding.entry.permission == Permission.ALLOW
        and binding.entry.operation in (Operation.CREATE_TOKENS, Operation.ALL)
    )


def _covers(binding: AclBinding, token: TokenInformation) -> bool:
    pattern, entry = binding.pattern, binding.entry
    if entry.principal not in (str(token.token_requester), WILDCARD_PRINCIPAL):
        return False
    owner = str(token.owner)
    if pattern.pattern_type == PatternType.PREFIXED:
        return owner.startswith(pattern.name)
    return pattern.name in (owner, WILDCARD_RESOURCE)


def tokens_without_grant(
    removed: Iterable[AclBinding], tokens: Iterable[TokenInformation], authorizer: Authorizer
) -> list[TokenInformation]:
    """The tokens a removed grant covered that ``authorizer`` (judging the ACLs that remain) no longer
    allows their requester to create; see the module docstring for the rule."""
    grants = [binding for binding in removed if grants_create_tokens(binding)]
    if not grants:
        return []
    lost: list[TokenInformation] = []
    for token in tokens:
        if token.owner == token.token_requester:
            continue
        hosts = {binding.entry.host for binding in grants if _covers(binding, token)}
        if any(
            not authorizer.authorize(
                Caller(token.token_requester, host=host), Operation.CREATE_TOKENS, ResourceType.USER, str(token.owner)
            )
            for host in sorted(hosts)
        ):
            lost.append(token)
    return lost


def deletion_batches(
    tokens: Iterable[TokenInformation], *, size: int, max_requesters: int | None = None
) -> list[list[TokenInformation]]:
    """``tokens`` in batches for a bulk deletion: grouped by requester (so that a batch charges few of a backend's
    per-requester records), each of at most ``size`` tokens and ``max_requesters`` requesters; by token id
    within a requester, the order a revocation answers its ids in."""
    batches: list[list[TokenInformation]] = []
    batch: list[TokenInformation] = []
    requesters: set[KafkaPrincipal] = set()
    for token in sorted(tokens, key=lambda token: (str(token.token_requester), token.token_id)):
        new_requester = token.token_requester not in requesters
        if len(batch) == size or (new_requester and max_requesters is not None and len(requesters) == max_requesters):
            batches.append(batch)
            batch, requesters = [], set()
        batch.append(token)
        requesters.add(token.token_requester)
    if batch:
        batches.append(batch)
    return batches
