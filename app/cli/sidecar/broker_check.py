"""``kts sidecar --check-login``: a token is published only once a broker accepts it.

Brokers learn a new token from ZooKeeper (or the metadata log) a moment after kts created it; a workload that
starts in that moment fails its first login. So before the file is written, the sidecar logs in to the bootstrap
servers with the fresh token, exactly as the workload will (the file's ``security.protocol`` and
``sasl.mechanism``, SCRAM with ``tokenauth=true``), retrying with capped backoff until a broker accepts it or the
wait is over, then fails with the broker's last answer. A renewal keeps the token's id and HMAC, so only a new
token is checked.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from tenacity import RetryCallState, Retrying, retry_if_exception_type, wait_exponential

from app.cli.client.kafka_login import BrokerLogin, Credentials, LoginError, login
from app.cli.sidecar.token_file import PublishError, TokenCredentials

log = logging.getLogger("kts.sidecar")
FIRST_PAUSE_S, MAX_PAUSE_S = 0.1, 2.0
ATTEMPT_TIMEOUT_S = 10.0


class BrokerLoginCheck:
    """``check(credentials)`` returns once a broker accepts the token; PublishError after ``timeout_s``."""

    def __init__(
        self,
        target: BrokerLogin,
        timeout_s: float,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        attempt: Callable[[BrokerLogin, Credentials], None] | None = None,
    ) -> None:
        """``sleep`` waits between attempts (and may raise to stop them); ``attempt`` is one login."""
        self._target = target
        self._timeout_s = timeout_s
        self._sleep = sleep
        self._clock = clock
        self._attempt = attempt or (lambda target, credentials: login(target, credentials, timeout_s=ATTEMPT_TIMEOUT_S))

    @property
    def servers(self) -> str:
        return ",".join(self._target.bootstrap_servers)

    def check(self, token: TokenCredentials) -> None:
        credentials = Credentials(token.token_id, token.hmac, token=True)
        started = self._clock()
        retrying = Retrying(
            stop=lambda _: self._clock() - started >= self._timeout_s,
            wait=wait_exponential(multiplier=FIRST_PAUSE_S, max=MAX_PAUSE_S),
            retry=retry_if_exception_type(LoginError),
            sleep=self._sleep,
            before_sleep=self._log_refusal(token.token_id),
            reraise=True,
        )
        try:
            retrying(self._attempt, self._target, credentials)
        except LoginError as exc:
            raise PublishError(
                f"the brokers ({self.servers}) did not accept token {token.token_id} within "
                f"{self._timeout_s:g} s, so it was not published: {exc}"
            ) from None
        log.info("a broker (%s) accepted token %s after %.1f s", self.servers, token.token_id, self._clock() - started)

    @staticmethod
    def _log_refusal(token_id: str) -> Callable[[RetryCallState], None]:
        def log_refusal(state: RetryCallState) -> None:
            if state.attempt_number == 1:  # once: the brokers usually need a moment for a new token
                reason = state.outcome.exception() if state.outcome is not None else None
                log.info("token %s: no broker login yet (%s); retrying", token_id, reason)

        return log_refusal


def checked(check: BrokerLoginCheck, publish: Callable[[TokenCredentials], None]) -> Callable[[TokenCredentials], None]:
    """``publish`` preceded by the check, once per token (a renewal republishes the same token unchecked)."""
    accepted: list[str] = []  # the last token a broker accepted

    def publish_checked(credentials: TokenCredentials) -> None:
        if accepted != [credentials.token_id]:
            check.check(credentials)
            accepted[:] = [credentials.token_id]
        publish(credentials)

    return publish_checked
