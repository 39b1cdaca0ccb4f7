"""kts and a real Kafka 3.9 broker in ZooKeeper mode on the same ZooKeeper chroot and secret: every token, ACL and
SCRAM user one side writes, the other honours. Each test prints what the broker printed or answered."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from kazoo.client import KazooClient

from app.cli.client.kafka_login import Credentials
from app.cli.server.kafka_broker.broker import User
from app.domain.acl import PatternType
from app.storage.zk.znodes import AclChangeZNode, AclZNode
from tests.api.helpers import broker_acl_bytes, eventually, scala_broker_acl_bytes
from tests.e2e.kafka.conftest import DescribedToken, Kts, created_token, described_tokens, tool_date
from tests.kafka.brokers import RunningBroker

MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512"]


def _token_login(token: dict[str, object]) -> Credentials:
    return Credentials(str(token["tokenId"]), str(token["hmac"]), token=True)


def _chroot_client(broker: RunningBroker) -> KazooClient:
    assert broker.zookeeper_connect is not None
    client = KazooClient(hosts=broker.zookeeper_connect)
    client.start(10)
    return client


def _described(broker: RunningBroker, owner: User, user: User | None = None) -> list[DescribedToken]:
    """kafka-delegation-tokens.sh --describe of ``owner``'s tokens, as ``user`` (default: the super user)."""
    return described_tokens(broker.tokens("--describe", "--owner-principal", f"User:{owner.name}", user=user).stdout)


def _new_change(zk: KazooClient, root: str, before: set[str]) -> bytes:
    """The data of the one change notification that appeared under ``root`` since ``before``."""
    new: list[str] = []

    def appeared() -> bool:
        new[:] = sorted(set(zk.get_children(root)) - before)
        return bool(new)

    eventually(appeared, timeout_s=30)
    return bytes(zk.get(f"{root}/{new[-1]}")[0])


@pytest.mark.kafka_matrix("token-login")
def test_a_kts_token_logs_a_java_client_in_to_produce_and_consume(kafka_zk_broker: RunningBroker, kts: Kts) -> None:
    owner = kafka_zk_broker.new_user("producer")
    topic = kafka_zk_broker.create_topic()
    kafka_zk_broker.acls(
        "--add", "--allow-principal", f"User:{owner.name}", "--operation", "Write", "--operation", "Read",
        "--topic", topic,
    )  # fmt: skip
    token = kts.create_token(owner)
    waited = kafka_zk_broker.wait_for_login(_token_login(token))
    print(f"the broker took the token (SCRAM-SHA-256 and -512) {waited:.3f} s after kts's 201")
    for mechanism in MECHANISMS:
        client = kafka_zk_broker.java_token_client(str(token["tokenId"]), str(token["hmac"]), topic, mechanism)
        print(f"the Java client over {mechanism} printed:\n{client.stdout}")
        assert client.returncode == 0, client.stdout + client.stderr
        assert f"consumed from {topic}-0 at offset" in client.stdout
        assert f"hello from token {token['tokenId']} over {mechanism}" in client.stdout


@pytest.mark.kafka_matrix("token-login")
def test_a_wrong_hmac_is_refused(kafka_zk_broker: RunningBroker, kts: Kts) -> None:
    owner = kafka_zk_broker.new_user("forger")
    topic = kafka_zk_broker.create_topic()
    token = kts.create_token(owner)
    kafka_zk_broker.wait_for_login(_token_login(token))
    hmac = str(token["hmac"])
    forged = ("A" if hmac[0] != "A" else "B") + hmac[1:]
    client = kafka_zk_broker.java_token_client(str(token["tokenId"]), forged, topic)
    answer = kafka_zk_broker.login_error(Credentials(str(token["tokenId"]), forged, token=True))
    log = [line for line in kafka_zk_broker.log_text().splitlines() if "Failed authentication" in line]
    print(f"Java client: {client.stdout.strip()}\nPython client: {answer}\nbroker log: {log[-1]}")
    assert client.returncode == 1
    assert "SaslAuthenticationException" in client.stdout
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in client.stdout
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in answer


