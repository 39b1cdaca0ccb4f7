"""The sidecar's renewal loop driven by a fake clock, a fake stop signal and an in-memory token service:
renew at 80% of the way to expiry, replace before the maximum lifetime, back off with jitter while the
service is down, stop cleanly, expire on exit."""

from __future__ import annotations

import base64
import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from app.cli.client.http_client import ExpiryJson, RequestRefused, ServiceUnreachable, TokenJson
from app.cli.sidecar.loop import LoopOptions, RenewalLoop
from app.cli.sidecar.token_file import PublishError, TokenCredentials

SECOND = 1_000
EXPIRY_MS, LIFETIME_MS = 10 * SECOND, 60 * SECOND
ME = "User:alice"


class FakeTime:
    """The wall clock, the stop signal the loop waits on, and the sleep it uses at exit, all on one clock."""

    def __init__(self, *, stop_at_ms: int | None = None) -> None:
        self.now_ms = 0
        self.stop_at_ms = stop_at_ms
        self.stopped = False
        self.waits: list[float] = []  # every wait and sleep, in seconds

    def wall_ms(self) -> int:
        return self.now_ms

    def is_set(self) -> bool:
        return self.stopped

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is not None and timeout >= 0
        self.waits.append(timeout)
        target = self.now_ms + round(timeout * 1000)
        if self.stop_at_ms is not None and target >= self.stop_at_ms:
            self.now_ms = max(self.now_ms, self.stop_at_ms)
            self.stopped = True
        else:
            self.now_ms = target
        return self.stopped

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now_ms += round(seconds * 1000)


@dataclass
class FakeToken:
    json: TokenJson
    hmac: str = field(repr=False)


class FakeKts:
    """kts's token API in memory, on its own clock (``ahead_ms`` ahead of the sidecar's)."""

    server = "http://kts.test"

    def __init__(self, time: FakeTime, *, me: str = ME, ahead_ms: int = 0) -> None:
        self.time = time
        self.me = me
        self.ahead_ms = ahead_ms
        self.tokens: dict[str, FakeToken] = {}  # by HMAC
        self.failures: dict[str, list[Exception]] = defaultdict(list)  # raised by the next calls of that name
        self.calls: list[tuple[str, str, int]] = []  # every attempt: (call, token id or owner, server time)
        self.created = 0

    def now(self) -> int:
        return self.time.now_ms + self.ahead_ms

    def create_token(
        self, *, owner: str | None = None, renewers: Iterable[str] = (), max_lifetime_ms: int = -1
    ) -> TokenJson:
        self._maybe_fail("create", owner or self.me)
        self.created += 1
        hmac = base64.b64encode(bytes([self.created]) * 64).decode()
        now = self.now()
        lifetime = LIFETIME_MS if max_lifetime_ms <= 0 else min(max_lifetime_ms, LIFETIME_MS)
        token = TokenJson(
            tokenId=f"token-{self.created}",
            owner=owner or self.me,
            tokenRequester=self.me,
            renewers=list(renewers),
            issueTimestamp=now,
            expiryTimestamp=now + min(EXPIRY_MS, lifetime),
            maxTimestamp=now + lifetime,
            hmac=hmac,
        )
        self.tokens[hmac] = FakeToken(token, hmac)
        return token

    def renew_token(self, hmac: str, renew_time_period_ms: int = -1) -> ExpiryJson:
        token = self._token("renew", hmac)
        if self.me not in (token["owner"], *token["renewers"]):
            raise RequestRefused(403, 63, "User:alice is neither the owner nor a renewer of the token.")
        token["expiryTimestamp"] = min(self.now() + EXPIRY_MS, token["maxTimestamp"])
        return ExpiryJson(tokenId=token["tokenId"], expiryTimestamp=token["expiryTimestamp"])

    def expire_token(self, hmac: str, expiry_time_period_ms: int = -1) -> ExpiryJson:
        token = self._token("expire", hmac)
        if expiry_time_period_ms < 0:
            del self.tokens[hmac]
            return ExpiryJson(tokenId=token["tokenId"], expiryTimestamp=self.now())
        token["expiryTimestamp"] = min(self.now() + expiry_time_period_ms, token["maxTimestamp"])
        return ExpiryJson(tokenId=token["tokenId"], expiryTimestamp=token["expiryTimestamp"])

    def live(self) -> list[str]:
        return [token.json["tokenId"] for token in self.tokens.values() if token.json["expiryTimestamp"] > self.now()]

    def _token(self, call: str, hmac: str) -> TokenJson:
        known = self.tokens.get(hmac)
        self._maybe_fail(call, known.json["tokenId"] if known else "?")
        if known is None:
            raise RequestRefused(404, 62, "The token was not found.")
        if known.json["expiryTimestamp"] <= self.now():
            raise RequestRefused(410, 66, "The token has already expired.")
        return known.json

    def _maybe_fail(self, call: str, subject: str) -> None:
        self.calls.append((call, subject, self.now()))
        if self.failures[call]:
            raise self.failures[call].pop(0)


