"""Token request and response bodies (camelCase, Kafka's field names)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from app.api.schemas.common import (
    MAX_RENEWERS,
    HmacText,
    Int64,
    PrincipalText,
    RequestModel,
    TokenIdText,
)
from app.domain.token import TokenInformation
from app.domain.token_secret import encode_hmac


class CreateTokenRequest(RequestModel):
    owner: PrincipalText | None = Field(None, description="Create for another owner (needs CreateTokens).")
    renewers: list[PrincipalText] = Field(
        default_factory=list,
        max_length=MAX_RENEWERS,
        description=(
            f"At most {MAX_RENEWERS}: the cap bounds one token znode, which every broker reads at start-up "
            "(100 renewers of the longest ASCII principals make about 103 KiB)."
        ),
    )
    maxLifetimeMs: Int64 = Field(-1, description="<= 0: the server maximum; larger values are clamped.")


class RenewByHmacRequest(RequestModel):
    hmac: HmacText
    renewTimePeriodMs: Int64 = Field(-1, description="< 0: delegation.token.expiry.time.ms.")


class ExpireByHmacRequest(RequestModel):
    hmac: HmacText
    expiryTimePeriodMs: Int64 = Field(-1, description="< 0: expire and delete the token now.")


class RenewRequest(RequestModel):
    renewTimePeriodMs: Int64 = -1


class ExpireRequest(RequestModel):
    expiryTimePeriodMs: Int64 = -1


class RevokeRequest(RequestModel):
    owner: PrincipalText | None = Field(None, description="Revoke the tokens this principal owns.")
    tokenRequester: PrincipalText | None = Field(None, description="Revoke the tokens this principal requested.")


class RevokedTokens(BaseModel):
    revoked: list[str] = Field(description="The ids of the tokens revoked, in no particular order.")


class VerifyRequest(RequestModel):
    tokenId: TokenIdText
    hmac: HmacText


class Token(BaseModel):
    tokenId: str
    owner: str
    tokenRequester: str
    renewers: list[str]
    issueTimestamp: int
    expiryTimestamp: int
    maxTimestamp: int
    expired: bool = Field(
        False, description="Past its expiry (or maximum) time: it no longer authenticates; the sweeper deletes it."
    )

    @classmethod
    def of(cls, token: TokenInformation, now_ms: int | None = None) -> Token:
        """``now_ms`` None: a token just issued, which cannot be expired."""
        return cls(
            tokenId=token.token_id,
            owner=str(token.owner),
            tokenRequester=str(token.token_requester),
            renewers=[str(renewer) for renewer in token.renewers],
            issueTimestamp=token.issue_timestamp,
            expiryTimestamp=token.expiry_timestamp,
            maxTimestamp=token.max_timestamp,
            expired=now_ms is not None and not token.authenticates_at(now_ms),
        )


class CreatedToken(Token):
    hmac: str = Field(description="The token's password: standard base64 of HMAC-SHA512(secret, tokenId).")

    @classmethod
    def issued(cls, token: TokenInformation, mac: bytes) -> CreatedToken:
        return cls(**Token.of(token).model_dump(), hmac=encode_hmac(mac))


class TokenList(BaseModel):
    tokens: list[Token]
    nextCursor: str | None


class ExpiryResponse(BaseModel):
    tokenId: str
    expiryTimestamp: int


class VerifyResponse(BaseModel):
    principal: str
    tokenRequester: str
    expiryTimestamp: int
