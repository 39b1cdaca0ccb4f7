"""The renewal loop of ``kts sidecar``: keep one delegation token valid and published, until told to stop.

It creates a token (for itself, or for ``owner`` when it may create tokens for that user) and publishes
it, renews it when 80% of the way to its expiry, replaces it with a new token when 80% of its maximum
lifetime has passed (publishing the new one, then ending the old one after a grace period), and retries
with capped exponential backoff and jitter while the service is unreachable or answers 5xx. When stopped
it expires its tokens if ``expire_on_exit`` is set. It logs one line per action and never an HMAC.

Renewing needs the caller to be the token's owner or one of its renewers (a token's requester is neither
by right), so a loop that creates tokens for another owner names itself a renewer: from the ``username``
it logs in with, or, with a certificate login, from the ``tokenRequester`` the service reports on its
first token (which it then replaces instead of renewing).

Everything around it is injected: the service, where tokens are published, the wall clock, the stop
signal it waits on and the sleep between attempts at exit, so that tests drive it with fakes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Protocol, TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from app.cli.client.http_client import ExpiryJson, RequestRefused, ServiceUnreachable, TokenJson
from app.cli.sidecar.retry import AtLeastRetryAfter, equal_jitter
from app.cli.sidecar.schedule import (
    DEFAULT_GRACE_MS,
    Action,
    TokenTimes,
    next_step,
    retirement_period_ms,
    server_clock_offset_ms,
)
from app.cli.sidecar.token_file import PublishError, TokenCredentials

log = logging.getLogger("kts.sidecar")
T = TypeVar("T")

TOKEN_NOT_FOUND, TOKEN_OWNER_MISMATCH, TOKEN_EXPIRED = 62, 63, 66
EXIT_ATTEMPTS = 3
EXIT_BACKOFF_CAP_S = 2.0  # stopping should not take long: three quick tries
# Long waits are cut into slices so that a clock jump or a suspended host is noticed within a minute.
MAX_WAIT_SLICE_S = 60.0


class TokenService(Protocol):
    """The calls the loop makes (``KtsClient`` in production)."""

    server: str

    def create_token(
        self, *, owner: str | None = None, renewers: Iterable[str] = (), max_lifetime_ms: int = -1
    ) -> TokenJson: ...

    def renew_token(self, hmac: str, renew_time_period_ms: int = -1) -> ExpiryJson: ...

    def expire_token(self, hmac: str, expiry_time_period_ms: int = -1) -> ExpiryJson: ...


class StopSignal(Protocol):
    """A ``threading.Event`` set by the signal handlers: ``wait`` returns True once a stop is asked for."""

    def is_set(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...


class Stopped(Exception):
    """A stop was requested while waiting or retrying."""


@dataclass(frozen=True, slots=True)
class LoopOptions:
    owner: str | None = None
    renewers: tuple[str, ...] = ()
    max_lifetime_ms: int = -1
    expire_on_exit: bool = False
    grace_ms: int = DEFAULT_GRACE_MS


@dataclass(frozen=True, slots=True)
class HeldToken:
    token_id: str
    hmac: str = field(repr=False)
    owner: str
    requester: str
    renewers: tuple[str, ...]
    times: TokenTimes

    @classmethod
    def created(cls, token: TokenJson) -> HeldToken:
        return cls(
            token_id=token["tokenId"],
            hmac=token["hmac"],
            owner=token["owner"],
            requester=token["tokenRequester"],
            renewers=tuple(token["renewers"]),
            times=TokenTimes(token["issueTimestamp"], token["expiryTimestamp"], token["maxTimestamp"]),
        )

    @property
    def manageable(self) -> bool:
        """Whether this client (the token's requester) may renew and expire it: owner or renewer."""
        return self.requester == self.owner or self.requester in self.renewers

    def credentials(self) -> TokenCredentials:
        return TokenCredentials(self.token_id, self.hmac, self.times.expiry_timestamp, self.times.max_timestamp)


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class RenewalLoop:
    def __init__(
        self,
        service: TokenService,
        publish: Callable[[TokenCredentials], None],
        options: LoopOptions,
        *,
        stop: StopSignal,
        self_principal: str | None = None,
        wall_ms: Callable[[], int] = wall_clock_ms,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """``publish`` makes a token available to its readers (raises PublishError); ``sleep`` waits between
        attempts to expire the tokens at exit, when ``stop`` is already set."""
        self._service = service
        self._publish = publish
        self._options = options
        self._stop = stop
        self._self_principal = self_principal
        self._wall_ms = wall_ms
        self._sleep = sleep
        self._offset_ms = 0
        self._token: HeldToken | None = None
        self._retired: list[HeldToken] = []

    def run(self) -> int:
        """Create, publish and keep the token until stopped. RequestRefused on the first create propagates."""
        try:
            self._install(self._create(startup=True))
            while not self._stop.is_set():
                assert self._token is not None
                step = next_step(self._server_now(), self._token.times, renewable=self._token.manageable)
                self._wait_until(step.at_ms)
                if step.action is Action.RENEW:
                    self._renew(self._token)
                else:
                    self._replace(self._token)
        except Stopped:
            pass
        except PublishError as exc:
            log.error("%s", exc)
            self._shutdown()
            return 1
        return self._shutdown()

    # the three actions

    def _create(self, *, startup: bool = False) -> HeldToken:
        options = self._options
        renewers = list(options.renewers)
        me = self._self_principal
        if options.owner is not None and me is not None and me != options.owner and me not in renewers:
            renewers.append(me)

        def create() -> TokenJson:
            sent = self._wall_ms()
            created = self._service.create_token(
                owner=options.owner, renewers=renewers, max_lifetime_ms=options.max_lifetime_ms
            )
            self._offset_ms = server_clock_offset_ms(created["issueTimestamp"], sent, self._wall_ms())
            return created

        token = HeldToken.created(self._call("create a token", create, give_up=lambda _: startup))
        self._self_principal = token.requester  # as the service sees this client, whatever the login
        log.info(
            "created token %s for %s: expires %s, lifetime ends %s",
            token.token_id,
            token.owner,
            _when(token.times.expiry_timestamp),
            _when(token.times.max_timestamp),
        )
        if not token.manageable:
            log.warning(
                "%s is neither owner nor renewer of token %s, so it will replace the token instead of renewing it",
                token.requester,
                token.token_id,
            )
        return token

    def _renew(self, token: HeldToken) -> None:
        try:
            renewed = self._call(
                f"renew token {token.token_id}",
                lambda: self._service.renew_token(token.hmac),
                give_up=lambda refused: refused.code in (TOKEN_NOT_FOUND, TOKEN_OWNER_MISMATCH, TOKEN_EXPIRED),
            )
        except RequestRefused as exc:
            log.warning("cannot renew token %s (%s); replacing it", token.token_id, exc.message)
            self._replace(token)
            return
        times = replace(token.times, expiry_timestamp=renewed["expiryTimestamp"])
        self._token = replace(token, times=times)
        log.info("renewed token %s: expires %s", token.token_id, _when(times.expiry_timestamp))
        self._publish(self._token.credentials())

    def _replace(self, old: HeldToken) -> None:
        self._install(self._create())
        assert self._token is not None
        log.info("replaced token %s by %s", old.token_id, self._token.token_id)
        self._retire(old)

    def _install(self, token: HeldToken) -> None:
        self._token = token
        self._publish(token.credentials())

    def _retire(self, old: HeldToken) -> None:
        """End a replaced token after the grace period, leaving its readers time to pick up the new one."""
        if not old.manageable:
            log.info(
                "token %s lapses at %s (this client may not expire it)", old.token_id, _when(old.times.expiry_timestamp)
            )
            return
        self._retired.append(old)
        now = self._server_now()
        period = retirement_period_ms(now, old.times.expiry_timestamp, self._options.grace_ms)
        if period is None:
            verb = "expired" if old.times.expiry_timestamp <= now else "lapses by itself"
            log.info("token %s %s at %s", old.token_id, verb, _when(old.times.expiry_timestamp))
            return
        try:
            ended = self._service.expire_token(old.hmac, period)
        except (RequestRefused, ServiceUnreachable) as exc:
            log.warning("could not shorten replaced token %s (%s); it lapses at its expiry", old.token_id, exc)
            return
        log.info("replaced token %s now expires %s", old.token_id, _when(ended["expiryTimestamp"]))

    def _shutdown(self) -> int:
        current = self._token
        if current is None:
            log.info("stopped before a token was made")
            return 0
        if not self._options.expire_on_exit:
            log.info("stopped; token %s stays valid until %s", current.token_id, _when(current.times.expiry_timestamp))
            return 0
        now = self._server_now()
        live = [token for token in (current, *self._retired) if token.times.expiry_timestamp > now]
        failed = [token.token_id for token in _unique(live) if not self._expire_now(token)]
        if failed:
            log.error("stopped; could not expire token(s) %s", ", ".join(failed))
            return 1
        log.info("stopped")
        return 0

    def _expire_now(self, token: HeldToken) -> bool:
        retrying = Retrying(
            stop=stop_after_attempt(EXIT_ATTEMPTS),
            wait=equal_jitter(cap_s=EXIT_BACKOFF_CAP_S),
            retry=retry_if_exception(_worth_retrying_an_expiry),
            sleep=self._sleep,  # the stop signal is set by now: it cannot pace these attempts
            before_sleep=_log_retry(f"expiring token {token.token_id}"),
            reraise=True,
        )
        try:
            retrying(self._service.expire_token, token.hmac, -1)
        except RequestRefused as exc:
            if exc.code == TOKEN_NOT_FOUND:
                log.info("token %s was already gone", token.token_id)
                return True
            if not exc.transient:
                log.error("cannot expire token %s: %s", token.token_id, exc.message)
                return False
        except ServiceUnreachable:
            pass
        else:
            log.info("expired token %s", token.token_id)
            return True
        log.error("cannot expire token %s: the service stayed unreachable", token.token_id)
        return False

    # waiting and retrying

    def _call(self, what: str, request: Callable[[], T], *, give_up: Callable[[RequestRefused], bool]) -> T:
        """``request()`` until it succeeds; RequestRefused propagates when it is not transient and
        ``give_up`` says so. Everything else is retried with backoff until it works or a stop comes."""

        def worth_retrying(exc: BaseException) -> bool:
            if isinstance(exc, RequestRefused):
                return exc.transient or not give_up(exc)
            return isinstance(exc, ServiceUnreachable)

        self._check_stop()
        retrying = Retrying(
            retry=retry_if_exception(worth_retrying),
            wait=AtLeastRetryAfter(equal_jitter()),
            sleep=self._pause,
            before_sleep=_log_retry(what),
            reraise=True,
        )
        result: T = retrying(request)
        return result

    def _pause(self, seconds: float) -> None:
        if self._stop.wait(seconds):
            raise Stopped

    def _wait_until(self, at_ms: int) -> None:
        while (remaining_ms := at_ms - self._server_now()) > 0:
            if self._stop.wait(min(remaining_ms / 1000, MAX_WAIT_SLICE_S)):
                raise Stopped

    def _check_stop(self) -> None:
        if self._stop.is_set():
            raise Stopped

    def _server_now(self) -> int:
        return self._wall_ms() + self._offset_ms


def _worth_retrying_an_expiry(exc: BaseException) -> bool:
    if isinstance(exc, RequestRefused):
        return exc.transient and exc.code != TOKEN_NOT_FOUND
    return isinstance(exc, ServiceUnreachable)


def _log_retry(what: str) -> Callable[[RetryCallState], None]:
    def log_retry(retry_state: RetryCallState) -> None:
        outcome, action = retry_state.outcome, retry_state.next_action
        reason = outcome.exception() if outcome is not None else None
        delay = action.sleep if action is not None else 0.0
        log.warning("%s failed (%s); retrying in %.1f s", what, reason, delay)

    return log_retry


def _when(timestamp_ms: int) -> str:
    return datetime.fromtimestamp(timestamp_ms / 1000, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _unique(tokens: Iterable[HeldToken]) -> list[HeldToken]:
    return list({token.token_id: token for token in tokens}.values())
