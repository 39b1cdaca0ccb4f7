"""Token use cases: gather state, let ``app/domain/token_rules`` decide, then write through the store."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from app.domain import token_rules
from app.domain.audit import Action, AuditEvent, Outcome
from app.domain.authorization import Authorizer, Caller
from app.domain.clock import Clock
from app.domain.errors import NotAuthenticated, TokenAuthorizationFailed, TokenNotFound
from app.domain.principal import KafkaPrincipal
from app.domain.throttle import token_subject
from app.domain.token import TokenInformation
from app.domain.token_quota import TokenQuota
from app.domain.token_rules import CreateRequest, DeleteToken, Page, TokenPolicy
from app.domain.token_secret import TokenSecret
from app.service.admission import OPEN_ADMISSION, Admission, TokenWrite
from app.service.attempts import AttemptGuard
from app.service.audit import Auditor
from app.service.ports import EXPIRE_NOW, CreateTerms, Expiry, Renewal, StoredToken, TokenChange, TokenStore, TokenView
from app.service.token_quotas import TokenQuotas

T = TypeVar("T")


def _event(
    action: Action, caller: Caller, token_id: str | None, *, outcome: Outcome = Outcome.PENDING, **details: object
) -> AuditEvent:
    return AuditEvent(action, outcome, principal=str(caller.principal), token_id=token_id, details=dict(details))


@dataclass(frozen=True, slots=True)
class IssuedToken:
    token: TokenInformation
    hmac: bytes


@dataclass(frozen=True, slots=True)
class ExpiryChange:
    token_id: str
    expiry_timestamp: int


class TokenService:
    def __init__(
        self,
        store: TokenStore,
        view: TokenView,
        *,
        secret: TokenSecret,
        policy: TokenPolicy,
        authorizer: Authorizer,
        clock: Clock,
        auditor: Auditor,
        verify_guard: AttemptGuard | None = None,
        admission: Admission = OPEN_ADMISSION,
        quota: TokenQuota = TokenQuota(),  # noqa: B008 - frozen
        own_principal: Callable[[KafkaPrincipal], bool] = lambda _: False,
    ) -> None:
        """``own_principal`` tells kts's own principal toward the cluster (app/auth/own_identity.py): no token is
        made for it, since a token authenticates as its owner to the brokers as well as to kts. ``admission``: what
        the backend limits about token writes beyond the rules and quotas (app/service/admission.py)."""
        self._own_principal = own_principal
        self._store = store
        self._admission = admission
        self._quotas = TokenQuotas(quota, view, clock=clock, authorizer=authorizer)
        self._verify_guard = verify_guard
        self._view = view
        self._secret = secret
        self._policy = policy
        self._authorizer = authorizer
        self._clock = clock
        self._auditor = auditor

    def create(self, caller: Caller, request: CreateRequest) -> IssuedToken:
        # None: the cluster picks the id as it creates the token (the event gets it when it succeeds).
        token_id = self._store.next_token_id()
        event = AuditEvent(
            Action.TOKEN_CREATE,
            Outcome.PENDING,
            principal=str(caller.principal),
            owner=str(request.owner or caller.principal),
            token_requester=str(caller.principal),
            token_id=token_id,
            details={
                "requestedMaxLifetimeMs": request.max_lifetime_ms,
                "renewers": [str(renewer) for renewer in request.renewers],
            },
            job=request.job,
        )

        def plan() -> TokenInformation:
            owner = request.owner or caller.principal
            if self._own_principal(owner):
                raise TokenAuthorizationFailed(
                    f"{owner} is the principal kts itself uses toward the Kafka cluster: kts makes no token for it "
                    "(a token authenticates as its owner, to the brokers as well)."
                )
            token = token_rules.plan_create(
                caller,
                request,
                token_id=token_id or "",
                now_ms=self._clock.now_ms(),
                policy=self._policy,
                authorizer=self._authorizer,
            )
            self._quotas.checked(token)
            return token

        token = self._auditor.decided(event, plan)
        self._admit(event, caller, TokenWrite.CREATE)
        # What the store answers is what the cluster holds (its id and times, where it picks them).
        stored = self._auditor.mutation(
            event,
            lambda intent: self._created(token, intent),
            succeeded=lambda stored: replace(event, token_id=stored.token.token_id).ended(
                Outcome.SUCCEEDED,
                issueTimestamp=stored.token.issue_timestamp,
                expiryTimestamp=stored.token.expiry_timestamp,
                maxTimestamp=stored.token.max_timestamp,
            ),
        )
        return IssuedToken(stored.token, self._secret.hmac(stored.token.token_id))

    def renew(self, caller: Caller, token_id: str, renew_period_ms: int) -> ExpiryChange:
        event = _event(Action.TOKEN_RENEW, caller, token_id, renewTimePeriodMs=renew_period_ms)
        self._auditor.decided(event, lambda: self._ensure_may_change_visible(caller, token_id))
        return self._renew(caller, token_id, renew_period_ms, event)

    def renew_by_hmac(self, caller: Caller, mac: bytes, renew_period_ms: int) -> ExpiryChange:
        event = _event(Action.TOKEN_RENEW, caller, None, renewTimePeriodMs=renew_period_ms)
        token_id = self._auditor.decided(event, lambda: self._token_id_for(caller, mac))
        return self._renew(caller, token_id, renew_period_ms, replace(event, token_id=token_id))

    def expire(self, caller: Caller, token_id: str, expiry_period_ms: int) -> ExpiryChange:
        event = _event(Action.TOKEN_EXPIRE, caller, token_id, expiryTimePeriodMs=expiry_period_ms)
        self._auditor.decided(event, lambda: self._ensure_may_change_visible(caller, token_id))
        return self._expire(caller, token_id, expiry_period_ms, event)

    def expire_by_hmac(self, caller: Caller, mac: bytes, expiry_period_ms: int) -> ExpiryChange:
        event = _event(Action.TOKEN_EXPIRE, caller, None, expiryTimePeriodMs=expiry_period_ms)
        token_id = self._auditor.decided(event, lambda: self._token_id_for(caller, mac))
        return self._expire(caller, token_id, expiry_period_ms, replace(event, token_id=token_id))

    def describe(
        self,
        caller: Caller,
        owners: Sequence[KafkaPrincipal] | None,
        *,
        limit: int,
        after: str | None,
    ) -> Page:
        if owners is None and token_rules.may_see_others_tokens(caller, self._authorizer):
            page = token_rules.describe_page(self._in_order(after, limit + 1), caller, self._authorizer, limit=limit)
        else:  # those the filter names, or the caller holds: an index answers, then sort that few
            # Exactly the tokens the filter selects (it matches owners, renewers and requesters, as the index does).
            selected = self._view.related_tokens([caller.principal] if owners is None else owners)
            visible = token_rules.visible_in_order(selected, caller, self._authorizer)
            page = token_rules.paginate(visible, limit=limit, after=after)
        self._auditor.record(
            _event(
                Action.TOKEN_DESCRIBE,
                caller,
                None,
                outcome=Outcome.SUCCEEDED,
                owners=None if owners is None else [str(owner) for owner in owners],
                returned=len(page.tokens),
            )
        )
        return page

    def now_ms(self) -> int:
        """The service's clock (injected), for views that mark tokens past their expiry."""
        return self._clock.now_ms()

    def _in_order(self, after: str | None, chunk: int) -> Iterator[TokenInformation]:
        """Every token in token id order from the first after ``after``, read ``chunk`` at a time."""
        while True:
            found = self._view.after(after, chunk)
            yield from (stored.token for stored in found)
            if len(found) < chunk:
                return
            after = found[-1].token.token_id

    def get(self, caller: Caller, token_id: str) -> TokenInformation:
        """The token, or TokenNotFound when it is absent or the caller may not see it (no existence leak)."""
        event = _event(Action.TOKEN_DESCRIBE, caller, token_id)
        token = self._auditor.decided(event, lambda: self._ensure_visible(caller, token_id)).token
        self._auditor.record(event.ended(Outcome.SUCCEEDED))
        return token

    def verify(self, token_id: str, mac: bytes) -> TokenInformation | None:
        """The token when ``mac`` is its HMAC and it has not expired; otherwise None. Not audited: it is the
        Bearer login path, whose failures the authenticator records. Reads only the cache, which may refresh
        once, rate-limited, for a token it lacks: only after the HMAC matched, so that only a holder of a real
        token (one made an instant ago elsewhere) can cause it."""
        if not self._secret.matches(token_id, mac):
            return None
        stored = self._view.lookup(token_id)
        if stored is None:
            return None
        token = stored.token
        return token if token.authenticates_at(self._clock.now_ms()) else None

    def verify_for(self, caller: Caller, token_id: str, mac: bytes) -> TokenInformation | None:
        """``verify`` on behalf of a caller of /v1/tokens/verify; failures are audited. With a guard, a
        caller's address that failed too often (for this token or any) gets TooManyAttempts before any
        check, and failures are audited once per burst."""
        guard = self._verify_guard
        if guard is None:
            token = self.verify(token_id, mac)
            if token is None:
                self._auditor.record(_event(Action.TOKEN_VERIFY, caller, token_id, outcome=Outcome.DENIED))
            return token

        def check() -> TokenInformation:
            token = self.verify(token_id, mac)
            if token is None:
                raise NotAuthenticated("Unknown, expired or invalid delegation token.", known=self.is_known(token_id))
            return token

        try:
            return guard.attempt(
                caller.host,
                token_subject(token_id),
                lambda _: _event(Action.TOKEN_VERIFY, caller, token_id, outcome=Outcome.DENIED),
                check,
            )
        except NotAuthenticated:
            return None

    def is_known(self, token_id: str) -> bool:
        """Whether this replica knows a token of that id (for the audit of failures alone)."""
        return self._view.get(token_id) is not None

    def _admit(self, event: AuditEvent, caller: Caller, write: TokenWrite) -> None:
        """The admission's first judgement (app/service/admission.py), before anything is written: a refusal is
        audited as one."""
        self._auditor.decided(event, lambda: self._admission.judge(caller.principal, write))

    def _created(self, token: TokenInformation, intent: int) -> StoredToken:
        # Within the quotas and the admission's charge, judged exactly as the token is written; this replica
        # reads its own write at once.
        admission = self._admission
        with admission.turn(token.token_requester):
            charge = admission.charge(token.token_requester, TokenWrite.CREATE)
            stored = self._quotas.create(
                token,
                # TokenQuotas.create installs what the store answers in the view.
                lambda keys, admit: self._store.create(
                    token, CreateTerms(intent, quotas=keys, admit=admit, charge=charge, installed=True)
                ),
            )
            admission.settle([charge])
        return stored

    def _token_id_for(self, caller: Caller, mac: bytes) -> str:
        token_rules.ensure_may_request_tokens(caller)
        token_id = self._view.find_by_hmac(mac)
        if token_id is None:  # perhaps made on another replica an instant ago: its notification may be in flight
            self._view.catch_up()
            token_id = self._view.find_by_hmac(mac)
        if token_id is None or not self._secret.matches(token_id, mac):
            raise TokenNotFound("No token has this HMAC.")
        return token_id

    def _ensure_visible(self, caller: Caller, token_id: str) -> StoredToken:
        stored = self._current(token_id)
        if stored is None or not token_rules.may_describe(stored.token, caller, self._authorizer):
            raise TokenNotFound(f"Token {token_id} does not exist or is not visible to {caller.principal}.")
        return stored

    def _ensure_may_change_visible(self, caller: Caller, token_id: str) -> None:
        token_rules.ensure_may_request_tokens(caller)
        self._ensure_visible(caller, token_id)

    def _with_token(self, event: AuditEvent, token_id: str) -> tuple[AuditEvent, StoredToken]:
        stored = self._auditor.decided(event, lambda: self._stored(token_id))
        token = stored.token
        return replace(event, owner=str(token.owner), token_requester=str(token.token_requester)), stored

    def _current(self, token_id: str) -> StoredToken | None:
        """The cached token; on a miss (perhaps made on another replica an instant ago) read once more from
        the store. Only for authenticated callers: Bearer logins and verify never read the store."""
        stored = self._view.get(token_id)
        if stored is None:
            self._view.refresh_latest(token_id)
            stored = self._view.get(token_id)
        return stored

    def _stored(self, token_id: str) -> StoredToken:
        stored = self._current(token_id)
        if stored is None:
            raise TokenNotFound(f"Token {token_id} does not exist.")
        return stored

    def _renew(self, caller: Caller, token_id: str, renew_period_ms: int, event: AuditEvent) -> ExpiryChange:
        event, current = self._with_token(event, token_id)

        def plan(stored: StoredToken) -> int:
            return token_rules.plan_renew(
                stored.token,
                caller,
                renew_period_ms=renew_period_ms,
                now_ms=self._clock.now_ms(),
                policy=self._policy,
                authorizer=self._authorizer,
            )

        self._auditor.decided(event, lambda: plan(current))  # refusals are recorded without a pending event
        self._admit(event, caller, TokenWrite.RENEW)
        charge = self._admission.charge(caller.principal, TokenWrite.RENEW)

        def decide(stored: StoredToken) -> TokenChange[None]:
            return TokenChange(stored.token.with_expiry(plan(stored)), None, Renewal(renew_period_ms), charge)

        def renewed(intent: int) -> ExpiryChange:
            written, _ = self._change(token_id, decide, intent, caller)
            assert written is not None  # a renew never deletes
            # The expiry the store wrote: a cluster that makes the change may answer another than kts planned.
            return ExpiryChange(token_id, written.token.expiry_timestamp)

        return self._auditor.mutation(
            event,
            renewed,
            succeeded=lambda change: event.ended(Outcome.SUCCEEDED, expiryTimestamp=change.expiry_timestamp),
        )

    def _expire(self, caller: Caller, token_id: str, expiry_period_ms: int, event: AuditEvent) -> ExpiryChange:
        event, current = self._with_token(event, token_id)

        def plan(stored: StoredToken) -> token_rules.ExpireDecision:
            return token_rules.plan_expire(
                stored.token,
                caller,
                expiry_period_ms=expiry_period_ms,
                now_ms=self._clock.now_ms(),
                authorizer=self._authorizer,
            )

        planned = self._auditor.decided(event, lambda: plan(current))
        # A later expiry is a renew by another name: admitted as one, so that it is no way around a refusal of
        # renews. Deleting a token is never judged, so revocation always works.
        write = (
            TokenWrite.RENEW if isinstance(planned, token_rules.SetExpiry) and planned.extended else TokenWrite.EXPIRE
        )
        if not isinstance(planned, DeleteToken):
            self._admit(event, caller, write)
        admission = self._admission
        kept_charge = admission.charge(caller.principal, write)

        def decide(stored: StoredToken) -> TokenChange[tuple[int, bool]]:
            decision = plan(stored)
            if isinstance(decision, DeleteToken):
                # Never refused: charged to the requester, whose token held room for what its deletion writes.
                return TokenChange(
                    None, (decision.expiry_timestamp, False), EXPIRE_NOW, admission.deletion(stored.token)
                )
            new = stored.token.with_expiry(decision.expiry_timestamp)
            planned = (decision.expiry_timestamp, decision.extended)
            return TokenChange(new, planned, Expiry(expiry_period_ms), kept_charge)

        def expired(intent: int) -> tuple[ExpiryChange, bool, bool]:
            written, (planned, extended) = self._change(token_id, decide, intent, caller)
            if written is None:
                return ExpiryChange(token_id, planned), True, False
            return ExpiryChange(token_id, written.token.expiry_timestamp), False, extended

        change, _deleted, _extended = self._auditor.mutation(
            event,
            expired,
            succeeded=lambda result: event.ended(
                Outcome.SUCCEEDED, expiryTimestamp=result[0].expiry_timestamp, deleted=result[1], extended=result[2]
            ),
        )
        return change

    def _change(
        self, token_id: str, decide: Callable[[StoredToken], TokenChange[T]], intent: int, caller: Caller
    ) -> tuple[StoredToken | None, T]:
        """Change the token (ZooKeeper: compare-and-set, a renew and an expire racing on two replicas: the loser
        reads again and decides again), then install what was written: this replica reads its writes at once.
        The caller's writes on this replica take turns (``Admission.turn``); the charge of the attempt that was
        written is settled."""
        answers: list[TokenChange[T]] = []

        def deciding(stored: StoredToken) -> TokenChange[T]:
            answers.append(decide(stored))
            return answers[-1]

        with self._admission.turn(caller.principal):
            written, result = self._store.change(token_id, deciding, intent)
            self._admission.settle([answers[-1].charge])
        if written is None:
            self._view.discard(token_id)
        else:
            self._view.apply(written)
        return written, result
