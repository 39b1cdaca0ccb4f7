"""Token znodes and their change notifications (Kafka's ``DelegationTokenInfoZNode`` and
``DelegationTokenChangeNotificationSequenceZNode``).

A token znode holds compact JSON, written at version 3 (or 1) and read at versions 1, 2 and 3. The key order
written is the one Kafka 3.x produces (its HashMap order), so our znodes are byte for byte what a broker
would write for the same token. A change notification holds the raw UTF-8 tokenId, not JSON.

Reading is on start-up's path (every token of the cluster, 100k and more), so a znode is first decoded straight
into its typed fields by msgspec, several times faster than ``json.loads`` and then checking each field in
Python. Whatever that typed decoding refuses is read again by the plain reader, which either accepts it (JSON
that only it takes, such as an escaped lone surrogate) or refuses it with the message saying what is wrong: the
two readers accept the same znodes and read them alike (tests/unit/storage/zk/znodes/test_tokens.py).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Final

import msgspec

from app.domain.errors import InvalidPrincipal
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.storage.zk.sanitizer import desanitize, sanitize
from app.storage.zk.znodes.malformed import MalformedZNode


class TokenZNode:
    """``/delegation_token/tokens/<tokenId>``: one token, without its HMAC."""

    ROOT: Final = "/delegation_token/tokens"
    WRITABLE_VERSIONS: Final = (1, 3)
    READABLE_VERSIONS: Final = (1, 2, 3)

    @staticmethod
    def path(token_id: str) -> str:
        return f"{TokenZNode.ROOT}/{token_id}"

    @staticmethod
    def encode(token: TokenInformation, version: int = 3) -> bytes:
        if version not in TokenZNode.WRITABLE_VERSIONS:
            raise ValueError(f"token znode version must be one of {TokenZNode.WRITABLE_VERSIONS}")
        doc: dict[str, Any] = {
            "issueTimestamp": token.issue_timestamp,
            "renewers": [sanitize(str(renewer)) for renewer in token.renewers],
        }
        if version >= 3:
            doc["tokenRequester"] = sanitize(str(token.token_requester))
        doc |= {
            "tokenId": token.token_id,
            "owner": sanitize(str(token.owner)),
            "expiryTimestamp": token.expiry_timestamp,
            "maxTimestamp": token.max_timestamp,
            "version": version,
        }
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    @staticmethod
    def decode(data: bytes) -> TokenInformation:
        try:
            doc = _TYPED.decode(data)
        except (msgspec.DecodeError, UnicodeDecodeError):  # msgspec raises the latter for bytes that are not UTF-8
            return TokenZNode.decode_plain(data)
        # Written for start-up's 100k decodings: each name read once, the usual cases (the owner requested it, no
        # renewers) without a call.
        version, owner_name, requester = doc.version, doc.owner, doc.tokenRequester
        if version not in _READABLE_VERSIONS:
            return TokenZNode.decode_plain(data)  # refused, with the plain reader's words
        owner = _principal(owner_name)
        if requester is _UNSET or version < 2 or requester == owner_name:
            requester = owner
        elif isinstance(requester, str):
            requester = _principal(requester)
        else:
            return TokenZNode.decode_plain(data)  # refused, with the plain reader's words
        renewers = doc.renewers
        return TokenInformation(
            doc.tokenId,
            owner,
            requester,
            tuple(map(_principal, renewers)) if renewers else (),
            doc.issueTimestamp,
            doc.expiryTimestamp,
            doc.maxTimestamp,
        )

    @staticmethod
    def decode_plain(data: bytes) -> TokenInformation:
        """``decode`` with the standard library's JSON reader, checking each field in turn."""
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise MalformedZNode("token znode is not UTF-8 JSON") from exc
        if not isinstance(doc, dict):
            raise MalformedZNode("token znode is not a JSON object")
        version = _integer(doc, "version")
        if version not in TokenZNode.READABLE_VERSIONS:
            raise MalformedZNode(f"unsupported token znode version {version}")
        owner = _principal(_string(doc, "owner"))
        requester = owner
        if version >= 2 and "tokenRequester" in doc:
            requester = _principal(_string(doc, "tokenRequester"))
        renewers = doc.get("renewers")
        if not isinstance(renewers, list) or not all(isinstance(item, str) for item in renewers):
            raise MalformedZNode("renewers must be a list of strings")
        return TokenInformation(
            token_id=_string(doc, "tokenId"),
            owner=owner,
            token_requester=requester,
            renewers=tuple(_principal(item) for item in renewers),
            issue_timestamp=_integer(doc, "issueTimestamp"),
            expiry_timestamp=_integer(doc, "expiryTimestamp"),
            max_timestamp=_integer(doc, "maxTimestamp"),
        )


class _TypedToken(msgspec.Struct, gc=False):  # gc=False: never in a cycle, and made 100k times at start-up
    """The fields of a token znode as ``decode`` reads them: JSON integers (not booleans, not floats), strings, a
    list of strings; other keys are ignored, as the plain reader and Kafka's ignore them."""

    version: int
    owner: str
    tokenId: str
    renewers: list[str]
    issueTimestamp: int
    expiryTimestamp: int
    maxTimestamp: int
    # Any: from version 2 on it must be a string, while version 1 ignores whatever stands there.
    tokenRequester: Any = msgspec.UNSET


_TYPED = msgspec.json.Decoder(_TypedToken)
_UNSET = msgspec.UNSET
_READABLE_VERSIONS = frozenset(TokenZNode.READABLE_VERSIONS)


class TokenChangeZNode:
    """``/delegation_token/token_changes/token_change_<10-digit seq>`` (persistent sequential): names a token
    that brokers must re-read."""

    ROOT: Final = "/delegation_token/token_changes"
    PREFIX: Final = f"{ROOT}/token_change_"  # ZooKeeper appends the sequence number

    @staticmethod
    def encode(token_id: str) -> bytes:
        return token_id.encode("utf-8")

    @staticmethod
    def decode(data: bytes) -> str:
        """The tokenId named; undecodable bytes become U+FFFD, which names no token."""
        return data.decode("utf-8", errors="replace")


def _integer(doc: dict[str, Any], key: str) -> int:
    value = doc.get(key)
    # bool is an int in Python, but Kafka's Jackson reader refuses it as it refuses strings.
    if not isinstance(value, int) or isinstance(value, bool):
        raise MalformedZNode(f"{key} must be a JSON integer")
    return value


def _string(doc: dict[str, Any], key: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str):
        raise MalformedZNode(f"{key} must be a JSON string")
    return value


@lru_cache(maxsize=65536)
def _principal(sanitized: str) -> KafkaPrincipal:
    """Cached: the same few owners and renewers recur across many tokens, and sharing one immutable
    principal object between them saves memory and parsing at start-up."""
    try:
        return KafkaPrincipal.parse(desanitize(sanitized))
    except (InvalidPrincipal, UnicodeDecodeError) as exc:
        raise MalformedZNode("a principal in the token znode is malformed") from exc
