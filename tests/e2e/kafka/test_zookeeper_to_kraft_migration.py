"""A real ZooKeeper to KRaft migration of a two-broker Kafka 3.9.2 cluster (tests/kafka/migration.py), finalized at
the end, with ``kts serve`` in ZooKeeper mode beside it creating tokens without pause the whole time (with
``token.renewers.add`` naming kts's principal on the Kafka protocol), and a second ``kts serve`` on
``bootstrap.servers`` (the Kafka protocol) sharing its audit database.

What must hold: every token, ACL and SCRAM user kts made before the KRaft controller claimed the cluster is
honoured on the KRaft broker at the end (tokens log in with their HMACs, Kafka's own tools see them, ACLs are
enforced, users log in); from the claim on, kts in ZooKeeper mode answers every write 503 CLUSTER_MIGRATING, so no
token it answered 201 is ever deleted by the controller; the audit trail has one event per request, saying which.
kts on bootstrap.servers serves the tokens made in ZooKeeper mode unchanged in every phase and mints tokens that
log in. During dual-write (broker 0 restarted as a KRaft broker, broker 1 still in ZooKeeper mode) a token it mints
logs in on both brokers, and one it expires is refused on both, because kts in ZooKeeper mode bridges the KRaft
controller's token znodes with the change notifications the controller leaves out (token.bridge); after the switch
it renews and expires a token made in ZooKeeper mode, and the broker honours both.

The test prints a timeline: when each phase began, what kts answered, which tokens logged in at each step.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from app.cli.client.kafka_login import Credentials, LoginError
from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper
from app.cli.server.kafka_broker.broker import User
from tests.api.conftest import put_user
from tests.conftest import SECRET, write_properties
from tests.e2e.conftest import KTS, ROOT, kts_env, start_kts
from tests.kafka.brokers import ADMIN, RunningBroker
from tests.kafka.brokers import KTS as KTS_LOGIN
from tests.kafka.migration import Migration, login_succeeds, wait_until

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(1800)]

PASSWORDS = {"admin": ADMIN.password, "alice": "alice-pw", "bob": "bob-pw", "carol": "carol-pw", "ops": "ops-pw"}
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
CREATE_PAUSE_S = 0.2  # between the creates of the writer that runs through the migration


@dataclass
class Timeline:
    """Events in wall-clock time since the start of the test, printed at the end."""

    started_ms: int = field(default_factory=lambda: _now_ms())
    entries: list[tuple[int, str]] = field(default_factory=list)

    def mark(self, text: str, at_ms: int | None = None) -> None:
        self.entries.append(((at_ms or _now_ms()) - self.started_ms, text))
        print(f"[{self.entries[-1][0] / 1000:8.2f} s] {text}", flush=True)

    def render(self) -> str:
        lines = [f"{at / 1000:8.2f} s  {text}" for at, text in sorted(self.entries, key=lambda entry: entry[0])]
        return "\n".join(["MIGRATION TIMELINE (seconds since the test began)", *lines])


@dataclass(frozen=True)
class Answer:
    sent_ms: int
    answered_ms: int
    status: int
    token_id: str | None
    hmac: str | None
    error: str | None


class Creator(threading.Thread):
    """Alice creating tokens through kts, one after another, from before the migration until told to stop."""

    def __init__(self, url: str) -> None:
        super().__init__(name="kts-creator", daemon=True)
        self.url = url
        self.answers: list[Answer] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.url, auth=("alice", PASSWORDS["alice"]), timeout=30) as client:
            while not self.stopped.is_set():
                sent = _now_ms()
                try:
                    response = client.post("/v1/tokens", json={"renewers": ["User:bob"]})
                except httpx.HTTPError as exc:  # kts unreachable: an answer the test's assertions will refuse
                    self.answers.append(Answer(sent, _now_ms(), 0, None, None, repr(exc)))
                    self.stopped.wait(CREATE_PAUSE_S)
                    continue
                body = response.json()
                self.answers.append(
                    Answer(
                        sent,
                        _now_ms(),
                        response.status_code,
                        body.get("tokenId"),
                        body.get("hmac"),
                        body.get("error"),
                    )
                )
                self.stopped.wait(CREATE_PAUSE_S)

    def stop(self) -> list[Answer]:
        self.stopped.set()
        self.join(60)
        return list(self.answers)


@pytest.fixture
def chroot(zookeeper: EmbeddedZooKeeper) -> str:
    return f"{zookeeper.connect_string}/kafka-migration-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def migration(tmp_path: Path, chroot: str) -> Iterator[Migration]:
    cluster = Migration(tmp_path / "kafka", chroot, SECRET)
    yield cluster
    cluster.stop()


@pytest.fixture
def raw(chroot: str) -> Iterator[KazooClient]:
    client = KazooClient(hosts=chroot)
    yield client
    client.stop()
    client.close()


def test_kts_follows_a_real_migration_without_losing_a_token(
    migration: Migration, raw: KazooClient, chroot: str, tmp_path: Path, processes: list[subprocess.Popen[str]]
) -> None:
    timeline = Timeline()
    try:
        _migrate(migration, raw, chroot, tmp_path, processes, timeline)
    finally:
        text = timeline.render()
        (tmp_path / "timeline.txt").write_text(text + "\n")
        print("\n" + text, flush=True)


def _migrate(
    migration: Migration,
    raw: KazooClient,
    chroot: str,
    tmp_path: Path,
    processes: list[subprocess.Popen[str]],
    timeline: Timeline,
) -> None:
    # Phase 1: a ZooKeeper-mode cluster, kts its token authority.
    migration.start_zookeeper_brokers()
    raw.start(10)
    cluster_id = json.loads(raw.get("/cluster/id")[0])["id"]
    timeline.mark(
        f"Kafka 3.9.2 brokers 0 and 1 up in ZooKeeper mode (inter.broker.protocol.version=3.9), cluster {cluster_id}"
    )
    put_user(raw, "admin", ADMIN.password)  # kts's first super user, as kafka-configs.sh writes it
    audit_db = f"sqlite:///{tmp_path / 'audit.db'}"  # one audit database, carried over to bootstrap.servers
    url = start_kts(
        processes,
        tmp_path,
        "kts-zk",
        KTS_AUDIT_DB_URL=audit_db,
        KTS_ZOOKEEPER_CONNECT=chroot,
        KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET,
        KTS_SUPER_USERS="User:admin",
        KTS_TOKEN_QUOTA_PER_OWNER="0",
        KTS_TOKEN_RENEWERS_ADD=KTS_LOGIN.principal,  # kts's principal on bootstrap.servers (admin.sasl.jaas.config)
    )
    kts = httpx.Client(base_url=url, timeout=30)
    phases_seen = _PhaseWatcher(url)
    phases_seen.start()
    timeline.mark(f"kts serve up in ZooKeeper mode; {_status_line(url)}")

    # and kts's own login to the brokers once it speaks the Kafka protocol (never a caller's), a broker super user
    for name, password in [*PASSWORDS.items(), (KTS_LOGIN.name, KTS_LOGIN.password)]:
        for mechanism in MECHANISMS:
            _ok(
                kts.put(
                    f"/v1/users/{name}/credentials",
                    json={"mechanism": mechanism, "password": password},
                    auth=_basic("admin"),
                )
            )
    grants = [
        {"resourceType": "User", "resourceName": "User:bob", "principal": "User:alice", "operation": "CreateTokens"},
        {"resourceType": "Cluster", "resourceName": "kafka-cluster", "principal": "User:ops", "operation": "Describe"},
    ]
    for grant in grants:
        _ok(kts.post("/v1/acls", json=grant | {"permissionType": "Allow"}, auth=_basic("admin")))
    before = _ok(kts.post("/v1/tokens", json={"renewers": ["User:bob"]}, auth=_basic("alice")))
    for_bob = _ok(kts.post("/v1/tokens", json={"owner": "User:bob", "renewers": ["User:alice"]}, auth=_basic("alice")))
    renewed = _ok(kts.post("/v1/tokens/renew", json={"hmac": before["hmac"]}, auth=_basic("bob")))
    spare = _ok(kts.post("/v1/tokens", json={}, auth=_basic("alice")))  # renewed and expired after the switch
    assert spare["renewers"] == [KTS_LOGIN.principal], spare
    timeline.mark(
        "through kts: SCRAM users admin, alice, bob, carol, ops, kts (both mechanisms); ACLs alice CreateTokens on "
        f"User:bob, ops Describe on the cluster; tokens {before['tokenId']} (alice, renewer bob, renewed by bob) "
        f"and {for_bob['tokenId']} (owner bob, made by alice)"
    )
    zk_broker = migration.running_broker()
    _check_cluster(zk_broker, timeline, "ZooKeeper-mode broker", [before, for_bob])
    zk_made = {
        token["tokenId"]: _described_by(kts, token["tokenId"]) | {"hmac": token["hmac"]} for token in (before, for_bob)
    }
    protocol = ProtocolKts(processes, tmp_path, migration.bootstrap, audit_db, timeline)
    protocol.serves(zk_made, "ZooKeeper mode")
    protocol.mints("ZooKeeper mode", zk_broker)

    # The writer that runs through the migration.
    creator = Creator(url)
    creator.start()
    wait_until(lambda: len(creator.answers) >= 3, "first creates")
    timeline.mark("alice starts creating tokens through kts, one every 0.2 s", creator.answers[0].sent_ms)

    # Phase 2: the KRaft controller is provisioned for the migration and waits for the broker.
    migration.start_controller(cluster_id)
    migration_stat = raw.exists("/migration")
    timeline.mark(
        f"KRaft controller 3000 up: it created /migration = {raw.get('/migration')[0].decode()}", migration_stat.ctime
    )
    _kts_sees(url, phases_seen, "pre-migration", timeline)
    protocol.mints("pre-migration", zk_broker)

    # Phase 3: the brokers restarted into migration mode; the controller claims the cluster and copies it.
    claimed = _ClaimWatcher(chroot)
    claimed.start()
    timeline.mark("brokers 0 then 1 stopping, to restart with zookeeper.metadata.migration.enable=true")
    migration.restart_brokers_into_migration()
    timeline.mark("brokers 0 and 1 up in migration mode (still ZooKeeper mode)")
    claim_seen_ms = claimed.wait()
    controller_data, controller_stat = raw.get("/controller")
    timeline.mark(
        f"KRaft controller claimed the cluster: /controller = {controller_data.decode()}", controller_stat.ctime
    )
    timeline.mark("the claim seen in ZooKeeper by the test's watcher", claim_seen_ms)
    kts_saw_claim_ms = _kts_sees(url, phases_seen, "migrating", timeline)
    wait_until(lambda: json.loads(raw.get("/migration")[0])["kraft_metadata_offset"] > 0, "metadata copied")
    wait_until(lambda: migration.completed_line() is not None, "the controller's completion line")
    timeline.mark(f"controller: {migration.completed_line()}")
    wait_until(lambda: any(a.sent_ms > claim_seen_ms + 3000 for a in creator.answers), "creates after the claim")
    answers = creator.stop()
    timeline.mark(f"alice's writer stopped after {len(answers)} creates")

    # kts's answers around the claim.
    made = [answer for answer in answers if answer.status == 201]
    refused = [answer for answer in answers if answer.status != 201]
    assert made and refused, answers
    assert {answer.status for answer in refused} == {503}, refused
    assert {answer.error for answer in refused} == {"CLUSTER_MIGRATING"}, refused
    assert all(answer.sent_ms < claim_seen_ms for answer in made), "a create sent after the claim was answered 201"
    claim_ms = controller_stat.ctime
    phases = [
        ("ZooKeeper mode", timeline.started_ms, migration_stat.ctime),
        ("pre-migration", migration_stat.ctime, claim_ms),
        ("from the claim on", claim_ms, 2**63),
    ]
    for name, since, until in phases:
        sent = [answer for answer in answers if since <= answer.sent_ms < until]
        timeline.mark(f"kts's answers to the creates sent in {name}: {_count(sent)}", max(since, answers[0].sent_ms))
    in_flight = [answer for answer in answers if answer.sent_ms < claim_ms <= answer.answered_ms]
    timeline.mark(
        f"creates in flight when the claim landed (sent before, answered after): {_count(in_flight)}; the last 201 "
        f"was sent {claim_ms - max(answer.sent_ms for answer in made)} ms before the claim; kts's cluster status "
        f"reported migrating {kts_saw_claim_ms - claim_ms} ms after it",
        claim_ms,
    )
    writes = {
        "renew": kts.post("/v1/tokens/renew", json={"hmac": before["hmac"]}, auth=_basic("bob")),
        "expire": kts.post("/v1/tokens/expire", json={"hmac": for_bob["hmac"]}, auth=_basic("alice")),
        "ACL add": kts.post(
            "/v1/acls", json=grants[0] | {"principal": "User:carol", "permissionType": "Allow"}, auth=_basic("admin")
        ),
        "credential set": kts.put(
            "/v1/users/dave/credentials",
            json={"mechanism": "SCRAM-SHA-512", "password": "dave-pw"},
            auth=_basic("admin"),
        ),
    }
    for name, response in writes.items():
        assert (response.status_code, response.json()["error"]) == (503, "CLUSTER_MIGRATING"), (name, response.text)
    assert kts.get(f"/v1/tokens/{before['tokenId']}", auth=_basic("alice")).status_code == 200
    timeline.mark(
        "kts after the claim: renew, expire, ACL add, credential set all 503 CLUSTER_MIGRATING "
        f"(Retry-After {writes['renew'].headers['retry-after']}); describe 200"
    )
    made_tokens = [{"tokenId": a.token_id, "hmac": a.hmac} for a in made]
    hybrid = migration.running_broker()
    logged = sum(login_succeeds(hybrid, _token(token)) for token in [before, for_bob, *made_tokens])
    timeline.mark(f"broker 0 in migration mode: {logged} of {2 + len(made)} tokens made through kts log in")
    protocol.serves(zk_made, "migration, brokers still in ZooKeeper mode")
    zk_mode_1 = migration.running_broker(1)
    protocol.mints_and_expires(
        "dual-write, both brokers in migration mode",
        {"broker 0 (ZooKeeper mode)": hybrid, "broker 1 (ZooKeeper mode)": zk_mode_1},
    )

    # Phase 4: broker 0 restarted as a KRaft broker, broker 1 still in ZooKeeper mode; then broker 1.
    timeline.mark("broker 0 stopping, to restart with process.roles=broker, no zookeeper.connect")
    migration.restart_broker_as_kraft(0)
    timeline.mark("broker 0 up as a KRaft broker; broker 1 still in ZooKeeper mode (migration mode)")
    kraft = migration.running_broker(0)
    protocol.mints_and_expires(
        "dual-write, broker 0 KRaft, broker 1 ZooKeeper mode",
        {"broker 0 (KRaft)": kraft, "broker 1 (ZooKeeper mode)": zk_mode_1},
    )
    bridged = [event for event in _audit(kts, "token.bridge") if event["serviceId"] == "kts-zk"]
    bridged_ids = {event["tokenId"] for event in bridged}
    assert {token["tokenId"] for _, token in protocol.expired} <= bridged_ids, bridged
    assert all("hmac" not in json.dumps(event).lower() for event in bridged)
    timeline.mark(
        f"kts in ZooKeeper mode bridged {len(bridged)} token changes of the KRaft controller (token.bridge events: "
        f"{_bridge_counts(bridged)}); {_metric(url, 'kts_token_bridge_notifications_total')}"
    )
    timeline.mark("broker 1 stopping, to restart with process.roles=broker, no zookeeper.connect")
    migration.restart_broker_as_kraft(1)
    timeline.mark("broker 1 up as a KRaft broker")
    _kts_sees(url, phases_seen, "migrated", timeline)
    phases_seen.stopped.set()
    _check_cluster(kraft, timeline, "KRaft broker", [before, for_bob])
    for token in made_tokens:
        kraft.wait_for_login(_token(token), ("SCRAM-SHA-512",), timeout_s=60)
    described = _described(kraft, "User:alice")
    kts_made = {before["tokenId"], *(token["tokenId"] for token in made_tokens)}
    assert set(described) >= kts_made
    assert described[before["tokenId"]] == before["hmac"]
    timeline.mark(
        f"KRaft broker: all {len(made)} tokens kts answered 201 to alice's writer log in; Kafka's "
        f"kafka-delegation-tokens.sh describes them with kts's HMACs ({len(described)} tokens of alice)"
    )
    renewal = kraft.tokens("--renew", "--hmac", before["hmac"], "--renew-time-period", "-1", user=_user("bob"))
    assert "renewed" in renewal.stdout.lower() or "expiry" in renewal.stdout.lower(), renewal.stdout
    timeline.mark(
        f"KRaft broker: bob renews {before['tokenId']} as its renewer: {renewal.stdout.strip().splitlines()[-1]}"
    )
    protocol.serves(zk_made, "migration, broker 0 a KRaft broker", renewed_by_kafka={before["tokenId"]})
    protocol.logged_in_everywhere(kraft, "migration, broker 0 a KRaft broker")
    protocol.mints("migration, broker 0 a KRaft broker", kraft)
    protocol.renews_and_expires_zookeeper_made(spare, kraft)

    # Phase 5: the controller out of migration mode; ZooKeeper is no longer written.
    migration.finalize()
    timeline.mark("KRaft controller 3000 restarted without zookeeper.metadata.migration.enable: migration finalized")
    for token in (before, for_bob, *made_tokens[:5]):
        kraft.wait_for_login(_token(token), ("SCRAM-SHA-512",), timeout_s=60)
    protocol.logged_in_everywhere(kraft, "after finalization")
    protocol.mints("after finalization", kraft)
    refused_after = kts.post("/v1/tokens", json={}, auth=_basic("alice"))
    assert (refused_after.status_code, refused_after.json()["error"]) == (503, "CLUSTER_MIGRATING")
    timeline.mark(f"after finalization: kts in ZooKeeper mode still answers 503 CLUSTER_MIGRATING; {_status_line(url)}")
    assert renewed["expiryTimestamp"] > 0

    # The audit trail of kts in ZooKeeper mode: one event per request, saying how it ended.
    events = [event for event in _audit(kts, "token.create") if event["serviceId"] == "kts-zk"]
    by_token = {event["tokenId"]: event for event in events}
    for answer in made:
        assert by_token[answer.token_id]["outcome"] == "succeeded"
    failed = [event for event in events if event["outcome"] == "failed"]
    assert len(failed) == len(refused) + 1  # and the create refused after finalization
    assert {event["details"].get("error") for event in failed} == {"CLUSTER_MIGRATING"}
    assert len(events) == 3 + len(answers) + 1
    # A create whose answer a controller's restart lost stays pending until the leader's reconciler settles it by
    # its marker (the audit protocol): none may stay pending.
    wait_until(lambda: not _pending(kts), "every audit event settled", timeout_s=120)
    timeline.mark(
        f"audit of kts in ZooKeeper mode: {len(events)} token.create events ({len(events) - len(failed)} succeeded, "
        f"{len(failed)} failed with CLUSTER_MIGRATING), one per request, none pending"
    )
    protocol.audit_carries_over()


class ProtocolKts:
    """A second kts, on ``bootstrap.servers`` (the Kafka protocol) and the same audit database, beside the
    ZooKeeper-mode one through the whole migration: it serves the tokens made in ZooKeeper mode (same ids, HMACs,
    owners, requesters, renewers and times) and mints tokens of its own in every phase."""

    def __init__(
        self, processes: list[subprocess.Popen[str]], tmp_path: Path, bootstrap: str, audit_db: str, timeline: Timeline
    ) -> None:
        self.timeline = timeline
        self.url = start_kts(
            processes,
            tmp_path,
            "kts-kafka",
            KTS_AUDIT_DB_URL=audit_db,
            KTS_BOOTSTRAP_SERVERS=bootstrap,
            KTS_ADMIN_SECURITY_PROTOCOL="SASL_PLAINTEXT",
            KTS_ADMIN_SASL_MECHANISM="SCRAM-SHA-512",
            KTS_ADMIN_SASL_JAAS_CONFIG="org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{KTS_LOGIN.name}" password="{KTS_LOGIN.password}";',
            KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET,
            KTS_SUPER_USERS="User:admin",
            KTS_CLUSTER_CACHE_REFRESH_MS="500",
            KTS_ADMIN_REQUEST_TIMEOUT_MS="15000",
        )
        self.http = httpx.Client(base_url=self.url, timeout=60)
        self.minted: list[tuple[str, dict[str, Any]]] = []
        self.expired: list[tuple[str, dict[str, Any]]] = []  # minted, then expired (mints_and_expires)
        timeline.mark(f"kts serve up on bootstrap.servers={bootstrap}, same audit database; backend {self._backend()}")

    def _backend(self) -> str:
        return str(_eventually_ok(lambda: self.http.get("/v1/cluster/status", auth=_basic("admin")))["backend"])

    def serves(self, zk_made: dict[str, dict[str, Any]], phase: str, renewed_by_kafka: set[str] = frozenset()) -> None:
        """Every token made in ZooKeeper mode, described as kts described it then, and verified by its HMAC."""
        for token_id, expected in zk_made.items():
            got = _eventually_ok(
                lambda token_id=token_id: self.http.get(f"/v1/tokens/{token_id}", auth=_basic("admin"))
            )
            fields = ("tokenId", "owner", "tokenRequester", "renewers", "issueTimestamp", "maxTimestamp")
            if token_id not in renewed_by_kafka:
                fields += ("expiryTimestamp",)
            assert {key: got[key] for key in fields} == {key: expected[key] for key in fields}, (got, expected)
            verified = self.http.post(
                "/v1/tokens/verify", json={"tokenId": token_id, "hmac": expected["hmac"]}, auth=_basic("admin")
            )
            assert verified.status_code == 200, verified.text
        self.timeline.mark(
            f"kts on bootstrap.servers ({phase}): serves the {len(zk_made)} tokens made in ZooKeeper mode with "
            "the same ids, owners, requesters, renewers and times, and verifies their HMACs"
        )

    def mints(self, phase: str, broker: RunningBroker, *, must_log_in: bool = True) -> dict[str, Any]:
        token = _eventually_ok(
            lambda: self.http.post("/v1/tokens", json={"renewers": ["User:bob"]}, auth=_basic("alice")), status=201
        )
        self.minted.append((phase, token))
        logged_in = _logs_in_within(broker, _token(token), 20.0 if not must_log_in else 60.0)
        if must_log_in:
            assert logged_in, f"{token['tokenId']} made through bootstrap.servers during {phase} does not log in"
        self.timeline.mark(
            f"kts on bootstrap.servers ({phase}): created {token['tokenId']} (201); it "
            + ("logs in on broker 0" if logged_in else "does not log in on broker 0 within 20 s")
        )
        return token

    def logged_in_everywhere(self, broker: RunningBroker, phase: str) -> None:
        for _, token in self.minted:
            broker.wait_for_login(_token(token), ("SCRAM-SHA-512",), timeout_s=60)
            _eventually_ok(lambda token=token: self.http.get(f"/v1/tokens/{token['tokenId']}", auth=_basic("alice")))
        self.timeline.mark(
            f"kts on bootstrap.servers ({phase}): all {len(self.minted)} tokens it made so far log in and are served"
        )

    def renews_and_expires_zookeeper_made(self, zk_token: dict[str, Any], broker: RunningBroker) -> None:
        """A token made in ZooKeeper mode with kts's principal among its renewers (token.renewers.add): kts on
        bootstrap.servers renews it for its owner, and expires it; the broker honours both."""
        renewed = self.http.post(
            "/v1/tokens/renew", json={"hmac": zk_token["hmac"], "renewTimePeriodMs": 3_600_000}, auth=_basic("alice")
        )
        assert renewed.status_code == 200, renewed.text
        new_expiry = renewed.json()["expiryTimestamp"]
        # kts on bootstrap.servers describes tokens as the brokers answer DescribeDelegationToken: the broker's view.
        wait_until(
            lambda: (
                self.http.get(f"/v1/tokens/{zk_token['tokenId']}", auth=_basic("admin")).json().get("expiryTimestamp")
                == new_expiry
            ),
            "the broker describing the renewed expiry",
            timeout_s=120,
        )
        assert login_succeeds(broker, _token(zk_token))
        expired = self.http.post("/v1/tokens/expire", json={"hmac": zk_token["hmac"]}, auth=_basic("alice"))
        assert expired.status_code == 200, expired.text
        expired_at = time.monotonic()
        wait_until(lambda: not login_succeeds(broker, _token(zk_token)), "the expired token refused", timeout_s=120)
        self.timeline.mark(
            f"after the switch, kts on bootstrap.servers renews {zk_token['tokenId']} (made in ZooKeeper mode, "
            f"renewer {KTS_LOGIN.principal} by token.renewers.add) for alice: 200, the broker describes the new expiry "
            f"{new_expiry} and logs it in; expires it: 200, refused by broker 0 "
            f"{time.monotonic() - expired_at:.2f} s later"
        )

    def mints_and_expires(self, phase: str, brokers: dict[str, RunningBroker]) -> None:
        """A token minted through kts logs in on every broker, then expired through kts is refused on every broker;
        the seconds from the 201 (the expire's 200) to the first login (refusal) on each, measured side by side."""
        token = _eventually_ok(
            lambda: self.http.post("/v1/tokens", json={"renewers": ["User:bob"]}, auth=_basic("alice")), status=201
        )
        created = time.monotonic()
        self.expired.append((phase, token))
        logins = _side_by_side(brokers, _token(token), accepted=True, since=created)
        self.timeline.mark(
            f"kts on bootstrap.servers ({phase}): created {token['tokenId']} (201); first login "
            + ", ".join(f"on {name} {seconds:.2f} s" for name, seconds in logins.items())
            + " after the 201"
        )
        expired = self.http.post("/v1/tokens/expire", json={"hmac": token["hmac"]}, auth=_basic("alice"))
        assert expired.status_code == 200, expired.text
        expired_at = time.monotonic()
        refusals = _side_by_side(brokers, _token(token), accepted=False, since=expired_at)
        self.timeline.mark(
            f"kts on bootstrap.servers ({phase}): expired {token['tokenId']} (200); first refusal "
            + ", ".join(f"on {name} {seconds:.2f} s" for name, seconds in refusals.items())
            + " after the 200"
        )

    def audit_carries_over(self) -> None:
        events = _audit(self.http, "token.create")
        by_service: dict[str, int] = {}
        for event in events:
            by_service[event["serviceId"]] = by_service.get(event["serviceId"], 0) + 1
        ours = [event for event in events if event["serviceId"] == "kts-kafka"]
        assert len(ours) == len(self.minted) + len(self.expired)
        assert all(event["outcome"] == "succeeded" for event in ours)
        self.timeline.mark(
            f"audit through kts on bootstrap.servers: one database, token.create events by service {by_service}"
        )


def _side_by_side(
    brokers: dict[str, RunningBroker],
    credentials: Credentials,
    *,
    accepted: bool,
    since: float,
    timeout_s: float = 180.0,
) -> dict[str, float]:
    """For each broker, polled in a thread of its own: the seconds from ``since`` (monotonic) until a login with
    ``credentials`` first succeeds (``accepted``) or is first refused. Fails when one never does within the time-out,
    which is generous: the machine may be loaded."""
    seen: dict[str, float] = {}

    def poll(name: str, broker: RunningBroker) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if login_succeeds(broker, credentials) == accepted:
                    seen[name] = time.monotonic() - since
                    return
            except (LoginError, OSError) as exc:  # a broker busy: try again
                print(f"{name}: {exc}")
            time.sleep(0.05)

    threads = [threading.Thread(target=poll, args=item, daemon=True) for item in brokers.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout_s + 60)
    what = "log in" if accepted else "be refused"
    assert set(seen) == set(brokers), f"{credentials.username} did not {what} on {sorted(set(brokers) - set(seen))}"
    return {name: seen[name] for name in brokers}


def _bridge_counts(events: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for event in events:
        change = str(event["details"].get("change"))
        counts[change] = counts.get(change, 0) + 1
    return ", ".join(f"{count} {change}" for change, count in sorted(counts.items()))


def _metric(url: str, name: str) -> str:
    """``name value`` as kts's /metrics says it."""
    for line in httpx.get(f"{url}/metrics", timeout=30).text.splitlines():
        if line.startswith(name + " "):
            return line
    return f"{name} absent"


def _check_cluster(broker: RunningBroker, timeline: Timeline, where: str, tokens: list[dict[str, Any]]) -> None:
    """Users log in, tokens log in (kts's SCRAM client, and Kafka's own tools for one), ACLs are enforced."""
    for name in ("alice", "bob", "ops"):
        for mechanism in MECHANISMS:
            broker.wait_for_login(Credentials(name, PASSWORDS[name]), (mechanism,))
    for token in tokens:
        broker.wait_for_login(_token(token), MECHANISMS)
    listed = broker.tool("TopicCommand", "--list", user=User(tokens[0]["tokenId"], tokens[0]["hmac"]), token=True)
    assert listed.returncode == 0
    created = broker.tokens(
        "--create", "--max-life-time-period", "-1", "--owner-principal", "User:bob", user=_user("alice")
    )
    assert "User:bob" in created.stdout, created.stdout
    refused = broker.tokens(
        "--create", "--max-life-time-period", "-1", "--owner-principal", "User:bob", user=_user("carol"), check=False
    )
    assert refused.returncode != 0 or "User:bob" not in refused.stdout
    print(f"{where}, carol creating a token for bob: {(refused.stdout + refused.stderr).strip()[-300:]}")
    acls = broker.acls("--list", user=_user("ops"))
    assert "User:alice" in acls.stdout, acls.stdout
    denied = broker.acls("--list", user=_user("carol"), check=False)
    print(f"{where}, carol listing ACLs: {(denied.stdout + denied.stderr).strip()[-300:]}")
    assert "User:alice" not in denied.stdout
    timeline.mark(
        f"{where}: alice, bob, ops log in (SCRAM-SHA-256 and -512); tokens {', '.join(t['tokenId'] for t in tokens)} "
        "log in (kts's SCRAM client; kafka-topics.sh --list with the first); alice creates a token for bob "
        "(CreateTokens ACL), carol cannot; ops lists ACLs (Describe on the cluster), carol cannot"
    )


class _ClaimWatcher(threading.Thread):
    """Polls /controller until it names a KRaft controller; the wall-clock time it first saw that."""

    def __init__(self, chroot: str) -> None:
        super().__init__(name="claim-watcher", daemon=True)
        self.client = KazooClient(hosts=chroot)
        self.seen_ms: int | None = None
        self.done = threading.Event()

    def run(self) -> None:
        self.client.start(10)
        try:
            while self.seen_ms is None and not self.done.is_set():
                try:
                    data, _ = self.client.get("/controller")
                except NoNodeError:  # between a broker's resignation and the next claim
                    data = b'"kraftControllerEpoch":-1'
                if b'"kraftControllerEpoch":-1' not in data:
                    self.seen_ms = _now_ms()
                time.sleep(0.01)
        finally:
            self.client.stop()
            self.client.close()
            self.done.set()

    def wait(self) -> int:
        self.done.wait(600)
        assert self.seen_ms is not None, "the KRaft controller never claimed the cluster"
        return self.seen_ms


def _phase(url: str) -> str:
    status = httpx.get(f"{url}/v1/cluster/status", auth=_basic("admin"), timeout=10).json()
    return str(status["migration"]["phase"])


class _PhaseWatcher(threading.Thread):
    """Polls kts's cluster status (``GET /v1/cluster/status``, as the super user); when it first reported each
    phase (wall-clock ms)."""

    def __init__(self, url: str) -> None:
        super().__init__(name="phase-watcher", daemon=True)
        self.url = url
        self.first_seen: dict[str, int] = {}
        self.stopped = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=10) as client:
            while not self.stopped.wait(0.02):
                try:
                    phase = client.get("/v1/cluster/status", auth=_basic("admin")).json()["migration"]["phase"]
                except (httpx.HTTPError, ValueError, KeyError):
                    continue
                self.first_seen.setdefault(phase, _now_ms())


def _kts_sees(url: str, watcher: _PhaseWatcher, phase: str, timeline: Timeline) -> int:
    """Wait until kts reports ``phase``; mark when it first did, then what ``kts cluster status`` says."""
    wait_until(lambda: phase in watcher.first_seen, f"kts reports {phase}", timeout_s=120)
    seen = watcher.first_seen[phase]
    timeline.mark(f"kts's cluster status first reports {phase}", seen)
    timeline.mark(_status_line(url))
    return seen


def _status_line(url: str) -> str:
    """``kts cluster status``, as an operator would run it (logged in as the super user), on one line."""
    with tempfile.TemporaryDirectory() as directory:
        name, password = _basic("admin")
        config = write_properties(Path(directory) / "admin.properties", {"username": name, "password": password})
        result = subprocess.run(
            [*KTS, "cluster", "status", "--server", url, "--command-config", str(config)],
            cwd=ROOT,
            env=kts_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 0, result.stderr
    facts = dict(line.split(":", 1) for line in result.stdout.splitlines())
    return f"kts cluster status: {facts['phase'].strip()}; {facts['reason'].strip()}"


def _described(broker: RunningBroker, owner: str) -> dict[str, str]:
    """Token id -> HMAC, as kafka-delegation-tokens.sh --describe prints them for ``owner``."""
    output = broker.tokens("--describe", "--owner-principal", owner).stdout
    found = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) >= 3 and len(parts[0]) == 22 and len(parts[1]) == 88:
            found[parts[0]] = parts[1]
    return found


def _audit(kts: httpx.Client, action: str | None) -> list[dict[str, Any]]:
    params = {"limit": "1000"} | ({"action": action} if action else {})
    events: list[dict[str, Any]] = []
    while True:
        page = _ok(kts.get("/v1/audit", params=params, auth=_basic("admin")))
        events += page["events"]
        if not page.get("nextCursor"):
            return events
        params["cursor"] = page["nextCursor"]


def _pending(kts: httpx.Client) -> list[dict[str, Any]]:
    pending = [event for event in _audit(kts, None) if event["outcome"] == "pending"]
    if pending:
        print(
            "pending:", [(event["id"], event["action"], event["serviceId"], event.get("tokenId")) for event in pending]
        )
    return pending


def _count(answers: list[Answer]) -> str:
    statuses: dict[str, int] = {}
    for answer in answers:
        key = f"{answer.status} {answer.error}" if answer.error else str(answer.status)
        statuses[key] = statuses.get(key, 0) + 1
    return ", ".join(f"{count} x {status}" for status, count in sorted(statuses.items())) or "none"


def _described_by(kts: httpx.Client, token_id: str) -> dict[str, Any]:
    return dict(_ok(kts.get(f"/v1/tokens/{token_id}", auth=_basic("admin"))))


def _eventually_ok(request: Any, status: int = 200, timeout_s: float = 120.0) -> Any:
    """The JSON of the first answer with ``status`` (the protocol backend's caches refresh every 500 ms, and a
    broker that just restarted takes a moment to answer)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            response = request()
            if response.status_code == status:
                return response.json()
            last = f"{response.status_code} {response.text}"
        except httpx.HTTPError as exc:
            last = repr(exc)
        if time.monotonic() > deadline:
            raise AssertionError(f"no {status} within {timeout_s:.0f} s; last: {last}")
        time.sleep(0.2)


def _logs_in_within(broker: RunningBroker, credentials: Credentials, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if login_succeeds(broker, credentials):
            return True
        time.sleep(0.2)
    return False


def _ok(response: httpx.Response) -> Any:
    assert response.is_success, response.text
    return response.json()


def _basic(name: str) -> tuple[str, str]:
    return (name, PASSWORDS[name])


def _user(name: str) -> User:
    return User(name, PASSWORDS[name])


def _token(token: dict[str, Any]) -> Credentials:
    return Credentials(token["tokenId"], token["hmac"], token=True)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
