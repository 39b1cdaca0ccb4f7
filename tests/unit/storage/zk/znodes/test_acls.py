"""ACL znode data, ACL change notifications and ACL znode paths, byte for byte as Kafka's AclAuthorizer."""

from __future__ import annotations

import json

import pytest

from app.domain.acl import AccessControlEntry, PatternType, ResourcePattern
from app.domain.authorization import ResourceType
from app.storage.zk.znodes import PERSISTENT_PATHS, AclChangeZNode, AclZNode, MalformedZNode

ALICE_CREATE = AccessControlEntry("User:alice", "*", "CreateTokens", "Allow")
KAFKA_EXAMPLE = (
    b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"CreateTokens","host":"*"}]}'
)


# --- encode_entries -------------------------------------------------------------------------------------------


def test_encode_single_entry_is_exactly_kafkas_bytes() -> None:
    assert AclZNode.encode([ALICE_CREATE]) == KAFKA_EXAMPLE


def test_encode_is_compact_with_kafkas_key_order() -> None:
    data = AclZNode.encode([AccessControlEntry("User:bob", "198.51.100.1", "DescribeTokens", "Deny")])
    assert data == (
        b'{"version":1,"acls":[{"principal":"User:bob","permissionType":"Deny",'
        b'"operation":"DescribeTokens","host":"198.51.100.1"}]}'
    )
    assert b" " not in data
    assert b"\n" not in data


def test_encode_several_entries_in_a_deterministic_order() -> None:
    entries = [
        AccessControlEntry("User:bob", "*", "Describe", "Allow"),
        AccessControlEntry("User:alice", "198.51.100.1", "CreateTokens", "Deny"),
        AccessControlEntry("User:alice", "*", "DescribeTokens", "Allow"),
        AccessControlEntry("User:alice", "*", "CreateTokens", "Allow"),
    ]
    expected = (
        b'{"version":1,"acls":['
        b'{"principal":"User:alice","permissionType":"Allow","operation":"CreateTokens","host":"*"},'
        b'{"principal":"User:alice","permissionType":"Allow","operation":"DescribeTokens","host":"*"},'
        b'{"principal":"User:alice","permissionType":"Deny","operation":"CreateTokens","host":"198.51.100.1"},'
        b'{"principal":"User:bob","permissionType":"Allow","operation":"Describe","host":"*"}'
        b"]}"
    )
    assert AclZNode.encode(entries) == expected
    assert AclZNode.encode(reversed(entries)) == expected
    assert AclZNode.encode(frozenset(entries)) == expected
    assert AclZNode.encode(iter(entries[2:] + entries[:2])) == expected


def test_encode_no_entries() -> None:
    assert AclZNode.encode([]) == b'{"version":1,"acls":[]}'


def test_encode_writes_non_ascii_as_utf8_like_jackson() -> None:
    data = AclZNode.encode([AccessControlEntry("User:用户", "*", "Describe", "Allow")])
    assert "User:用户".encode() in data
    assert b"\\u" not in data
    data.decode("utf-8")


def test_encode_escapes_json_specials() -> None:
    entry = AccessControlEntry('User:CN="a\\b"', "*", "Describe", "Allow")
    data = AclZNode.encode([entry])
    assert b'"principal":"User:CN=\\"a\\\\b\\""' in data
    assert AclZNode.decode(data) == {entry}


def test_encode_is_valid_json_with_version_1() -> None:
    doc = json.loads(AclZNode.encode([ALICE_CREATE]))
    assert doc == {
        "version": 1,
        "acls": [{"principal": "User:alice", "permissionType": "Allow", "operation": "CreateTokens", "host": "*"}],
    }
    assert list(doc) == ["version", "acls"]
    assert list(doc["acls"][0]) == ["principal", "permissionType", "operation", "host"]


# --- decode_entries -------------------------------------------------------------------------------------------


def test_decode_kafkas_example() -> None:
    assert AclZNode.decode(KAFKA_EXAMPLE) == frozenset({ALICE_CREATE})
    assert isinstance(AclZNode.decode(KAFKA_EXAMPLE), frozenset)


def test_decode_maps_each_key_to_its_field() -> None:
    data = b'{"version":1,"acls":[{"principal":"P:p","permissionType":"T","operation":"O","host":"H"}]}'
    (entry,) = AclZNode.decode(data)
    assert entry == AccessControlEntry(principal="P:p", host="H", operation="O", permission="T")


