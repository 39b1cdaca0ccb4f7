"""SCRAM credential management: who may change credentials, the credential written, and its audit."""

from __future__ import annotations

from app.domain.audit import Action, AuditEvent, Outcome
from app.domain.authorization import Authorizer, Caller, Operation, ensure_cluster_permission
from app.domain.credentials import Mechanism
from app.domain.errors import StoreUnavailable
from app.domain.principal import KafkaPrincipal
from app.domain.revocation import RevocationReason, RevokeSelector
from app.domain.scram import derive
from app.service.audit import Auditor
from app.service.lockout import AccountLocks, Unlocked
from app.service.ports import UserStore
from app.service.revocation import TokenRevocation


class UserCredentialService:
    def __init__(
        self,
        store: UserStore,
        *,
        authorizer: Authorizer,
        auditor: Auditor,
        revocation: TokenRevocation | None = None,
        locks: AccountLocks | None = None,
    ) -> None:
        """With ``revocation`` (token.revoke.on.credential.delete=true), a user whose last credential is
        deleted loses its tokens: a token authenticates as its owner, who should no longer get in."""
        self._store = store
        self._authorizer = authorizer
        self._auditor = auditor
        self._revocation = revocation
        self._locks = locks

    def unlock(self, caller: Caller, user_name: str) -> Unlocked:
        """Lift the lockout of ``user_name`` on every replica (super users only)."""
        if self._locks is None:
            raise StoreUnavailable("Account locks are not available on this replica.")
        return self._locks.unlock(caller, user_name)

    def _authorize(self, caller: Caller, event: AuditEvent) -> None:
        self._auditor.decided(
            event,
            lambda: ensure_cluster_permission(
                self._authorizer, caller, Operation.ALTER, to="change credentials", login_required=True
            ),
        )

    def set_password(
        self, caller: Caller, user_name: str, mechanism: Mechanism, password: str, iterations: int
    ) -> None:
        event = _event(Action.CREDENTIAL_SET, caller, user_name, mechanism, iterations=iterations)
        self._authorize(caller, event)
        credential = derive(mechanism, password, iterations)
        self._auditor.mutation(
            event,
            lambda intent: self._store.put_credential(user_name, mechanism, credential, intent),
            succeeded=lambda _: event.ended(Outcome.SUCCEEDED),
        )

    def describe(self, caller: Caller, user_name: str) -> dict[Mechanism, int]:
        """The user's SCRAM mechanisms and their iteration counts (never salts or keys), as Kafka's
        DescribeUserScramCredentials answers; needs Describe on the cluster. A read: not audited, as ACL lists."""
        ensure_cluster_permission(self._authorizer, caller, Operation.DESCRIBE, to="describe credentials")
        return self._store.mechanisms(user_name)

    def delete(self, caller: Caller, user_name: str, mechanism: Mechanism) -> None:
        event = _event(Action.CREDENTIAL_DELETE, caller, user_name, mechanism)
        self._authorize(caller, event)
        self._auditor.mutation(
            event,
            lambda intent: self._store.delete_credential(user_name, mechanism, intent),
            succeeded=lambda _: event.ended(Outcome.SUCCEEDED),
        )
        # Only when no credential is left: deleting one mechanism of two leaves the user able to log in.
        if self._revocation is not None and not self._store.mechanisms(user_name):
            self._revocation.revoke_matching(
                RevokeSelector(owner=KafkaPrincipal.user(user_name)),
                reason=RevocationReason.CREDENTIAL_DELETE,
                principal=str(caller.principal),
            )


def _event(action: Action, caller: Caller, user_name: str, mechanism: Mechanism, **details: object) -> AuditEvent:
    return AuditEvent(
        action,
        Outcome.PENDING,
        principal=str(caller.principal),
        owner=f"User:{user_name}",
        details={"user": user_name, "mechanism": mechanism.value, **details},
    )
