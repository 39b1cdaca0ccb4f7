"""``/v1/tokens``: thin handlers over TokenService."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Annotated

from fastapi import APIRouter, Body, Path, Query, Request, Response, status

from app.api.authenticated_route import AuthenticatedRoute
from app.api.deps import CurrentCaller, Revocations, Tokens, services_of
from app.api.model_response import model_json
from app.api.responses import error_responses
from app.api.schemas.common import MAX_OWNER_FILTERS, PrincipalText
from app.api.schemas.tokens import (
    CreatedToken,
    CreateTokenRequest,
    ExpireByHmacRequest,
    ExpireRequest,
    ExpiryResponse,
    RenewByHmacRequest,
    RenewRequest,
    RevokedTokens,
    RevokeRequest,
    Token,
    TokenList,
    VerifyRequest,
    VerifyResponse,
)
from app.api.token_page import created_token_json, token_json, token_page_json
from app.domain.errors import InvalidInput, NotAuthenticated
from app.domain.principal import KafkaPrincipal
from app.domain.revocation import RevokeSelector
from app.domain.token_rules import CreateRequest
from app.domain.token_secret import TOKEN_ID_PATTERN, decode_hmac

router = APIRouter(prefix="/v1/tokens", tags=["tokens"], route_class=AuthenticatedRoute)
TokenIdPath = Annotated[str, Path(pattern=TOKEN_ID_PATTERN, max_length=64)]
MAX_PAGE = 1000
# What Swagger UI fills in for a create: a token of the caller's own with every default, which works for any
# caller (a made-up owner or renewer would be refused, or mint a token for a principal nobody meant).
CREATE_EXAMPLES = Body(
    openapi_examples={"defaults": {"summary": "a token for yourself, every default", "value": {}}},
)
MAX_CURSOR_LENGTH = 86  # unpadded base64 of the longest token id (64 characters)
_TOKEN_ID = re.compile(TOKEN_ID_PATTERN)


def _encode_cursor(token_id: str | None) -> str | None:
    return None if token_id is None else base64.urlsafe_b64encode(token_id.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str | None) -> str | None:
    if cursor is None:
        return None
    try:
        token_id = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        token_id = ""
    if not _TOKEN_ID.fullmatch(token_id):
        raise InvalidInput("The cursor is not one this service returned.")
    return token_id


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=CreatedToken,
    responses=error_responses(400, 401, 403, 409, 413, 422, 429, 503),
)
def create_token(
    caller: CurrentCaller, request: Request, body: Annotated[CreateTokenRequest | None, CREATE_EXAMPLES] = None
) -> Response:
    # The token service read from the request, not a dependency solved per request (as verify_token does).
    tokens = services_of(request).tokens
    body = body or CreateTokenRequest()  # an empty JSON body means all defaults
    wanted = CreateRequest(
        owner=KafkaPrincipal.parse(body.owner) if body.owner is not None else None,
        renewers=tuple(KafkaPrincipal.parse(renewer) for renewer in body.renewers),
        max_lifetime_ms=body.maxLifetimeMs,
        job=None if body.job is None else body.job.job(),
    )
    issued = tokens.create(caller, wanted)
    return created_token_json(issued.token, issued.hmac)  # CreatedToken's bytes


@router.get("", response_model=TokenList, responses=error_responses(401, 422, 503))
def describe_tokens(
    caller: CurrentCaller,
    request: Request,
    owner: Annotated[list[PrincipalText] | None, Query(max_length=MAX_OWNER_FILTERS)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    cursor: Annotated[str | None, Query(max_length=MAX_CURSOR_LENGTH)] = None,
) -> Response:
    # The token service read from the request, not a dependency, as verify_token does (a dependency costs some
    # 25 µs of CPU a request); the caller's dependency has already answered 503 if the services are not up.
    tokens = services_of(request).tokens
    owners = None if owner is None else [KafkaPrincipal.parse(item) for item in owner]
    page = tokens.describe(caller, owners, limit=limit, after=_decode_cursor(cursor))
    now_ms = tokens.now_ms()
    return token_page_json(page.tokens, now_ms, _encode_cursor(page.next_after))


@router.post("/renew", response_model=ExpiryResponse, responses=error_responses(401, 403, 404, 409, 410, 413, 422, 503))
def renew_by_hmac(body: RenewByHmacRequest, caller: CurrentCaller, tokens: Tokens) -> ExpiryResponse:
    change = tokens.renew_by_hmac(caller, decode_hmac(body.hmac), body.renewTimePeriodMs)
    return ExpiryResponse(tokenId=change.token_id, expiryTimestamp=change.expiry_timestamp)


@router.post("/expire", response_model=ExpiryResponse, responses=error_responses(401, 403, 404, 409, 413, 422, 503))
def expire_by_hmac(body: ExpireByHmacRequest, caller: CurrentCaller, tokens: Tokens) -> ExpiryResponse:
    change = tokens.expire_by_hmac(caller, decode_hmac(body.hmac), body.expiryTimePeriodMs)
    return ExpiryResponse(tokenId=change.token_id, expiryTimestamp=change.expiry_timestamp)


@router.post("/revoke", response_model=RevokedTokens, responses=error_responses(401, 403, 409, 413, 422, 503))
def revoke_tokens(caller: CurrentCaller, revocation: Revocations, body: RevokeRequest | None = None) -> RevokedTokens:
    """Expire every token of an owner and/or a requester at once (super users, or Alter on the cluster)."""
    body = body or RevokeRequest()  # an empty JSON body names no tokens: refused below, with the others
    selector = RevokeSelector(
        owner=None if body.owner is None else KafkaPrincipal.parse(body.owner),
        token_requester=None if body.tokenRequester is None else KafkaPrincipal.parse(body.tokenRequester),
    )
    return RevokedTokens(revoked=revocation.revoke(caller, selector))


@router.post("/verify", response_model=VerifyResponse, responses=error_responses(401, 413, 422, 503))
def verify_token(body: VerifyRequest, caller: CurrentCaller, request: Request) -> Response:
    # The token service read from the request, not a dependency: FastAPI solves each dependency on every request
    # (some 25 µs of CPU apiece), a tenth of what the hottest authenticated path costs beyond a no-op POST.
    token = services_of(request).tokens.verify_for(caller, body.tokenId, decode_hmac(body.hmac))
    if token is None:
        raise NotAuthenticated("Unknown, expired or invalid delegation token.")
    return model_json(
        VerifyResponse(
            principal=str(token.authenticated_principal),
            tokenRequester=str(token.token_requester),
            expiryTimestamp=token.expiry_timestamp,
        )
    )


@router.get("/{token_id}", response_model=Token, responses=error_responses(401, 404, 422, 503))
def get_token(token_id: TokenIdPath, caller: CurrentCaller, tokens: Tokens) -> Response:
    return token_json(tokens.get(caller, token_id), tokens.now_ms())


@router.post(
    "/{token_id}/renew",
    response_model=ExpiryResponse,
    responses=error_responses(401, 403, 404, 409, 410, 413, 422, 503),
)
def renew_token(
    token_id: TokenIdPath, caller: CurrentCaller, tokens: Tokens, body: RenewRequest | None = None
) -> ExpiryResponse:
    change = tokens.renew(caller, token_id, (body or RenewRequest()).renewTimePeriodMs)
    return ExpiryResponse(tokenId=change.token_id, expiryTimestamp=change.expiry_timestamp)


@router.post(
    "/{token_id}/expire", response_model=ExpiryResponse, responses=error_responses(401, 403, 404, 409, 413, 422, 503)
)
def expire_token(
    token_id: TokenIdPath, caller: CurrentCaller, tokens: Tokens, body: ExpireRequest | None = None
) -> ExpiryResponse:
    change = tokens.expire(caller, token_id, (body or ExpireRequest()).expiryTimePeriodMs)
    return ExpiryResponse(tokenId=change.token_id, expiryTimestamp=change.expiry_timestamp)
