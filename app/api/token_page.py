"""Tokens written straight to JSON: the bytes ``TokenList`` (a describe) or ``Token`` (GET /v1/tokens/{id}) would
write, without a model per token.

Describing 100 tokens spent some 0.3 ms of CPU building and dumping 100 ``Token`` models (bench: describe p99
against a static page of the same bytes). Here each token becomes a plain dict, in ``Token``'s field order, and
pydantic-core's own encoder writes it: the same encoder as ``model_dump_json``, so the same escaping and separators
(tests/unit/api/test_token_page.py compares the bytes with the models' for every shape of token).

Building those dicts was still most of a describe's CPU beyond a static page's, so each token's JSON is written once
and kept (``WrittenTokens``): a token never changes (a renewal is a new ``TokenInformation``), and only its last
field, ``expired``, depends on the time of the request, so both its variants are kept. A page is then the kept bytes
joined. The routes still declare their ``response_model`` for its OpenAPI schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import Response
from pydantic_core import to_json

from app.api.model_response import MEDIA_TYPE
from app.domain.token import TokenInformation
from app.domain.token_secret import encode_hmac

# Tokens whose JSON is kept: pages of the same tokens (an owner's, the first of a listing) are what clients ask for
# again; a few MB at most. A page holds at most 1000 tokens (the routes' limit), so a page fits.
MAX_WRITTEN_TOKENS = 4096
_LIVE, _EXPIRED = b',"expired":false}', b',"expired":true}'


def token_fields(token: TokenInformation, now_ms: int) -> dict[str, Any]:
    """``Token.of(token, now_ms)``'s fields, in its declaration order (which is the JSON's order): what the kept bytes
    are written from, and checked against (tests/unit/api/test_token_page.py). No HMAC: a ``TokenInformation`` holds
    none."""
    return _fields_but_expired(token) | {"expired": not token.authenticates_at(now_ms)}


def _fields_but_expired(token: TokenInformation) -> dict[str, Any]:
    return {
        "tokenId": token.token_id,
        "owner": str(token.owner),
        "tokenRequester": str(token.token_requester),
        "renewers": [str(renewer) for renewer in token.renewers],
        "issueTimestamp": token.issue_timestamp,
        "expiryTimestamp": token.expiry_timestamp,
        "maxTimestamp": token.max_timestamp,
    }


class WrittenTokens:
    """Each token's JSON, by token id, for the very ``TokenInformation`` it was written from (a changed token is
    another object, so it is written again). Emptied whole when full: cheaper than tracking what was used last, and
    the pages asked for again are written again at once. Shared by the request threads: a dict's reads and writes
    are atomic, and two threads writing the same token write the same bytes."""

    def __init__(self, capacity: int = MAX_WRITTEN_TOKENS) -> None:
        self._capacity = capacity
        self._written: dict[str, tuple[TokenInformation, bytes, bytes]] = {}

    def json(self, token: TokenInformation, now_ms: int) -> bytes:
        return self.joined([token], now_ms)

    def joined(self, tokens: Sequence[TokenInformation], now_ms: int) -> bytes:
        """The tokens' JSON, comma-separated (a loop of its own: a call per token was a fifth of a page's cost)."""
        kept = self._written.get
        parts = []
        for token in tokens:
            written = kept(token.token_id)
            if written is None or written[0] is not token:
                written = self._write(token)
            parts.append(written[1] if token.authenticates_at(now_ms) else written[2])
        return b",".join(parts)

    def __len__(self) -> int:
        return len(self._written)

    def _write(self, token: TokenInformation) -> tuple[TokenInformation, bytes, bytes]:
        head = to_json(_fields_but_expired(token))[:-1]  # without its closing brace, where ``expired`` goes
        written = (token, head + _LIVE, head + _EXPIRED)
        if len(self._written) >= self._capacity:
            self._written.clear()
        self._written[token.token_id] = written
        return written


_WRITTEN = WrittenTokens()


def token_json(token: TokenInformation, now_ms: int) -> Response:
    return Response(_WRITTEN.json(token, now_ms), media_type=MEDIA_TYPE)


def created_token_json(token: TokenInformation, mac: bytes) -> Response:
    """A create's answer (201): the bytes ``CreatedToken.issued(token, mac)`` writes, the token's fields and then its
    HMAC, without building a ``Token`` and then a ``CreatedToken`` from its dump (a validation each). Not kept: a
    token is answered its HMAC once."""
    fields = _fields_but_expired(token) | {"expired": False, "hmac": encode_hmac(mac)}  # just issued: not expired
    return Response(to_json(fields), status_code=201, media_type=MEDIA_TYPE)


def token_page_json(tokens: Sequence[TokenInformation], now_ms: int, next_cursor: str | None) -> Response:
    body = _WRITTEN.joined(tokens, now_ms)
    return Response(b'{"tokens":[%b],"nextCursor":%b}' % (body, to_json(next_cursor)), media_type=MEDIA_TYPE)