@pytest.mark.kafka_matrix("expire-renew")
def test_a_token_kts_expires_is_refused_at_login_afterwards(kafka_zk_broker: RunningBroker, kts: Kts) -> None:
    owner = kafka_zk_broker.new_user("expiring")
    token = kts.create_token(owner)
    credentials = _token_login(token)
    kafka_zk_broker.wait_for_login(credentials)
    expired = kts.request("POST", "/v1/tokens/expire", owner, json={"hmac": token["hmac"], "expiryTimePeriodMs": -1})
    assert expired.status_code == 200, expired.text
    answers: list[str] = []

    def refused() -> bool:
        try:
            kafka_zk_broker.login(credentials)
        except Exception as exc:
            answers.append(str(exc))
            return True
        return False

    took = eventually(refused, timeout_s=30)
    print(f"{took:.3f} s after kts's expire, the broker answered: {answers[-1]}")
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in answers[-1]


@pytest.mark.kafka_matrix("expire-renew")
def test_a_renew_through_kts_is_what_the_broker_describes(kafka_zk_broker: RunningBroker, kts: Kts) -> None:
    owner = kafka_zk_broker.new_user("renewing")
    token = kts.create_token(owner)
    two_hours = 7_200_000
    body = {"hmac": token["hmac"], "renewTimePeriodMs": two_hours}
    renewed = kts.request("POST", "/v1/tokens/renew", owner, json=body)
    assert renewed.status_code == 200, renewed.text
    expiry = renewed.json()["expiryTimestamp"]
    assert expiry != token["expiryTimestamp"]

    rows: list[str] = []

    def described() -> bool:
        output = kafka_zk_broker.tokens("--describe", "--owner-principal", f"User:{owner.name}").stdout
        rows[:] = [output]
        found = [row for row in described_tokens(output) if row.token_id == token["tokenId"]]
        return bool(found) and found[0].expiry_date == tool_date(expiry)

    eventually(described, timeout_s=60)
    print(rows[-1])
    (row,) = described_tokens(rows[-1])
    assert (row.owner, row.max_date) == (f"User:{owner.name}", tool_date(int(str(token["maxTimestamp"]))))
    assert row.hmac == token["hmac"]  # the broker derived the same HMAC from the shared secret


@pytest.mark.kafka_matrix("broker-token")
def test_a_token_made_by_kafka_delegation_tokens_sh_is_described_verified_renewed_and_expired_through_kts(
    kafka_zk_broker: RunningBroker, kts: Kts
) -> None:
    owner = kafka_zk_broker.new_user("tooled")
    created = kafka_zk_broker.tokens("--create", "--max-life-time-period", "-1", user=owner)
    print(created.stdout)
    token = created_token(created.stdout)

    eventually(lambda: kts.request("GET", f"/v1/tokens/{token.token_id}", owner).status_code == 200, timeout_s=30)
    described = kts.request("GET", f"/v1/tokens/{token.token_id}", owner)
    print(f"kts describes it: {described.json()}")
    assert described.json()["owner"] == f"User:{owner.name}"
    assert tool_date(described.json()["expiryTimestamp"]) == token.expiry_date

    verified = kts.request("POST", "/v1/tokens/verify", owner, json={"tokenId": token.token_id, "hmac": token.hmac})
    assert verified.status_code == 200, verified.text
    assert verified.json()["principal"] == f"User:{owner.name}"

    renewed = kts.request("POST", "/v1/tokens/renew", owner, json={"hmac": token.hmac, "renewTimePeriodMs": 3_600_000})
    assert renewed.status_code == 200, renewed.text
    new_expiry = tool_date(renewed.json()["expiryTimestamp"])
    assert new_expiry != token.expiry_date
    eventually(lambda: [row.expiry_date for row in _described(kafka_zk_broker, owner)] == [new_expiry], timeout_s=60)

    kafka_zk_broker.wait_for_login(Credentials(token.token_id, token.hmac, token=True))
    expired = kts.request("POST", "/v1/tokens/expire", owner, json={"hmac": token.hmac, "expiryTimePeriodMs": -1})
    assert expired.status_code == 200, expired.text
    eventually(lambda: _described(kafka_zk_broker, owner) == [], timeout_s=60)
    answer = kafka_zk_broker.login_error(Credentials(token.token_id, token.hmac, token=True))
    print(f"after kts expired it, the broker answered the login: {answer}")


