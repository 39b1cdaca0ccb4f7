"""``token_page_json``, ``token_json`` and ``created_token_json`` write the bytes the ``TokenList``, ``Token`` and
``CreatedToken`` models write (and so the bytes FastAPI wrote from them: test_model_response.py), for tokens of every
shape."""

from __future__ import annotations

import pytest
from pydantic_core import to_json

from app.api.model_response import model_json
from app.api.schemas.tokens import CreatedToken, Token, TokenList
from app.api.token_page import WrittenTokens, created_token_json, token_fields, token_json, token_page_json
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation

NOW = 1_000
USER = KafkaPrincipal.user("u7")
UNICODE = KafkaPrincipal.user('ünïcødé-所有者 "quoted" \\ back / 🎉 \u2028 \u00a0')
SERVICE = KafkaPrincipal("Service", "spark:driver")
TOKENS = [
    TokenInformation("plain", USER, USER, (), 1, 2_000, 3_000),  # no renewers, not expired
    TokenInformation("renewed-0", USER, USER, (USER, SERVICE, UNICODE), 1, 2_000, 3_000),
    TokenInformation("for-someone", UNICODE, SERVICE, (USER,), 1, 2_000, 3_000),  # owner != requester
    TokenInformation("past-expiry", USER, SERVICE, (), 1, NOW, 3_000),  # expired at its expiry instant
    TokenInformation("past-max", UNICODE, UNICODE, (UNICODE,), 1, 2_000, NOW - 1),
    TokenInformation("big_ints-AZ", USER, USER, (), 0, 2**53 + 1, 2**63 - 1),
]


@pytest.mark.parametrize("cursor", [None, "cGxhaW4", 'odd "cursor" é'])
@pytest.mark.parametrize("tokens", [[], TOKENS[:1], TOKENS, TOKENS * 20], ids=["empty", "one", "each-shape", "120"])
def test_a_page_as_the_models_write_it(tokens: list[TokenInformation], cursor: str | None) -> None:
    models = model_json(TokenList(tokens=[Token.of(token, NOW) for token in tokens], nextCursor=cursor))
    response = token_page_json(tokens, NOW, cursor)
    assert bytes(response.body) == bytes(models.body)
    assert response.status_code == models.status_code == 200
    assert response.headers.items() == models.headers.items()


@pytest.mark.parametrize("token", TOKENS, ids=[token.token_id for token in TOKENS])
def test_a_token_as_its_model_writes_it(token: TokenInformation) -> None:
    response = token_json(token, NOW)
    assert bytes(response.body) == bytes(model_json(Token.of(token, NOW)).body)
    assert response.headers.items() == model_json(Token.of(token, NOW)).headers.items()


@pytest.mark.parametrize("token", TOKENS, ids=[token.token_id for token in TOKENS])
def test_a_created_token_as_its_model_writes_it(token: TokenInformation) -> None:
    mac = bytes(range(64))  # an HMAC-SHA512's length, every byte value base64 has to write
    models = model_json(CreatedToken.issued(token, mac), 201)
    response = created_token_json(token, mac)
    assert bytes(response.body) == bytes(models.body)
    assert response.status_code == models.status_code == 201
    assert response.headers.items() == models.headers.items()


def test_the_fields_are_the_models_in_its_order() -> None:
    # A field added to Token (the documented schema) without one here would be missed by the bytes tests'
    # tokens only if it had a default: this names the drift directly.
    assert list(token_fields(TOKENS[1], NOW)) == list(Token.model_fields)


def test_a_kept_token_is_written_again_once_it_changed() -> None:
    written = WrittenTokens()
    token = TOKENS[0]
    assert written.json(token, NOW) == to_json(token_fields(token, NOW))
    renewed = token.with_expiry(2_500)  # the same id, another object: a renewal as the cache installs it
    assert written.json(renewed, 2_400) == to_json(token_fields(renewed, 2_400))
    assert b'"expiryTimestamp":2500' in written.json(renewed, 2_400)


def test_a_kept_token_turns_expired_with_the_time_of_the_request() -> None:
    written = WrittenTokens()
    token = TOKENS[0]
    for now_ms in (NOW, 1_999, 2_000, 5_000, NOW):
        assert written.json(token, now_ms) == to_json(token_fields(token, now_ms))


def test_a_full_cache_is_emptied_and_still_answers_every_token() -> None:
    written = WrittenTokens(capacity=2)
    for _ in range(3):
        for token in TOKENS:
            assert written.json(token, NOW) == to_json(token_fields(token, NOW))
    assert len(written) <= 2
