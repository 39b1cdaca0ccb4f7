"""Field types shared by request and response models, with the limits the edge enforces."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, WithJsonSchema

from app.domain.errors import InvalidPrincipal
from app.domain.principal import MAX_PRINCIPAL_LENGTH, KafkaPrincipal
from app.domain.token_secret import TOKEN_ID_PATTERN

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
MAX_RENEWERS = 100
MAX_OWNER_FILTERS = 100
# Free text a filter or a name may hold: no control characters (ZooKeeper and PostgreSQL refuse NUL).
PRINTABLE_PATTERN = r"^[^\x00-\x1f\x7f]*$"
HMAC_PATTERN = r"^[A-Za-z0-9+/]{86}==$"


def _principal(text: str) -> str:
    try:
        KafkaPrincipal.parse(text)
    except InvalidPrincipal as exc:
        raise ValueError(exc.message) from None
    return text


PrincipalText = Annotated[
    str,
    StringConstraints(min_length=3, max_length=MAX_PRINCIPAL_LENGTH),
    AfterValidator(_principal),
    Field(examples=["User:alice"]),
]
Int64 = Annotated[
    int,
    Field(ge=INT64_MIN, le=INT64_MAX, strict=True),
    # FastAPI's OpenAPI model holds bounds as floats, which would document 2**63 - 1 as 2**63; the
    # OpenAPI format names the signed 64-bit range exactly.
    WithJsonSchema({"type": "integer", "format": "int64"}),
]
TokenIdText = Annotated[str, StringConstraints(pattern=TOKEN_ID_PATTERN), Field(examples=["E8gTWaIxRUOaSRH7wY3N1w"])]
HmacText = Annotated[
    str,
    StringConstraints(pattern=HMAC_PATTERN),
    Field(description="Standard, padded base64 of the token's 64-byte HMAC (88 characters)."),
]


class RequestModel(BaseModel):
    """Unknown fields and loosely typed values are refused, not guessed at."""

    model_config = ConfigDict(extra="forbid", strict=True)


class ErrorBody(BaseModel):
    # Built when first used, not when declared: FastAPI makes a TypeAdapter of it for every documented error status of
    # every route (some 145), used only to write the OpenAPI document, which is built on its first request. Building
    # them all at import was some 30 ms of every start-up.
    model_config = ConfigDict(defer_build=True)

    error: str
    message: str
    code: int | None = None
    details: list[dict[str, Any]] | None = None
