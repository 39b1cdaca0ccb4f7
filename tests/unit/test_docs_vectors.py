"""Every test vector printed in docs/kafka-compatibility.md, recomputed from the code.

A vector is a fenced block (or a table) right after an HTML comment ``<!-- vector: NAME -->``. The SCRAM vectors
are checked against scramp as well, an implementation of RFC 5802 that kts does not use for them.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from pathlib import Path

import pytest
import scramp

from app.domain import errors, token_rules, token_secret
from app.domain.acl import AccessControlEntry, PatternType, ResourcePattern
from app.domain.authorization import Caller, SuperUsersOnly
from app.domain.credentials import Mechanism
from app.domain.principal import KafkaPrincipal
from app.domain.scram import derive, password_matches
from app.domain.token import TokenInformation
from app.domain.token_rules import CreateRequest, DeleteToken, SetExpiry, TokenPolicy
from app.domain.token_secret import TokenSecret, decode_hmac, encode_hmac, new_token_id
from app.settings import Settings
from app.storage.zk.sanitizer import desanitize, sanitize
from app.storage.zk.znodes import (
    AclChangeZNode,
    AclZNode,
    ConfigChangeZNode,
    TokenChangeZNode,
    TokenZNode,
    UserConfigZNode,
)

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "kafka-compatibility.md"
EXPECTED_VECTORS = {
    "token-znode-v3",
    "token-znode-v1",
    "token-change",
    "principals",
    "token-id",
    "hmac",
    "token-scram",
    "user-scram",
    "config-change",
    "acl-literal",
    "acl-prefixed",
    "lifetimes",
}
_MARKER = re.compile(r"^<!-- vector: ([\w-]+) -->$")
# The defaults of the broker settings, as kts reads them: the vectors use them.
POLICY = TokenPolicy(
    max_lifetime_ms=Settings.model_fields["delegation_token_max_lifetime_ms"].default,
    default_renew_ms=Settings.model_fields["delegation_token_expiry_time_ms"].default,
)
ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")


def _vectors() -> dict[str, list[str]]:
    """Vector name -> the lines of the fenced block (or the table) that follows its marker."""
    lines = DOCUMENT.read_text(encoding="utf-8").splitlines()
    found: dict[str, list[str]] = {}
    for index, line in enumerate(lines):
        marker = _MARKER.match(line.strip())
        if marker is None:
            continue
        name = marker.group(1)
        assert name not in found, f"vector {name} appears twice"
        body = lines[index + 1 :]
        if body[0].startswith("```"):
            end = next(offset for offset in range(1, len(body)) if body[offset].startswith("```"))
            found[name] = body[1:end]
        else:
            found[name] = _leading_table(body)
    return found


def _leading_table(lines: list[str]) -> list[str]:
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append(line)
    assert len(rows) > 2, "a vector table needs a header, a rule and rows"
    return rows[2:]


VECTORS = _vectors()


def fields(name: str) -> dict[str, str]:
    """A ``key = value`` block as a dict (the first `` = `` splits; values keep their own ``=``)."""
    result = {}
    for line in VECTORS[name]:
        key, separator, value = line.partition(" = ")
        assert separator, f"vector {name}: {line!r} is not 'key = value'"
        result[key.strip()] = value.strip()
    return result


def single_line(name: str) -> bytes:
    (line,) = VECTORS[name]
    return line.encode("utf-8")


def test_every_vector_is_there_once() -> None:
    assert set(VECTORS) == EXPECTED_VECTORS


def test_the_v3_znode_is_what_a_default_create_writes() -> None:
    """The prose says: created at 1700000000000 by User:alice for herself, User:bob renewing, default lifetimes."""
    data = single_line("token-znode-v3")
    token = TokenZNode.decode(data)
    planned = token_rules.plan_create(
        Caller(ALICE),
        CreateRequest(owner=None, renewers=(BOB,), max_lifetime_ms=-1),
        token_id=token.token_id,
        now_ms=1_700_000_000_000,
        policy=POLICY,
        authorizer=SuperUsersOnly([]),
    )
    assert planned == token
    assert TokenZNode.encode(planned, version=3) == data


def test_the_v1_znode_is_the_same_token_without_its_requester() -> None:
    v3 = TokenZNode.decode(single_line("token-znode-v3"))
    v1 = single_line("token-znode-v1")
    assert TokenZNode.encode(v3, version=1) == v1
    assert TokenZNode.decode(v1) == v3  # version 1: the requester is the owner, as it is here
    assert "tokenRequester" not in json.loads(v1)


def test_token_change_notification() -> None:
    vector = fields("token-change")
    assert TokenChangeZNode.encode(vector["tokenId"]) == vector["data"].encode("utf-8")


def test_principal_encoding() -> None:
    pairs = [line.split(" -> ") for line in VECTORS["principals"]]
    assert len(pairs) >= 3
    for plain, encoded in pairs:
        assert sanitize(plain) == encoded
        assert desanitize(encoded) == plain


def test_token_id_is_the_uuid_in_url_safe_base64(monkeypatch: pytest.MonkeyPatch) -> None:
    vector = fields("token-id")
    monkeypatch.setattr(token_secret.uuid, "uuid4", lambda: uuid.UUID(vector["uuid"]))
    assert new_token_id() == vector["tokenId"]
    assert uuid.UUID(vector["uuid"]).version == 4


def test_hmac() -> None:
    vector = fields("hmac")
    mac = TokenSecret(vector["secret"]).hmac(vector["tokenId"])
    assert encode_hmac(mac) == vector["hmac"]
    assert decode_hmac(vector["hmac"]) == mac


def _scramp_credential(mechanism: Mechanism, password: str, salt: bytes, iterations: int) -> str:
    _, stored_key, server_key, _ = scramp.ScramMechanism(mechanism.value).make_auth_info(
        password, iteration_count=iterations, salt=salt
    )
    return (
        f"salt={base64.b64encode(salt).decode()},stored_key={base64.b64encode(stored_key).decode()},"
        f"server_key={base64.b64encode(server_key).decode()},iterations={iterations}"
    )


def test_the_credential_a_broker_derives_for_a_token() -> None:
    vector = fields("token-scram")
    assert vector["password"] == fields("hmac")["hmac"]
    mechanism, iterations, salt = Mechanism(vector["mechanism"]), int(vector["iterations"]), vector["salt"]
    credential = derive(mechanism, vector["password"], iterations, salt=base64.b64decode(salt))
    assert UserConfigZNode.credential_to_string(credential) == vector["credential"]
    assert _scramp_credential(mechanism, vector["password"], base64.b64decode(salt), iterations) == vector["credential"]


def test_user_scram_credential_znode() -> None:
    vector = fields("user-scram")
    mechanism, iterations = Mechanism(vector["mechanism"]), int(vector["iterations"])
    salt = base64.b64decode(vector["salt"])
    credential = derive(mechanism, vector["password"], iterations, salt=salt)
    assert UserConfigZNode.path(vector["user"]) == vector["path"]
    data = UserConfigZNode.encode({mechanism.value: UserConfigZNode.credential_to_string(credential)})
    assert data == vector["data"].encode("utf-8")
    stored = UserConfigZNode.credentials(UserConfigZNode.decode(data))[mechanism]
    assert password_matches(mechanism, stored, vector["password"])
    config = json.loads(vector["data"])["config"]
    assert config[mechanism.value] == _scramp_credential(mechanism, vector["password"], salt, iterations)


def test_config_change_notification() -> None:
    vector = fields("config-change")
    assert UserConfigZNode.path(vector["user"]) == vector["path"]
    assert ConfigChangeZNode.encode(vector["user"]) == vector["data"].encode("utf-8")


@pytest.mark.parametrize(
    ("name", "pattern_type"), [("acl-literal", PatternType.LITERAL), ("acl-prefixed", PatternType.PREFIXED)]
)
def test_acl_znodes_and_change_notifications(name: str, pattern_type: PatternType) -> None:
    vector = fields(name)
    pattern = ResourcePattern(vector["resourceType"], vector["resourceName"], pattern_type)
    assert AclZNode.path(pattern) == vector["path"]
    (entry,) = json.loads(vector["data"])["acls"]
    entries = [AccessControlEntry(entry["principal"], entry["host"], entry["operation"], entry["permissionType"])]
    assert AclZNode.encode(entries) == vector["data"].encode("utf-8")
    assert AclZNode.decode(vector["data"].encode("utf-8")) == frozenset(entries)
    assert AclChangeZNode.encode(pattern) == vector["change"].encode("utf-8")
    assert AclChangeZNode.decode(vector["change"].encode("utf-8"), pattern.pattern_type) == pattern


def _lifetime_rows() -> list[tuple[str, int, int, str]]:
    rows = []
    for line in VECTORS["lifetimes"]:
        operation, at, period, result = (cell.strip() for cell in line.strip().strip("|").split("|"))
        rows.append((operation, int(at), int(period), result))
    return rows


def _outcome(token: TokenInformation, operation: str, now: int, period: int) -> str:
    caller, nobody = Caller(token.owner), SuperUsersOnly([])
    try:
        if operation == "create":
            made = token_rules.plan_create(
                caller,
                CreateRequest(owner=None, renewers=token.renewers, max_lifetime_ms=period),
                token_id=token.token_id,
                now_ms=now,
                policy=POLICY,
                authorizer=nobody,
            )
            return f"expiry {made.expiry_timestamp}, max {made.max_timestamp}"
        if operation == "renew":
            expiry = token_rules.plan_renew(
                token, caller, renew_period_ms=period, now_ms=now, policy=POLICY, authorizer=nobody
            )
            return f"expiry {expiry}"
        decision = token_rules.plan_expire(token, caller, expiry_period_ms=period, now_ms=now, authorizer=nobody)
    except errors.KafkaError as refusal:
        return f"refused, {refusal.code}"
    if isinstance(decision, DeleteToken):
        return "deleted"
    assert isinstance(decision, SetExpiry)
    return f"expiry {decision.expiry_timestamp}"


def test_lifetime_examples() -> None:
    token = TokenZNode.decode(single_line("token-znode-v3"))
    rows = _lifetime_rows()
    assert {operation for operation, *_ in rows} == {"create", "renew", "expire"}
    for operation, at, period, result in rows:
        assert _outcome(token, operation, at, period) == result, (operation, at, period)


def test_error_code_table_lists_every_kafka_error_of_the_code() -> None:
    text = DOCUMENT.read_text(encoding="utf-8")
    documented = dict(re.findall(r"^\| (\d+) \| `([A-Z_]+)` \|", text, flags=re.MULTILINE))
    known = {str(kind.code): kind.name for kind in _subclasses(errors.KafkaError)}
    assert documented == known


def _subclasses(base: type) -> list[type]:
    found = []
    for kind in base.__subclasses__():
        found += [kind, *_subclasses(kind)]
    return found