def test_decode_a_kafka_acls_sh_znode_keeps_operations_kts_does_not_grant() -> None:
    # As a broker writes it for kafka-acls.sh on a Topic: other key order, whitespace, operations and
    # resource kinds kts never grants. Nothing is interpreted: every field survives as its string.
    data = b"""{
      "version": 1,
      "acls": [
        {"host": "*", "permissionType": "Allow", "operation": "Read", "principal": "User:bob"},
        {"principal": "User:bob", "operation": "Write", "host": "198.51.100.1", "permissionType": "Deny"},
        {"operation": "IdempotentWrite", "principal": "Group:ingest", "permissionType": "Allow", "host": "*"},
        {"principal": "User:*", "permissionType": "Allow", "operation": "DescribeConfigs", "host": "*"},
        {"principal": "User:carol", "permissionType": "Allow", "operation": "SomeFutureOp", "host": "*"}
      ]
    }"""
    assert AclZNode.decode(data) == frozenset(
        {
            AccessControlEntry("User:bob", "*", "Read", "Allow"),
            AccessControlEntry("User:bob", "198.51.100.1", "Write", "Deny"),
            AccessControlEntry("Group:ingest", "*", "IdempotentWrite", "Allow"),
            AccessControlEntry("User:*", "*", "DescribeConfigs", "Allow"),
            AccessControlEntry("User:carol", "*", "SomeFutureOp", "Allow"),
        }
    )


def test_foreign_entries_survive_a_rewrite() -> None:
    foreign = (
        b'{"version":1,"acls":[{"principal":"User:bob","permissionType":"Allow","operation":"Read","host":"*"},'
        b'{"principal":"User:bob","permissionType":"Deny","operation":"SomeFutureOp","host":"198.51.100.1"}]}'
    )
    entries = AclZNode.decode(foreign)
    assert AclZNode.decode(AclZNode.encode(entries)) == entries
    assert AclZNode.encode(entries | {ALICE_CREATE}) == (
        b'{"version":1,"acls":['
        b'{"principal":"User:alice","permissionType":"Allow","operation":"CreateTokens","host":"*"},'
        b'{"principal":"User:bob","permissionType":"Allow","operation":"Read","host":"*"},'
        b'{"principal":"User:bob","permissionType":"Deny","operation":"SomeFutureOp","host":"198.51.100.1"}]}'
    )


def test_decode_ignores_extra_keys_and_collapses_duplicates() -> None:
    data = (
        b'{"version":1,"extra":true,"acls":['
        b'{"principal":"User:alice","permissionType":"Allow","operation":"CreateTokens","host":"*","note":"x"},'
        b'{"principal":"User:alice","permissionType":"Allow","operation":"CreateTokens","host":"*"}]}'
    )
    assert AclZNode.decode(data) == frozenset({ALICE_CREATE})


def test_decode_empty_acls_list() -> None:
    assert AclZNode.decode(b'{"version":1,"acls":[]}') == frozenset()


def test_decode_utf8_principal() -> None:
    data = '{"version":1,"acls":[{"principal":"User:é","permissionType":"Allow","operation":"Read","host":"*"}]}'
    assert AclZNode.decode(data.encode()) == {AccessControlEntry("User:é", "*", "Read", "Allow")}


@pytest.mark.parametrize(
    "entries",
    [
        [],
        [ALICE_CREATE],
        [
            ALICE_CREATE,
            AccessControlEntry("User:*", "::1", "All", "Deny"),
            AccessControlEntry("Group:g", "*", "X", "Y"),
        ],
    ],
)
def test_entries_round_trip(entries: list[AccessControlEntry]) -> None:
    assert AclZNode.decode(AclZNode.encode(entries)) == frozenset(entries)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"not json", id="text"),
        pytest.param(b'{"version":1,"acls":[', id="truncated"),
        pytest.param(b"\xff\xfe\x00", id="not-utf8"),
    ],
)
def test_decode_refuses_non_json(data: bytes) -> None:
    with pytest.raises(MalformedZNode, match="not UTF-8 JSON"):
        AclZNode.decode(data)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b'{"version":1}', id="missing-acls"),
        pytest.param(b"{}", id="empty-object"),
        pytest.param(b'{"version":1,"acls":null}', id="null-acls"),
        pytest.param(b'{"version":1,"acls":{}}', id="object-acls"),
        pytest.param(b'{"version":1,"acls":"User:alice"}', id="string-acls"),
        pytest.param(b"[]", id="array"),
        pytest.param(b"null", id="null"),
        pytest.param(b"1", id="number"),
        pytest.param(b'"acls"', id="string"),
    ],
)
def test_decode_refuses_a_document_without_an_acls_list(data: bytes) -> None:
    with pytest.raises(MalformedZNode, match="no acls list"):
        AclZNode.decode(data)


