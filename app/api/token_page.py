"""Tokens written straight to JSON: the bytes ``TokenList`` (a describe) or ``Token`` (GET /v1/tokens/{id}) would
write, without a model per token.

Describing 100 tokens spent some 0.3 ms of CPU building and dumping 100 ``Token`` models (bench: describe p99
against a static page of the same bytes). Here each token becomes a plain dict, in ``Token``'s field order, and
pydantic-core's own encoder writes the page: the same encoder as ``model_dump_json``, so the same escaping and
separators (tests/unit/api/test_token_page.py compares the bytes with the models' for every shape of token).
The routes still declare their ``response_model`` for its OpenAPI schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import Response
from pydantic_core import to_json

from app.api.model_response import MEDIA_TYPE
from app.domain.token import TokenInformation


def token_fields(token: TokenInformation, now_ms: int) -> dict[str, Any]:
    """``Token.of(token, now_ms)``'s fields, in its declaration order (which is the JSON's order). No HMAC: a
    ``TokenInformation`` holds none."""
    return {
        "tokenId": token.token_id,
        "owner": str(token.owner),
        "tokenRequester": str(token.token_requester),
        "renewers": [str(renewer) for renewer in token.renewers],
        "issueTimestamp": token.issue_timestamp,
        "expiryTimestamp": token.expiry_timestamp,
        "maxTimestamp": token.max_timestamp,
        "expired": not token.authenticates_at(now_ms),
    }


def token_json(token: TokenInformation, now_ms: int) -> Response:
    return Response(to_json(token_fields(token, now_ms)), media_type=MEDIA_TYPE)


def token_page_json(tokens: Sequence[TokenInformation], now_ms: int, next_cursor: str | None) -> Response:
    page = {"tokens": [token_fields(token, now_ms) for token in tokens], "nextCursor": next_cursor}
    return Response(to_json(page), media_type=MEDIA_TYPE)
