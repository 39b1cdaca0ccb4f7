"""``model_json`` writes the bytes FastAPI writes for a ``response_model``, so skipping FastAPI's second validation
changes no answer: unicode principals, empty and long lists, None, booleans and large integers alike."""

from __future__ import annotations

import asyncio

import pytest
from fastapi.responses import JSONResponse
from fastapi.routing import serialize_response
from fastapi.utils import create_model_field
from pydantic import BaseModel

from app.api.model_response import model_json
from app.api.schemas.tokens import CreatedToken, Token, TokenList, VerifyResponse
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation

OWNER = KafkaPrincipal.user('ünïcødé-所有者 "quoted" \\ back')
TOKEN = TokenInformation(
    "AbC-_1", OWNER, KafkaPrincipal.user("kts"), (OWNER, KafkaPrincipal.user("r")), 1, 2**53 + 1, 9_223_372_036_854_775
)


def _fastapi_bytes(model: BaseModel) -> bytes:
    field = create_model_field(name="Response", type_=type(model), mode="serialization")
    content = asyncio.run(serialize_response(field=field, response_content=model, is_coroutine=False))
    return bytes(JSONResponse(content).body)


@pytest.mark.parametrize(
    "model",
    [
        Token.of(TOKEN, 5),
        Token.of(TOKEN),
        TokenList(tokens=[], nextCursor=None),
        TokenList(tokens=[Token.of(TOKEN, 3), Token.of(TOKEN)] * 50, nextCursor="QWJD"),
        CreatedToken.issued(TOKEN, bytes(range(64))),
        VerifyResponse(principal=str(OWNER), tokenRequester="User:kts", expiryTimestamp=2),
    ],
    ids=["token-expired", "token", "empty-list", "page", "created", "verify"],
)
def test_the_same_bytes_as_fastapi_writes(model: BaseModel) -> None:
    response = model_json(model, 201)
    assert bytes(response.body) == _fastapi_bytes(model)
    assert response.status_code == 201
    assert response.media_type == "application/json"