def _znode_with(item: object) -> bytes:
    return json.dumps({"version": 1, "acls": [json.loads(KAFKA_EXAMPLE)["acls"][0], item]}).encode()


_GOOD_ITEM = {"principal": "User:alice", "permissionType": "Allow", "operation": "CreateTokens", "host": "*"}


@pytest.mark.parametrize("missing", sorted(_GOOD_ITEM))
def test_decode_refuses_an_entry_missing_a_key(missing: str) -> None:
    item = {key: value for key, value in _GOOD_ITEM.items() if key != missing}
    with pytest.raises(MalformedZNode, match="lacks"):
        AclZNode.decode(_znode_with(item))


@pytest.mark.parametrize("key", sorted(_GOOD_ITEM))
@pytest.mark.parametrize("value", [None, 1, True, [], {}, ["*"]], ids=["null", "int", "bool", "list", "object", "strs"])
def test_decode_refuses_an_entry_with_a_non_string_value(key: str, value: object) -> None:
    with pytest.raises(MalformedZNode):
        AclZNode.decode(_znode_with({**_GOOD_ITEM, key: value}))


@pytest.mark.parametrize("item", ["User:alice", 1, None, [], ["User:alice", "Allow", "Read", "*"]])
def test_decode_refuses_an_entry_that_is_not_an_object(item: object) -> None:
    with pytest.raises(MalformedZNode):
        AclZNode.decode(_znode_with(item))


def test_codec_error_is_a_value_error() -> None:
    assert issubclass(MalformedZNode, ValueError)
    with pytest.raises(ValueError):
        AclZNode.decode(b"nope")


# --- change notifications -------------------------------------------------------------------------------------


# What a Kafka 3.9 broker's AclAuthorizer writes (read back from ZooKeeper after kafka-acls.sh --bootstrap-server
# in tests/e2e/kafka/test_acls.py): the resource type as Java's ResourceType enum names it.
@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (ResourcePattern("User", "User:alice"), b"USER:User:alice"),
        (ResourcePattern(ResourceType.USER, "User:alice", PatternType.LITERAL), b"USER:User:alice"),
        (ResourcePattern("User", "*"), b"USER:*"),
        (ResourcePattern("DelegationToken", "tok-1"), b"DELEGATION_TOKEN:tok-1"),
        (ResourcePattern("Cluster", "kafka-cluster"), b"CLUSTER:kafka-cluster"),
        (ResourcePattern("Topic", "a:b"), b"TOPIC:a:b"),
        (ResourcePattern("Group", "g"), b"GROUP:g"),
        (ResourcePattern("TransactionalId", "tx-1"), b"TRANSACTIONAL_ID:tx-1"),
        (ResourcePattern("User", "User:用户"), "USER:User:用户".encode()),
    ],
)
def test_encode_literal_change(pattern: ResourcePattern, expected: bytes) -> None:
    assert AclChangeZNode.encode(pattern) == expected
    assert AclChangeZNode.decode(expected, PatternType.LITERAL) == pattern


def test_encode_prefixed_change_is_exactly_kafkas_json() -> None:
    pattern = ResourcePattern("User", "User:al", PatternType.PREFIXED)
    assert (
        AclChangeZNode.encode(pattern)
        == b'{"version":1,"resourceType":"USER","name":"User:al","patternType":"PREFIXED"}'
    )


def test_encode_prefixed_change_other_types_and_utf8() -> None:
    assert AclChangeZNode.encode(ResourcePattern(ResourceType.DELEGATION_TOKEN, "tok-", PatternType.PREFIXED)) == (
        b'{"version":1,"resourceType":"DELEGATION_TOKEN","name":"tok-","patternType":"PREFIXED"}'
    )
    data = AclChangeZNode.encode(ResourcePattern("User", 'User:"é', PatternType.PREFIXED))
    assert data == '{"version":1,"resourceType":"USER","name":"User:\\"é","patternType":"PREFIXED"}'.encode()


