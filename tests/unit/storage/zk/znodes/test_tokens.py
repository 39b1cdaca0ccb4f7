"""The token znode's data and its change notification (docs/kafka-compatibility.md#token-znodes): byte-exact
with what Kafka writes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.storage.zk.znodes import MalformedZNode, TokenChangeZNode, TokenZNode

ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")

# A v3 znode exactly as Kafka 3.x writes it.
V3_VECTOR = (
    b'{"issueTimestamp":1700000000000,"renewers":["User%3Abob"],"tokenRequester":"User%3Aalice",'
    b'"tokenId":"E8gTWaIxRUOaSRH7wY3N1w","owner":"User%3Aalice","expiryTimestamp":1700086400000,'
    b'"maxTimestamp":1700604800000,"version":3}'
)
V3_TOKEN = TokenInformation(
    token_id="E8gTWaIxRUOaSRH7wY3N1w",
    owner=ALICE,
    token_requester=ALICE,
    renewers=(BOB,),
    issue_timestamp=1_700_000_000_000,
    expiry_timestamp=1_700_086_400_000,
    max_timestamp=1_700_604_800_000,
)


def _doc(**changes: Any) -> dict[str, Any]:
    """The vector as a dict, with keys changed (a value of ``...`` removes the key)."""
    doc: dict[str, Any] = json.loads(V3_VECTOR)
    for key, value in changes.items():
        if value is ...:
            doc.pop(key, None)
        else:
            doc[key] = value
    return doc


def _bytes(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode("utf-8")


# -------------------- vector


def test_v3_vector_decodes_to_the_expected_token() -> None:
    assert TokenZNode.decode(V3_VECTOR) == V3_TOKEN


def test_encoding_the_vector_token_at_version_3_gives_exactly_the_vector_bytes() -> None:
    assert TokenZNode.encode(V3_TOKEN, version=3) == V3_VECTOR


def test_default_encoding_version_is_3() -> None:
    assert TokenZNode.encode(V3_TOKEN) == V3_VECTOR


def test_v3_keeps_a_requester_different_from_the_owner() -> None:
    token = TokenInformation("tid", BOB, ALICE, (), 1, 2, 3)
    data = TokenZNode.encode(token, version=3)
    assert json.loads(data)["tokenRequester"] == "User%3Aalice"
    assert TokenZNode.decode(data) == token


def test_key_order_is_irrelevant_to_the_reader() -> None:
    shuffled = dict(reversed(list(json.loads(V3_VECTOR).items())))
    assert TokenZNode.decode(_bytes(shuffled)) == V3_TOKEN


def test_principals_with_special_characters_are_sanitized_and_round_trip() -> None:
    owner = KafkaPrincipal.parse("User:CN=a b,O=x*y~z+w")
    token = TokenInformation("tid", owner, KafkaPrincipal.user("é"), (KafkaPrincipal.user("a:b"),), 1, 2, 3)
    data = TokenZNode.encode(token)
    doc = json.loads(data)
    assert doc["owner"] == "User%3ACN%3Da%20b%2CO%3Dx%2Ay%7Ez%2Bw"
    assert doc["tokenRequester"] == "User%3A%C3%A9"
    assert doc["renewers"] == ["User%3Aa%3Ab"]
    assert TokenZNode.decode(data) == token


def test_empty_renewers_are_written_as_an_empty_array() -> None:
    token = TokenInformation("tid", ALICE, ALICE, (), 1, 2, 3)
    assert b'"renewers":[]' in TokenZNode.encode(token)
    assert TokenZNode.decode(TokenZNode.encode(token)).renewers == ()


def test_encoding_is_compact_json() -> None:
    data = TokenZNode.encode(V3_TOKEN)
    assert b" " not in data
    assert b"\n" not in data


def test_timestamps_are_written_as_json_integers() -> None:
    doc = json.loads(TokenZNode.encode(V3_TOKEN))
    for key in ("issueTimestamp", "expiryTimestamp", "maxTimestamp", "version"):
        assert type(doc[key]) is int


# -------------------- version 1 and 2


def test_v1_encoding_has_no_requester_and_version_1() -> None:
    doc = json.loads(TokenZNode.encode(V3_TOKEN, version=1))
    assert "tokenRequester" not in doc
    assert doc["version"] == 1


def test_v1_encoding_is_the_vector_without_the_requester() -> None:
    expected = V3_VECTOR.replace(b'"tokenRequester":"User%3Aalice",', b"").replace(b'"version":3', b'"version":1')
    assert TokenZNode.encode(V3_TOKEN, version=1) == expected


def test_v1_encoding_drops_a_requester_different_from_the_owner() -> None:
    token = TokenInformation("tid", BOB, ALICE, (), 1, 2, 3)
    assert TokenZNode.decode(TokenZNode.encode(token, version=1)).token_requester == BOB


def test_decoding_v1_takes_the_owner_as_requester() -> None:
    token = TokenZNode.decode(_bytes(_doc(version=1, tokenRequester=...)))
    assert token.token_requester == token.owner == ALICE


def test_decoding_v1_ignores_a_stray_requester_as_kafka_does() -> None:
    token = TokenZNode.decode(_bytes(_doc(version=1, tokenRequester="User%3Abob")))
    assert token.token_requester == ALICE


def test_decoding_v2_without_requester_takes_the_owner() -> None:
    token = TokenZNode.decode(_bytes(_doc(version=2, tokenRequester=...)))
    assert token.token_requester == ALICE


def test_decoding_v2_with_requester_reads_it() -> None:
    token = TokenZNode.decode(_bytes(_doc(version=2, tokenRequester="User%3Abob")))
    assert token.token_requester == BOB


def test_decoding_v3_without_requester_takes_the_owner() -> None:
    assert TokenZNode.decode(_bytes(_doc(tokenRequester=...))).token_requester == ALICE


@pytest.mark.parametrize("version", [0, 2, 4, -1])
def test_encode_refuses_versions_kafka_never_writes(version: int) -> None:
    with pytest.raises(ValueError):
        TokenZNode.encode(V3_TOKEN, version=version)


# -------------------- refusals


@pytest.mark.parametrize("key", ["issueTimestamp", "expiryTimestamp", "maxTimestamp"])
@pytest.mark.parametrize(
    "value",
    [
        pytest.param("1700000000000", id="string"),
        pytest.param(True, id="true"),
        pytest.param(False, id="false"),
        pytest.param(1700000000000.0, id="float"),
        pytest.param(1.7e12, id="exponent-float"),
        pytest.param(None, id="null"),
        pytest.param([1700000000000], id="array"),
    ],
)
def test_decode_refuses_timestamps_that_are_not_json_integers(key: str, value: object) -> None:
    with pytest.raises(MalformedZNode):
        TokenZNode.decode(_bytes(_doc(**{key: value})))


@pytest.mark.parametrize(
    "key", ["version", "owner", "renewers", "issueTimestamp", "expiryTimestamp", "maxTimestamp", "tokenId"]
)
def test_decode_refuses_missing_keys(key: str) -> None:
    with pytest.raises(MalformedZNode):
        TokenZNode.decode(_bytes(_doc(**{key: ...})))


@pytest.mark.parametrize(
    "version",
    [
        pytest.param(0, id="0"),
        pytest.param(4, id="4"),
        pytest.param(-3, id="negative"),
        pytest.param("3", id="string-3"),
        pytest.param(3.0, id="float-3"),
        pytest.param(True, id="true"),
        pytest.param(None, id="null"),
    ],
)
def test_decode_refuses_unsupported_versions(version: object) -> None:
    with pytest.raises(MalformedZNode):
        TokenZNode.decode(_bytes(_doc(version=version)))


@pytest.mark.parametrize(
    "renewers",
    [
        pytest.param("User%3Abob", id="string"),
        pytest.param(None, id="null"),
        pytest.param({"0": "User%3Abob"}, id="object"),
        pytest.param([1], id="list-of-int"),
        pytest.param([["User%3Abob"]], id="nested-list"),
    ],
)
def test_decode_refuses_renewers_that_are_not_a_list_of_strings(renewers: object) -> None:
    with pytest.raises(MalformedZNode):
        TokenZNode.decode(_bytes(_doc(renewers=renewers)))


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"{", id="truncated"),
        pytest.param(b"not json", id="not-json"),
        pytest.param(V3_VECTOR[:-1], id="vector-truncated"),
    ],
)
def test_decode_refuses_bad_json(data: bytes) -> None:
    with pytest.raises(MalformedZNode):
        TokenZNode.decode(data)


def test_decode_refuses_non_utf8() -> None:
    with pytest.raises(MalformedZNode):
        TokenZNode.decode(V3_VECTOR.replace(b"E8gTWaIxRUOaSRH7wY3N1w", b"E8gTWaIxRUOaSRH7wY3N1\xff"))


@pytest.mark.parametrize("data", [b"[]", b"null", b"3", b'"token"', b"true"])
def test_decode_refuses_json_that_is_not_an_object(data: bytes) -> None:
    with pytest.raises(MalformedZNode):
        TokenZNode.decode(data)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        pytest.param("owner", "alice", id="owner-without-type"),
        pytest.param("owner", "User%3A", id="owner-empty-name"),
        pytest.param("owner", "%3Aalice", id="owner-empty-type"),
        pytest.param("owner", "User%3Aa%00b", id="owner-control-character"),
        pytest.param("owner", "User%3A%FF", id="owner-invalid-utf8-escape"),
        pytest.param("owner", 42, id="owner-not-a-string"),
        pytest.param("tokenRequester", "alice", id="requester-without-type"),
        pytest.param("tokenRequester", 42, id="requester-not-a-string"),
        pytest.param("renewers", ["bob"], id="renewer-without-type"),
        pytest.param("tokenId", 42, id="token-id-not-a-string"),
    ],
)
def test_decode_refuses_malformed_principals_and_ids(key: str, value: object) -> None:
    with pytest.raises(MalformedZNode):
        TokenZNode.decode(_bytes(_doc(**{key: value})))


def test_malformed_znode_is_a_value_error() -> None:
    assert issubclass(MalformedZNode, ValueError)


# -------------------- change notification


def test_token_change_is_the_raw_utf8_token_id_not_json() -> None:
    assert TokenChangeZNode.encode("E8gTWaIxRUOaSRH7wY3N1w") == b"E8gTWaIxRUOaSRH7wY3N1w"


def test_token_change_decodes_to_the_token_id_and_garbage_to_no_token_id() -> None:
    assert TokenChangeZNode.decode(b"E8gTWaIxRUOaSRH7wY3N1w") == "E8gTWaIxRUOaSRH7wY3N1w"
    assert TokenChangeZNode.decode(b"\xffid") == "\ufffdid"


def test_token_paths_are_kafkas() -> None:
    assert TokenZNode.path("E8gTWaIxRUOaSRH7wY3N1w") == "/delegation_token/tokens/E8gTWaIxRUOaSRH7wY3N1w"
    assert TokenChangeZNode.PREFIX == "/delegation_token/token_changes/token_change_"


# -------------------- the typed reader and the plain one agree


def _read(reader: Any, data: bytes) -> TokenInformation | str:
    """What a reader makes of ``data``: the token, or the words of its refusal."""
    try:
        token: TokenInformation = reader(data)
    except MalformedZNode as exc:
        return f"refused: {exc}"
    return token


EDGE_CASES = [
    V3_VECTOR,
    _bytes(_doc(version=1)),
    _bytes(_doc(version=1, tokenRequester=42)),  # version 1 ignores whatever stands there
    _bytes(_doc(version=1, tokenRequester=None)),
    _bytes(_doc(version=2, tokenRequester=None)),
    _bytes(_doc(version=2, tokenRequester=...)),
    _bytes(_doc(tokenRequester="User%3Acarol")),
    _bytes(_doc(owner="User%3A\\ud800")),  # an escaped lone surrogate: json takes it, msgspec does not
    _bytes(_doc(unknown={"nested": [1, 2]})),
    _bytes(_doc(issueTimestamp=10**30)),  # past 64 bits: an integer all the same
    _bytes(_doc(issueTimestamp=-1)),
    _bytes(_doc(renewers=[])),
    _bytes(_doc(renewers=["User%3Abob", "User%3Abob"])),
    _bytes(_doc(renewers=["bob"])),
    _bytes(_doc(owner="User%3A%FF")),
    _bytes(_doc(version=...)),
    _bytes(_doc(version=3.0)),
    _bytes(_doc(version=True)),
    _bytes(_doc(maxTimestamp=1.5)),
    _bytes(_doc(tokenId=None)),
    V3_VECTOR.replace(b'"version":3', b'"version":3,"version":1'),  # duplicate keys: the last one counts
    V3_VECTOR.replace(b'"owner":"User%3Aalice"', b'"owner":"User%3Aalice","owner":"User%3Abob"'),
    V3_VECTOR.replace(b"1700000000000", b"NaN"),
    V3_VECTOR.replace(b"E8gTWaIxRUOaSRH7wY3N1w", b"E8gTWaIxRUOaSRH7wY3N1\xff"),
    V3_VECTOR.replace(b"E8gTWaIxRUOaSRH7wY3N1w", b"\xed\xa0\x80"),  # UTF-8 of a surrogate: not UTF-8
    V3_VECTOR.replace(b"E8gTWaIxRUOaSRH7wY3N1w", b"a\x01b"),  # a raw control character in a string
    V3_VECTOR.replace(b"E8gTWaIxRUOaSRH7wY3N1w", "tökén".encode()),
    b"\xef\xbb\xbf" + V3_VECTOR,  # a byte order mark
    b" \n" + V3_VECTOR + b"\t ",
    V3_VECTOR + b"x",
    b"",
    b"[]",
    b"null",
    b"{}",
]


@pytest.mark.parametrize("data", EDGE_CASES)
def test_the_typed_reader_reads_every_znode_as_the_plain_reader_does(data: bytes) -> None:
    assert _read(TokenZNode.decode, data) == _read(TokenZNode.decode_plain, data)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=6,
)
PRINCIPALS = st.sampled_from(["User%3Aalice", "User%3Abob", "Group%3Aops", "alice", "User%3A", "User%3A%FF"])
FIELDS = {
    "version": st.integers(-1, 4) | JSON_VALUES,
    "owner": PRINCIPALS | JSON_VALUES,
    "tokenRequester": PRINCIPALS | JSON_VALUES,
    "renewers": st.lists(PRINCIPALS, max_size=3) | JSON_VALUES,
    "tokenId": st.text(max_size=24) | JSON_VALUES,
    "issueTimestamp": st.integers() | JSON_VALUES,
    "expiryTimestamp": st.integers() | JSON_VALUES,
    "maxTimestamp": st.integers() | JSON_VALUES,
}


@settings(max_examples=400, deadline=None)
@given(
    st.fixed_dictionaries({}, optional=FIELDS),
    st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=2),
)
def test_the_typed_reader_agrees_with_the_plain_reader_on_any_json_object(
    fields: dict[str, Any], extra: dict[str, Any]
) -> None:
    data = _bytes(extra | fields)
    assert _read(TokenZNode.decode, data) == _read(TokenZNode.decode_plain, data)