@dataclass
class Published:
    tokens: list[TokenCredentials] = field(default_factory=list)
    fail: bool = False

    def __call__(self, credentials: TokenCredentials) -> None:
        if self.fail:
            raise PublishError("cannot write /run/kafka/token.properties: No space left on device")
        self.tokens.append(credentials)


def loop(
    time: FakeTime, service: FakeKts, published: Published, self_principal: str | None = ME, **options: Any
) -> RenewalLoop:
    return RenewalLoop(
        service,
        published,
        LoopOptions(**options),
        stop=time,
        self_principal=self_principal,
        wall_ms=time.wall_ms,
        sleep=time.sleep,
    )


def calls(service: FakeKts, name: str | None = None) -> list[tuple[str, str, int]]:
    return [call for call in service.calls if name is None or call[0] == name]


UNREACHABLE = ServiceUnreachable("cannot reach http://kts.test: connection refused")


def test_renews_at_eighty_percent_of_the_way_to_expiry_and_publishes_each_renewal() -> None:
    time = FakeTime(stop_at_ms=20 * SECOND)
    service, published = FakeKts(time), Published()
    assert loop(time, service, published).run() == 0
    assert calls(service) == [("create", ME, 0), ("renew", "token-1", 8_000), ("renew", "token-1", 16_000)]
    assert [token.expiry_timestamp for token in published.tokens] == [10_000, 18_000, 26_000]
    assert service.live() == ["token-1"]  # without expire_on_exit the token outlives the loop


def test_replaces_the_token_before_its_maximum_lifetime_and_ends_the_old_one_after_the_grace_period() -> None:
    time = FakeTime(stop_at_ms=50 * SECOND)
    service, published = FakeKts(time), Published()
    assert loop(time, service, published, grace_ms=1_000).run() == 0
    # 80% of the 60 s lifetime is 48 s: the renewal due then becomes a replacement
    assert calls(service) == [
        ("create", ME, 0),
        *(("renew", "token-1", at) for at in (8_000, 16_000, 24_000, 32_000, 40_000)),
        ("create", ME, 48_000),
        ("expire", "token-1", 48_000),
    ]
    assert [token.token_id for token in published.tokens] == ["token-1"] * 6 + ["token-2"]
    assert service.tokens[published.tokens[0].hmac].json["expiryTimestamp"] == 49_000  # after the grace period
    assert service.live() == ["token-2"]  # by the end of the grace period the old token is gone


def test_backs_off_with_jitter_while_the_service_is_unreachable_then_renews(
    caplog: pytest.LogCaptureFixture,
) -> None:
    time = FakeTime(stop_at_ms=12 * SECOND)
    service, published = FakeKts(time), Published()
    service.failures["renew"] = [UNREACHABLE] * 3
    with caplog.at_level(logging.INFO, logger="kts.sidecar"):
        assert loop(time, service, published).run() == 0
    backoffs = time.waits[1:4]  # after the wait for the renewal point
    for attempt, delay in enumerate(backoffs):
        ceiling = 0.5 * 2**attempt
        assert ceiling / 2 <= delay <= ceiling  # "equal jitter": between half and all of the ceiling
    assert len(calls(service, "renew")) == 4
    retries = [record.getMessage() for record in caplog.records if "retrying in" in record.getMessage()]
    assert len(retries) == 3
    assert retries[0].startswith("renew token token-1 failed (cannot reach http://kts.test: connection refused)")
    assert published.tokens[-1].expiry_timestamp > published.tokens[0].expiry_timestamp


def test_a_retry_after_hint_is_honoured() -> None:
    time = FakeTime(stop_at_ms=9 * SECOND)
    service, published = FakeKts(time), Published()
    service.failures["create"] = [RequestRefused(503, None, "ZooKeeper is unavailable.", retry_after_s=7.0)]
    assert loop(time, service, published).run() == 0
    assert time.waits[0] == 7.0
    assert calls(service) == [("create", ME, 0), ("create", ME, 7_000)]


def test_the_first_create_is_retried_while_the_service_is_down() -> None:
    time = FakeTime(stop_at_ms=5 * SECOND)
    service, published = FakeKts(time), Published()
    service.failures["create"] = [UNREACHABLE] * 2
    assert loop(time, service, published).run() == 0
    assert len(calls(service, "create")) == 3
    assert len(published.tokens) == 1


def test_a_refused_first_create_propagates_and_publishes_nothing() -> None:
    time = FakeTime()
    service, published = FakeKts(time), Published()
    service.failures["create"] = [RequestRefused(401, None, "Authentication failed.")]
    with pytest.raises(RequestRefused, match="Authentication failed"):
        loop(time, service, published).run()
    assert published.tokens == []


def test_a_renewal_refused_because_the_token_expired_replaces_it() -> None:
    time = FakeTime(stop_at_ms=9 * SECOND)
    service, published = FakeKts(time), Published()
    service.failures["renew"] = [RequestRefused(410, 66, "The token has already expired.")]
    assert loop(time, service, published, grace_ms=1_000).run() == 0
    assert calls(service) == [
        ("create", ME, 0),
        ("renew", "token-1", 8_000),
        ("create", ME, 8_000),
        ("expire", "token-1", 8_000),
    ]
    assert [token.token_id for token in published.tokens] == ["token-1", "token-2"]