@pytest.mark.kafka_matrix("acls-tool", "kip-373")
def test_a_grant_made_with_kafka_acls_sh_is_honoured_by_kts_at_once(kafka_zk_broker: RunningBroker, kts: Kts) -> None:
    """The issue that started it all: kafka-acls.sh makes the broker write ``USER:User:mary``, which kts must read
    as a change of /kafka-acl/User/User:mary (and not refresh /kafka-acl/USER/..., which does not exist)."""
    nimbus = kafka_zk_broker.new_user("nimbus")
    mary = kafka_zk_broker.new_user("mary")
    assert kts.request("POST", "/v1/tokens", nimbus, json={"owner": f"User:{mary.name}"}).status_code == 403
    zk = _chroot_client(kafka_zk_broker)
    try:
        before = set(zk.get_children(AclChangeZNode.LITERAL_ROOT)) if zk.exists(AclChangeZNode.LITERAL_ROOT) else set()
        kafka_zk_broker.acls(
            "--add", "--allow-principal", f"User:{nimbus.name}", "--operation", "CreateTokens",
            "--user-principal", f"User:{mary.name}",
        )  # fmt: skip
        granted_at = time.monotonic()
        statuses: list[int] = []

        def honoured() -> bool:
            statuses.append(kts.request("POST", "/v1/tokens", nimbus, json={"owner": f"User:{mary.name}"}).status_code)
            return statuses[-1] == 201

        eventually(honoured, timeout_s=10)
        took = time.monotonic() - granted_at
        change = _new_change(zk, AclChangeZNode.LITERAL_ROOT, before)
    finally:
        zk.stop()
        zk.close()
    print(f"the broker wrote the change {change!r}; kts answered 201 {took:.3f} s after kafka-acls.sh returned")
    assert change == f"USER:User:{mary.name}".encode()


# Every resource type kafka-acls.sh grants on, literal and prefixed: what the broker writes is what kts writes
# (the golden vectors of tests/unit/storage/zk/znodes/test_acls.py), and kts reads it as the folder it is in.
RESOURCE_OPTIONS = {
    "Topic": "--topic",
    "Group": "--group",
    "TransactionalId": "--transactional-id",
    "DelegationToken": "--delegation-token",
    "User": "--user-principal",
}


@pytest.mark.kafka_matrix("acls-tool")
@pytest.mark.parametrize("pattern_type", list(PatternType))
def test_every_change_the_broker_writes_is_what_kts_writes_and_reads(
    kafka_zk_broker: RunningBroker, pattern_type: PatternType
) -> None:
    """One kafka-acls.sh run grants on a resource of every type (the cluster too, which has no prefixed form);
    the broker writes one change notification for each."""
    principal = f"User:watcher-{uuid.uuid4().hex[:6]}"
    suffix = uuid.uuid4().hex[:6]
    names = {kind: f"{'User:' if kind == 'User' else ''}{kind.lower()}-{suffix}" for kind in RESOURCE_OPTIONS}
    options = [argument for kind, option in RESOURCE_OPTIONS.items() for argument in (option, names[kind])]
    if pattern_type is PatternType.LITERAL:
        names["Cluster"] = "kafka-cluster"
        options.append("--cluster")
    zk = _chroot_client(kafka_zk_broker)
    root = AclChangeZNode.root(pattern_type)
    try:
        before = set(zk.get_children(root)) if zk.exists(root) else set()
        kafka_zk_broker.acls(
            "--add", "--allow-principal", principal, "--operation", "All", *options,
            "--resource-pattern-type", pattern_type.value.lower(),
        )  # fmt: skip
        changes: list[bytes] = []

        def all_written() -> bool:
            new = sorted(set(zk.get_children(root)) - before)
            changes[:] = [bytes(zk.get(f"{root}/{name}")[0]) for name in new]
            return len(changes) == len(names)

        eventually(all_written, timeout_s=30)
        patterns = [AclChangeZNode.decode(change, pattern_type) for change in changes]
        assert {pattern.resource_type: pattern.name for pattern in patterns} == names
        for pattern, change in zip(patterns, changes, strict=True):
            assert pattern.pattern_type is pattern_type
            assert AclChangeZNode.encode(pattern) == change
            data = bytes(zk.get(AclZNode.path(pattern))[0])  # the ACLs are where kts now looks
            acls = AclZNode.decode(data)
            assert principal in {entry.principal for entry in acls}
            assert json.loads(AclZNode.encode(acls)) == json.loads(data)  # kts writes the same (keys in its order)
            (entry,) = json.loads(data)["acls"]
            # the tests' own writers: the same bytes, in 3.9's key order or (older releases) in 3.3's
            assert data in (broker_acl_bytes([entry]), scala_broker_acl_bytes([entry])), data
    finally:
        zk.stop()
        zk.close()
    print("\n".join(change.decode() for change in changes))
    print(data.decode())