@pytest.mark.parametrize("resource_type", list(ResourceType))
@pytest.mark.parametrize("pattern_type", list(PatternType))
def test_every_resource_type_round_trips_to_its_folder(resource_type: ResourceType, pattern_type: PatternType) -> None:
    """The notification names the enum, the reader gets back the folder the ACLs are in."""
    pattern = ResourcePattern(resource_type, "name-1", pattern_type)
    decoded = AclChangeZNode.decode(AclChangeZNode.encode(pattern), pattern_type)
    assert decoded == pattern
    assert AclZNode.path(decoded) == f"{AclZNode.root(pattern_type)}/{resource_type.value}/name-1"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        # as Kafka 2.0+ brokers write them (ResourceType.toString)
        (b"USER:User:alice", ResourcePattern("User", "User:alice", PatternType.LITERAL)),
        (b"USER:*", ResourcePattern("User", "*", PatternType.LITERAL)),
        (b"DELEGATION_TOKEN:tok-1", ResourcePattern("DelegationToken", "tok-1", PatternType.LITERAL)),
        (b"TRANSACTIONAL_ID:tx", ResourcePattern("TransactionalId", "tx", PatternType.LITERAL)),
        (b"TOPIC:a:b:c", ResourcePattern("Topic", "a:b:c", PatternType.LITERAL)),
        (b"GROUP:g", ResourcePattern("Group", "g", PatternType.LITERAL)),
        (b"CLUSTER:kafka-cluster", ResourcePattern("Cluster", "kafka-cluster", PatternType.LITERAL)),
        # read case-insensitively, as ResourceType.fromString does; older writers used the path names
        (b"User:User:alice", ResourcePattern("User", "User:alice", PatternType.LITERAL)),
        (b"user:User:alice", ResourcePattern("User", "User:alice", PatternType.LITERAL)),
        (b"DelegationToken:tok-1", ResourcePattern("DelegationToken", "tok-1", PatternType.LITERAL)),
        (b"TransactionalId:tx", ResourcePattern("TransactionalId", "tx", PatternType.LITERAL)),
        (b"Topic:a:b:c", ResourcePattern("Topic", "a:b:c", PatternType.LITERAL)),
        # Types kts does not know are passed on as they are; the reader decides what to do with them.
        (b"Widget:x", ResourcePattern("Widget", "x", PatternType.LITERAL)),
    ],
)
def test_decode_literal_change(data: bytes, expected: ResourcePattern) -> None:
    decoded = AclChangeZNode.decode(data, PatternType.LITERAL)
    assert decoded == expected
    assert decoded.pattern_type is PatternType.LITERAL


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            b'{"version":1,"resourceType":"USER","name":"User:al","patternType":"PREFIXED"}',
            ResourcePattern("User", "User:al", PatternType.PREFIXED),
        ),
        (
            b'{"version":1,"resourceType":"TRANSACTIONAL_ID","name":"tx-","patternType":"PREFIXED"}',
            ResourcePattern("TransactionalId", "tx-", PatternType.PREFIXED),
        ),
        (
            b'{ "patternType" : "PREFIXED", "name" : "tok-", "resourceType" : "DELEGATION_TOKEN", "version" : 1 }',
            ResourcePattern("DelegationToken", "tok-", PatternType.PREFIXED),
        ),
        (
            b'{"version":1,"resourceType":"User","name":"User:al","patternType":"PREFIXED"}',
            ResourcePattern("User", "User:al", PatternType.PREFIXED),
        ),
        (
            b'{"version":1,"resourceType":"Topic","name":"a:b","patternType":"PREFIXED"}',
            ResourcePattern("Topic", "a:b", PatternType.PREFIXED),
        ),
        (
            b'{"version":1,"resourceType":"User","name":"User:al"}',
            ResourcePattern("User", "User:al", PatternType.PREFIXED),
        ),
        (
            b'{"resourceType":"USER","name":"x","patternType":"prefixed"}',
            ResourcePattern("User", "x", PatternType.PREFIXED),
        ),
    ],
    ids=["kafka", "kafka-transactional-id", "reordered", "path-name", "topic", "no-pattern-type", "lowercase"],
)
def test_decode_prefixed_change(data: bytes, expected: ResourcePattern) -> None:
    decoded = AclChangeZNode.decode(data, PatternType.PREFIXED)
    assert decoded == expected
    assert decoded.pattern_type is PatternType.PREFIXED