def test_stopping_before_the_first_token_exits_0() -> None:
    time = FakeTime(stop_at_ms=1_000)
    service, published = FakeKts(time), Published()
    service.failures["create"] = [UNREACHABLE] * 10
    assert loop(time, service, published, expire_on_exit=True).run() == 0
    assert published.tokens == []
    assert time.stopped


def test_expire_on_exit_ends_the_current_and_the_replaced_tokens() -> None:
    time = FakeTime(stop_at_ms=49 * SECOND)
    service, published = FakeKts(time), Published()
    assert loop(time, service, published, expire_on_exit=True, grace_ms=30_000).run() == 0
    assert service.tokens == {}  # both deleted, not merely expired
    assert calls(service, "expire") == [("expire", "token-2", 49_000), ("expire", "token-1", 49_000)]


def test_expiring_at_exit_retries_then_reports_failure() -> None:
    time = FakeTime(stop_at_ms=5 * SECOND)
    service, published = FakeKts(time), Published()
    service.failures["expire"] = [UNREACHABLE] * 3
    assert loop(time, service, published, expire_on_exit=True).run() == 1
    assert len(calls(service, "expire")) == 3
    assert 0.25 <= time.waits[-2] <= 0.5 and 0.5 <= time.waits[-1] <= 1.0  # the pauses between the three tries
    assert service.live() == ["token-1"]


def test_at_exit_a_token_already_gone_is_fine_and_a_refusal_is_not(caplog: pytest.LogCaptureFixture) -> None:
    time = FakeTime(stop_at_ms=5 * SECOND)
    service, published = FakeKts(time), Published()
    service.failures["expire"] = [RequestRefused(404, 62, "The token was not found.")]
    with caplog.at_level(logging.INFO, logger="kts.sidecar"):
        assert loop(time, service, published, expire_on_exit=True).run() == 0
    assert "token token-1 was already gone" in caplog.text
    refusing = FakeTime(stop_at_ms=5 * SECOND)
    service = FakeKts(refusing)
    service.failures["expire"] = [RequestRefused(403, 63, "Not the owner.")]
    assert loop(refusing, service, Published(), expire_on_exit=True).run() == 1
    assert len(calls(service, "expire")) == 1  # a refusal is not retried


def test_tokens_for_another_owner_name_this_client_a_renewer_so_it_may_renew() -> None:
    time = FakeTime(stop_at_ms=9 * SECOND)
    service, published = FakeKts(time, me="User:nimbus"), Published()
    assert loop(time, service, published, self_principal="User:nimbus", owner="User:joe").run() == 0
    (token,) = service.tokens.values()
    assert (token.json["owner"], token.json["renewers"]) == ("User:joe", ["User:nimbus"])
    assert [call[0] for call in calls(service)] == ["create", "renew"]


def test_a_certificate_login_learns_its_principal_and_replaces_the_token_it_may_not_renew(
    caplog: pytest.LogCaptureFixture,
) -> None:
    time = FakeTime(stop_at_ms=17 * SECOND)
    service, published = FakeKts(time, me="User:spark"), Published()
    with caplog.at_level(logging.INFO, logger="kts.sidecar"):
        assert loop(time, service, published, self_principal=None, owner="User:joe").run() == 0
    first, second = (token.json for token in service.tokens.values())
    assert first["renewers"] == [] and second["renewers"] == ["User:spark"]
    assert [(call, at) for call, _, at in calls(service)] == [("create", 0), ("create", 8_000), ("renew", 16_000)]
    assert "neither owner nor renewer" in caplog.text


def test_follows_the_services_clock_not_its_own() -> None:
    time = FakeTime(stop_at_ms=9 * SECOND)
    service, published = FakeKts(time, ahead_ms=3_600_000), Published()
    assert loop(time, service, published).run() == 0
    assert calls(service) == [("create", ME, 3_600_000), ("renew", "token-1", 3_608_000)]


def test_a_token_that_cannot_be_published_ends_the_loop_with_1(caplog: pytest.LogCaptureFixture) -> None:
    time = FakeTime(stop_at_ms=60 * SECOND)
    service, published = FakeKts(time), Published(fail=True)
    with caplog.at_level(logging.INFO, logger="kts.sidecar"):
        assert loop(time, service, published, expire_on_exit=True).run() == 1
    assert "cannot write /run/kafka/token.properties: No space left on device" in caplog.text
    assert service.tokens == {}  # the token nobody could read is expired on the way out


def test_the_log_never_holds_an_hmac(caplog: pytest.LogCaptureFixture) -> None:
    time = FakeTime(stop_at_ms=50 * SECOND)
    service, published = FakeKts(time), Published()
    with caplog.at_level(logging.DEBUG):
        loop(time, service, published, expire_on_exit=True, grace_ms=1_000).run()
    assert "renewed token token-1" in caplog.text and "replaced token token-1 by token-2" in caplog.text
    for token in published.tokens:
        assert token.hmac not in caplog.text
