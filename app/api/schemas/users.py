"""SCRAM credential request and response bodies."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field, StringConstraints

from app.api.schemas.common import RequestModel
from app.domain.credentials import MAX_ITERATIONS, MIN_ITERATIONS, Mechanism

MAX_USER_NAME_LENGTH = 255
MAX_PASSWORD_LENGTH = 1024
USER_NAME_PATTERN = r"^[^\x00-\x1f\x7f]+$"


def _storable(name: str) -> str:
    if name in (".", ".."):  # the znode name would be a relative path segment, which ZooKeeper refuses
        raise ValueError("A user name cannot be '.' or '..'.")
    return name


UserName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_USER_NAME_LENGTH, pattern=USER_NAME_PATTERN),
    AfterValidator(_storable),
]


class SetCredentialRequest(RequestModel):
    mechanism: Annotated[Mechanism, Field(strict=False)]
    password: Annotated[str, StringConstraints(min_length=1, max_length=MAX_PASSWORD_LENGTH)]
    iterations: Annotated[int, Field(ge=MIN_ITERATIONS, le=MAX_ITERATIONS, strict=True)] = MIN_ITERATIONS


class CredentialResponse(BaseModel):
    user: str
    mechanism: Annotated[Mechanism, Field(strict=False)]
    iterations: int | None = None
    deleted: bool = False


class MechanismIterations(BaseModel):
    mechanism: Annotated[Mechanism, Field(strict=False)]
    iterations: int


class UserCredentials(BaseModel):
    user: str
    credentials: list[MechanismIterations] = Field(
        description="The user's SCRAM mechanisms and iteration counts; empty when the user has none."
    )


class UnlockResponse(BaseModel):
    user: str
    wasLocked: bool = Field(
        description="Whether a lock of the account that this replica knew of was in force: one shared by any "
        "replica, or one this replica kept to itself."
    )
    notShared: bool = Field(
        description="Whether that lock was this replica's own, which it could not share (the shared locks were at "
        "their limit, or ZooKeeper could not be reached). A lock another replica kept to itself is lifted too when "
        "everyReplica is true, but this replica cannot see it: its account.lock audit event says shared false."
    )
    everyReplica: bool = Field(
        description="Whether the unlock reached every replica. False when ZooKeeper could not be written: only this "
        "replica's own lock was lifted, and shared locks stay in force until an unlock reaches them."
    )
