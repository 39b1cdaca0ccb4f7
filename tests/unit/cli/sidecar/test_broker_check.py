"""--check-login's waiting: retried until a broker accepts, bounded, once per token; a fake clock and login."""

from __future__ import annotations

import pytest

from app.cli.client.kafka_login import BrokerLogin, Credentials, LoginError
from app.cli.sidecar.broker_check import MAX_PAUSE_S, BrokerLoginCheck, checked
from app.cli.sidecar.token_file import PublishError, TokenCredentials

TARGET = BrokerLogin(("broker-1:9093", "broker-2:9093"), "SASL_SSL", "SCRAM-SHA-512")
TOKEN = TokenCredentials("E8gTWaIxRUOaSRH7wY3N1w", "c2VjcmV0", 1, 2)
REFUSED = "broker-1:9093 refused the login: Authentication failed due to invalid credentials"


class Broker:
    """Refuses the first ``refusals`` logins; records what it was sent and when."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.now = 0.0
        self.attempts: list[tuple[float, Credentials]] = []

    def login(self, target: BrokerLogin, credentials: Credentials) -> None:
        assert target is TARGET
        self.attempts.append((self.now, credentials))
        if len(self.attempts) <= self.refusals:
            raise LoginError(REFUSED, refused=True)

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def check(self, timeout_s: float = 60.0) -> BrokerLoginCheck:
        return BrokerLoginCheck(TARGET, timeout_s, sleep=self.sleep, clock=lambda: self.now, attempt=self.login)


def test_the_token_logs_in_as_a_kafka_client_would() -> None:
    broker = Broker(refusals=0)
    broker.check().check(TOKEN)
    [(_, credentials)] = broker.attempts
    assert credentials == Credentials(TOKEN.token_id, TOKEN.hmac, token=True)


def test_refusals_are_retried_with_growing_pauses_until_the_broker_accepts() -> None:
    broker = Broker(refusals=6)
    broker.check().check(TOKEN)
    assert len(broker.attempts) == 7
    pauses = [later - earlier for (earlier, _), (later, _) in zip(broker.attempts, broker.attempts[1:], strict=False)]
    assert pauses == sorted(pauses) and pauses[0] < 0.5 and max(pauses) <= MAX_PAUSE_S


def test_after_the_wait_the_error_names_the_brokers_the_token_and_the_last_answer() -> None:
    broker = Broker(refusals=10_000)
    with pytest.raises(PublishError) as failed:
        broker.check(timeout_s=30).check(TOKEN)
    assert 30 <= broker.now < 30 + MAX_PAUSE_S
    message = str(failed.value)
    assert message == (
        f"the brokers (broker-1:9093,broker-2:9093) did not accept token {TOKEN.token_id} within 30 s, so it was "
        f"not published: {REFUSED}"
    )
    assert TOKEN.hmac not in message


def test_a_stop_during_the_wait_ends_it() -> None:
    class Stopped(Exception):
        pass

    def stop(_: float) -> None:
        raise Stopped

    check = BrokerLoginCheck(TARGET, 60, sleep=stop, attempt=Broker(refusals=1).login)
    with pytest.raises(Stopped):
        check.check(TOKEN)


def test_each_token_is_checked_once_and_published_after_its_check() -> None:
    broker = Broker(refusals=0)
    published: list[str] = []
    publish = checked(broker.check(), lambda credentials: published.append(credentials.token_id))
    renewed = TokenCredentials(TOKEN.token_id, TOKEN.hmac, 5, 6)
    replacement = TokenCredentials("F9gTWaIxRUOaSRH7wY3N1w", "b3RoZXI=", 7, 8)
    for credentials in (TOKEN, renewed, replacement):
        publish(credentials)
    assert published == [TOKEN.token_id, TOKEN.token_id, replacement.token_id]
    assert [credentials.username for _, credentials in broker.attempts] == [TOKEN.token_id, replacement.token_id]


def test_a_token_no_broker_accepts_is_not_published() -> None:
    published: list[str] = []
    publish = checked(Broker(refusals=10_000).check(timeout_s=1), lambda c: published.append(c.token_id))
    with pytest.raises(PublishError):
        publish(TOKEN)
    assert published == []