@pytest.mark.parametrize(
    "pattern",
    [
        ResourcePattern("User", "User:al", PatternType.PREFIXED),
        ResourcePattern("User", "User:", PatternType.PREFIXED),
        ResourcePattern("DelegationToken", "é-", PatternType.PREFIXED),
    ],
)
def test_prefixed_change_round_trips(pattern: ResourcePattern) -> None:
    assert AclChangeZNode.decode(AclChangeZNode.encode(pattern), PatternType.PREFIXED) == pattern


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"User", id="no-colon"),
        pytest.param(b":User:alice", id="no-type"),
        pytest.param(b"User:", id="no-name"),
        pytest.param(b":", id="colon"),
        pytest.param(b"\xffUser:x", id="not-utf8"),
    ],
)
def test_decode_literal_change_refuses_garbage(data: bytes) -> None:
    with pytest.raises(MalformedZNode):
        AclChangeZNode.decode(data, PatternType.LITERAL)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"User:User:al", id="literal-format"),
        pytest.param(b"not json", id="text"),
        pytest.param(b'{"version":1,"resourceType":"User"', id="truncated"),
        pytest.param(b"\xff", id="not-utf8"),
        pytest.param(b"[]", id="array"),
        pytest.param(b"null", id="null"),
        pytest.param(b'"User:al"', id="string"),
        pytest.param(b'{"version":1,"name":"User:al","patternType":"PREFIXED"}', id="no-resource-type"),
        pytest.param(b'{"version":1,"resourceType":"User","patternType":"PREFIXED"}', id="no-name"),
        pytest.param(b'{"resourceType":1,"name":"User:al"}', id="numeric-type"),
        pytest.param(b'{"resourceType":"User","name":null}', id="null-name"),
        pytest.param(b'{"resourceType":"User","name":["x"]}', id="list-name"),
        pytest.param(b'{"resourceType":"User","name":"x","patternType":"WEIRD"}', id="bad-pattern-type"),
        pytest.param(b'{"resourceType":"User","name":"x","patternType":5}', id="numeric-pattern-type"),
        pytest.param(b'{"resourceType":"User","name":"x","patternType":["PREFIXED"]}', id="list-pattern-type"),
    ],
)
def test_decode_prefixed_change_refuses_garbage(data: bytes) -> None:
    with pytest.raises(MalformedZNode):
        AclChangeZNode.decode(data, PatternType.PREFIXED)


# --- znode paths ----------------------------------------------------------------------------------------------


def test_acl_path_literal() -> None:
    assert AclZNode.path(ResourcePattern("User", "User:alice")) == "/kafka-acl/User/User:alice"
    assert AclZNode.path(ResourcePattern("User", "*")) == "/kafka-acl/User/*"
    assert AclZNode.path(ResourcePattern("DelegationToken", "tok-1")) == "/kafka-acl/DelegationToken/tok-1"
    assert AclZNode.path(ResourcePattern("Cluster", "kafka-cluster")) == "/kafka-acl/Cluster/kafka-cluster"
    assert AclZNode.path(ResourcePattern(ResourceType.USER, "User:CN=a:b")) == "/kafka-acl/User/User:CN=a:b"


def test_acl_path_prefixed() -> None:
    assert AclZNode.path(ResourcePattern("User", "User:al", PatternType.PREFIXED)) == (
        "/kafka-acl-extended/prefixed/User/User:al"
    )
    assert AclZNode.path(ResourcePattern("DelegationToken", "tok-", PatternType.PREFIXED)) == (
        "/kafka-acl-extended/prefixed/DelegationToken/tok-"
    )


def test_acl_roots_and_change_queues() -> None:
    assert AclZNode.root(PatternType.LITERAL) == "/kafka-acl"
    assert AclZNode.root(PatternType.PREFIXED) == "/kafka-acl-extended/prefixed"
    assert AclChangeZNode.root(PatternType.LITERAL) == "/kafka-acl-changes"
    assert AclChangeZNode.root(PatternType.PREFIXED) == "/kafka-acl-extended-changes"
    assert AclChangeZNode.prefix(PatternType.LITERAL) == "/kafka-acl-changes/acl_changes_"
    assert AclChangeZNode.prefix(PatternType.PREFIXED) == "/kafka-acl-extended-changes/acl_changes_"


def test_acl_resource_types_are_kafkas() -> None:
    assert set(AclZNode.RESOURCE_TYPES) == {kind.value for kind in ResourceType}
    for root in ("/kafka-acl", "/kafka-acl-extended/prefixed"):
        for kind in ResourceType:
            assert f"{root}/{kind}" in PERSISTENT_PATHS
    assert "/kafka-acl-changes" in PERSISTENT_PATHS
    assert "/kafka-acl-extended-changes" in PERSISTENT_PATHS
