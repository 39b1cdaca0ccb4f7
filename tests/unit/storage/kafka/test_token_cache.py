"""KafkaTokenCache's own logic over a scripted cluster (the real one is in tests/api/test_backends.py): this
replica's writes outrank snapshots that do not show them yet, a Bearer miss refreshes at most once a second and
only for a well-formed id, the requester kts acted for replaces kts's own principal, and a token another replica
made a moment ago counts against quotas until a broker describes it."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey, QuotaKind
from app.domain.token_secret import TokenSecret, new_token_id
from app.service.ports import StoredToken
from app.storage.kafka.token_cache import KafkaTokenCache
from app.storage.kafka.token_rpc import ClusterToken

KTS = KafkaPrincipal.user("kts")
ALICE = KafkaPrincipal.user("alice")
SECRET = TokenSecret("s")


def token(token_id: str, requester: KafkaPrincipal = ALICE, expiry: int = 10_000) -> TokenInformation:
    return TokenInformation(token_id, ALICE, requester, (KTS,), 0, expiry, 20_000)


@dataclass
class ScriptedTokens:
    answers: list[TokenInformation] = field(default_factory=list)
    calls: int = 0

    def describe(self) -> list[ClusterToken]:
        self.calls += 1
        return [ClusterToken(found, SECRET.hmac(found.token_id)) for found in self.answers]


@dataclass
class ScriptedCluster:
    tokens: ScriptedTokens = field(default_factory=ScriptedTokens)
    principal: KafkaPrincipal = KTS


@dataclass(frozen=True)
class Made:
    """A token recorded by some replica (``TokenRequesters.recent``)."""

    token_id: str
    owner: KafkaPrincipal

    def counts_against(self, key: QuotaKey, now_ms: int) -> bool:
        return key.kind is QuotaKind.OWNER and key.principal == self.owner


@dataclass
class Requesters:
    known: dict[str, KafkaPrincipal] = field(default_factory=dict)
    asked: list[list[str]] = field(default_factory=list)
    made: list[Made] = field(default_factory=list)

    def requesters(self, token_ids: Collection[str]) -> dict[str, KafkaPrincipal]:
        self.asked.append(sorted(token_ids))
        return {token_id: who for token_id, who in self.known.items() if token_id in token_ids}

    def record(
        self, token_id: str, *, requester: str, owner: str, event_id: int | None, counts_until_ms: int | None = None
    ) -> bool:
        return True

    def recent(self, window_ms: int) -> list[Made]:
        return list(self.made)


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def cache(
    cluster: ScriptedCluster, requesters: Requesters | None = None, clock: Clock | None = None
) -> KafkaTokenCache:
    built = KafkaTokenCache(
        cluster,  # type: ignore[arg-type]
        SECRET,
        requesters or Requesters(),
        interval_ms=1_000,
        timer=clock or Clock(),
    )
    return built


def test_own_writes_outrank_snapshots_that_do_not_show_them_yet() -> None:
    cluster, clock = ScriptedCluster(), Clock()
    view = cache(cluster, clock=clock)
    made = token(new_token_id())
    view.apply(StoredToken(made, 0))
    view.refresh_all()  # the broker has not applied the create yet
    assert view.get(made.token_id) is not None
    cluster.tokens.answers = [made]
    view.refresh_all()
    cluster.tokens.answers = []  # now the brokers say it is gone: the snapshot wins
    view.refresh_all()
    assert view.get(made.token_id) is None


def test_a_discard_outranks_a_snapshot_that_still_shows_the_token() -> None:
    made = token(new_token_id())
    cluster, clock = ScriptedCluster(ScriptedTokens([made])), Clock()
    view = cache(cluster, clock=clock)
    view.refresh_all()
    view.discard(made.token_id)
    view.refresh_all()
    assert view.get(made.token_id) is None
    clock.now += 60  # a write the brokers never show is given up on
    view.refresh_all()
    assert view.get(made.token_id) is not None


def test_a_miss_refreshes_at_most_once_a_second_and_never_for_a_malformed_id() -> None:
    cluster, clock = ScriptedCluster(), Clock()
    view = cache(cluster, clock=clock)
    view.refresh_all()
    assert view.lookup("not a token id") is None and cluster.tokens.calls == 1
    clock.now += 2
    unknown = new_token_id()
    assert view.lookup(unknown) is None and cluster.tokens.calls == 2
    assert view.lookup(unknown) is None and cluster.tokens.calls == 2  # within the second: no refresh
    made = token(new_token_id())
    cluster.tokens.answers = [made]
    clock.now += 2
    assert view.lookup(made.token_id) is not None and cluster.tokens.calls == 3
    assert view.find_by_hmac(SECRET.hmac(made.token_id)) == made.token_id


def test_the_caller_kts_acted_for_replaces_kts_as_the_requester() -> None:
    ours, theirs = token(new_token_id(), requester=KTS), token(new_token_id(), requester=KTS)
    cluster = ScriptedCluster(ScriptedTokens([ours, theirs]))
    requesters = Requesters({ours.token_id: KafkaPrincipal.user("bob")})
    view = cache(cluster, requesters)
    view.refresh_all()
    found = view.get(ours.token_id)
    assert found is not None and found.token.token_requester == KafkaPrincipal.user("bob")
    other = view.get(theirs.token_id)
    assert other is not None and other.token.token_requester == KTS  # kts's own (its start-up probe)
    view.refresh_all()
    assert requesters.asked == [sorted([ours.token_id, theirs.token_id])]  # known ones are not asked again


def test_a_token_another_replica_made_a_moment_ago_counts_until_a_broker_describes_it() -> None:
    """Its replica recorded it before its quota turn ended; this broker's copy of the metadata lags."""
    alice_quota = QuotaKey(QuotaKind.OWNER, ALICE)
    described = token(new_token_id())
    elsewhere = token(new_token_id())
    requesters = Requesters(made=[Made(elsewhere.token_id, ALICE), Made(described.token_id, ALICE)])
    cluster = ScriptedCluster(ScriptedTokens([described]))
    view = cache(cluster, requesters)

    view.catch_up()

    assert view.live_count(alice_quota, 0) == 2  # the described one once, the other by its record
    assert view.get(elsewhere.token_id) is None  # counted, never served: only what brokers show logs in
    cluster.tokens.answers = [described, elsewhere]
    view.catch_up()
    assert view.live_count(alice_quota, 0) == 2


def test_a_recent_token_deleted_since_counts_no_more() -> None:
    """Expired by this replica (its own discard), or described once and gone since: deleted, not lagging."""
    alice_quota = QuotaKey(QuotaKind.OWNER, ALICE)
    mine, seen = token(new_token_id()), token(new_token_id())
    requesters = Requesters(made=[Made(mine.token_id, ALICE), Made(seen.token_id, ALICE)])
    cluster = ScriptedCluster(ScriptedTokens([seen]))
    view = cache(cluster, requesters)
    view.apply(StoredToken(mine, 0))
    view.catch_up()
    assert view.live_count(alice_quota, 0) == 2

    view.discard(mine.token_id)  # expired here
    cluster.tokens.answers = []  # and the other expired elsewhere
    view.catch_up()

    assert view.live_count(alice_quota, 0) == 0
