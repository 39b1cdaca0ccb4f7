"""Token request and response bodies (camelCase, Kafka's field names)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field, StringConstraints

from app.api.schemas.common import (
    MAX_RENEWERS,
    HmacText,
    Int64,
    PrincipalText,
    RequestModel,
    TokenIdText,
)
from app.domain.token import TokenInformation
from app.domain.token_job import MAX_FRAMEWORK_LENGTH, MAX_JOB_TEXT_LENGTH, TokenJob, job_or_none
from app.domain.token_secret import encode_hmac


def _printable(text: str) -> str:
    # No control, format (bidirectional overrides, zero-width), separator other than the space, surrogate or
    # unassigned character: what a reader of the audit trail sees is what was sent, on one line.
    if not text.isprintable():
        raise ValueError("must be printable text: no control, format or line-separator characters")
    return text


FrameworkText = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_FRAMEWORK_LENGTH), AfterValidator(_printable)
]
JobText = Annotated[str, StringConstraints(min_length=1, max_length=MAX_JOB_TEXT_LENGTH), AfterValidator(_printable)]


class TokenJobRequest(RequestModel):
    """Who the token is for, as an orchestrator's plug-in names it: kept in the token's ``token.create`` audit
    event only (the cluster's token record has no room for it). Each key optional, no other keys; each value printable
    Unicode text (no control, format or separator character but the space)."""

    framework: FrameworkText | None = Field(None, description="The framework: spark, flink, ...", examples=["spark"])
    id: JobText | None = Field(
        None, description="The framework's application or job id.", examples=["app-20261128093000-0001"]
    )
    name: JobText | None = Field(None, description="The job's name.", examples=["nightly-etl"])
    user: JobText | None = Field(
        None, description="Who submitted the job, as the framework knows them.", examples=["joe"]
    )

    def job(self) -> TokenJob | None:
        return job_or_none(TokenJob(framework=self.framework, id=self.id, name=self.name, user=self.user))


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
    job: TokenJobRequest | None = Field(
        None, description="The job the token is for, kept in the audit trail only (GET /v1/audit?jobId=...)."
    )


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
    tokenId: str = Field(description="The token's id: its SCRAM user name when a client logs in with it.")
    owner: str = Field(description="The principal the token authenticates as.")
    tokenRequester: str = Field(description="Who asked for it: the owner, or a service acting for it (KIP-373).")
    renewers: list[str] = Field(description="The principals who may renew or expire it, besides its owner.")
    issueTimestamp: int = Field(description="When it was issued, in milliseconds since the epoch.")
    expiryTimestamp: int = Field(description="When it expires unless renewed, in milliseconds since the epoch.")
    maxTimestamp: int = Field(description="The latest its renewals can take it to, in milliseconds since the epoch.")
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