@pytest.mark.kafka_matrix("kts-grants")
def test_grants_made_through_kts_are_enforced_by_the_brokers_authorizer(
    kafka_zk_broker: RunningBroker, kts: Kts
) -> None:
    """``DescribeTokens`` on a user and ``Describe`` on one token, granted through kts (which writes the change
    notifications), let other users see those tokens with kafka-delegation-tokens.sh --describe."""
    owner = kafka_zk_broker.new_user("owner")
    watcher = kafka_zk_broker.new_user("watcher")
    auditor = kafka_zk_broker.new_user("auditor")
    first = kts.create_token(owner)
    second = kts.create_token(owner)

    def seen_by(user: User) -> set[str]:
        return {row.token_id for row in _described(kafka_zk_broker, owner, user)}

    eventually(lambda: seen_by(kafka_zk_broker.admin) == {first["tokenId"], second["tokenId"]}, timeout_s=60)
    assert seen_by(watcher) == set()
    assert seen_by(auditor) == set()

    kts.grant(kafka_zk_broker.admin, "User", f"User:{owner.name}", f"User:{watcher.name}", "DescribeTokens")
    kts.grant(kafka_zk_broker.admin, "DelegationToken", str(first["tokenId"]), f"User:{auditor.name}", "Describe")
    eventually(lambda: seen_by(watcher) == {first["tokenId"], second["tokenId"]}, timeout_s=60)
    eventually(lambda: seen_by(auditor) == {first["tokenId"]}, timeout_s=60)
    print(
        f"with kts's grants, {watcher.name} sees {sorted(seen_by(watcher))} and {auditor.name} sees "
        f"{sorted(seen_by(auditor))} of {owner.name}'s tokens"
    )


@pytest.mark.kafka_matrix("scram-users")
def test_a_scram_user_made_with_kafka_configs_sh_logs_into_kts(kafka_zk_broker: RunningBroker, kts: Kts) -> None:
    carol = User(f"carol-{uuid.uuid4().hex[:6]}", "carol-pw-1")
    changed = kafka_zk_broker.configs(
        "--alter", "--entity-type", "users", "--entity-name", carol.name,
        "--add-config", f"SCRAM-SHA-512=[password={carol.password}],SCRAM-SHA-256=[password={carol.password}]",
    )  # fmt: skip
    print(changed.stdout)
    eventually(lambda: kts.request("GET", "/v1/tokens", carol).status_code == 200, timeout_s=30)
    assert kts.request("GET", "/v1/tokens", User(carol.name, "wrong")).status_code == 401


@pytest.mark.kafka_matrix("scram-users")
def test_a_scram_user_made_through_kts_logs_into_the_broker(kafka_zk_broker: RunningBroker, kts: Kts) -> None:
    dave = User(f"dave-{uuid.uuid4().hex[:6]}", "dave-pw-1")
    for mechanism in MECHANISMS:
        put = kts.request(
            "PUT",
            f"/v1/users/{dave.name}/credentials",
            kafka_zk_broker.admin,
            json={"mechanism": mechanism, "password": dave.password},
        )
        assert put.status_code == 200, put.text
    took = kafka_zk_broker.wait_for_login(Credentials(dave.name, dave.password))
    described = kafka_zk_broker.configs("--describe", "--entity-type", "users", "--entity-name", dave.name)
    print(f"the broker took {dave.name}'s login {took:.3f} s after kts's 200; kafka-configs.sh: {described.stdout}")
    assert "SCRAM-SHA-512=iterations=4096" in described.stdout
    kafka_zk_broker.login_error(Credentials(dave.name, "wrong"))
