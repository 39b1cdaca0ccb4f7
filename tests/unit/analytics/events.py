"""Builders of hand-made audit events for the analytics tests, in ``EVENT_SCHEMA`` order. As the service
does, every change of a token carries its owner and requester (``requester`` defaults to the owner)."""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from app.analytics.events_schema import EVENT_COLUMNS, EVENT_SCHEMA

DAY_MS = 86_400_000


def event(
    event_id: int,
    timestamp: int,
    action: str,
    outcome: str = "succeeded",
    *,
    details: dict[str, Any] | None = None,
    service_id: str = "kts-test",
    **columns: Any,
) -> tuple[Any, ...]:
    """A row in ``EVENT_SCHEMA`` order; ``columns`` fills the optional columns by name."""
    values = {
        "id": event_id,
        "timestamp": timestamp,
        "action": action,
        "outcome": outcome,
        "service_id": service_id,
        "details": json.dumps(details or {}),
        **columns,
    }
    unknown = set(values) - set(EVENT_COLUMNS)
    assert not unknown, unknown
    return tuple(values.get(name) for name in EVENT_COLUMNS)


def events_frame(spark: SparkSession, rows: list[tuple[Any, ...]]) -> DataFrame:
    return spark.createDataFrame(rows, EVENT_SCHEMA)


def rows(frame: DataFrame, *columns: str) -> list[tuple[Any, ...]]:
    """The frame's ``columns`` as tuples, sorted (None first) so answers compare without ordering."""
    found = [tuple(row[column] for column in columns) for row in frame.select(*columns).collect()]
    return sorted(found, key=lambda values: tuple((value is not None, value) for value in values))


def create(
    event_id: int,
    at: int,
    token_id: str | None,
    owner: str,
    requester: str,
    *,
    outcome: str = "succeeded",
    requested: int = -1,
    issue: int | None = None,
    expiry: int | None = None,
    maximum: int | None = None,
    job: tuple[str | None, str | None, str | None, str | None] | None = None,
) -> tuple[Any, ...]:
    """``job``: framework, id, name and user, as the create named them."""
    details: dict[str, Any] = {"requestedMaxLifetimeMs": requested, "renewers": []}
    if outcome == "succeeded":
        issue = at if issue is None else issue
        details |= {
            "issueTimestamp": issue,
            "expiryTimestamp": issue + DAY_MS if expiry is None else expiry,
            "maxTimestamp": issue + 7 * DAY_MS if maximum is None else maximum,
        }
    return event(
        event_id,
        at,
        "token.create",
        outcome,
        principal=requester,
        owner=owner,
        token_requester=requester,
        token_id=token_id,
        details=details,
        **({} if job is None else dict(zip(("job_framework", "job_id", "job_name", "job_user"), job, strict=True))),
    )


def renew(
    event_id: int,
    at: int,
    token_id: str,
    owner: str,
    expiry: int,
    *,
    outcome: str = "succeeded",
    requester: str | None = None,
) -> tuple[Any, ...]:
    return event(
        event_id,
        at,
        "token.renew",
        outcome,
        principal=owner,
        owner=owner,
        token_requester=requester or owner,
        token_id=token_id,
        details={"renewTimePeriodMs": -1, "expiryTimestamp": expiry},
    )


def sweep(
    event_id: int, at: int, token_id: str, owner: str, expiry: int, *, requester: str | None = None
) -> tuple[Any, ...]:
    return event(
        event_id,
        at,
        "token.sweep",
        owner=owner,
        token_requester=requester or owner,
        token_id=token_id,
        details={"expiryTimestamp": expiry, "maxTimestamp": expiry + DAY_MS},
    )


def expire(
    event_id: int,
    at: int,
    token_id: str,
    owner: str,
    *,
    deleted: bool,
    expiry: int,
    outcome: str = "succeeded",
    requester: str | None = None,
) -> tuple[Any, ...]:
    return event(
        event_id,
        at,
        "token.expire",
        outcome,
        principal=owner,
        owner=owner,
        token_requester=requester or owner,
        token_id=token_id,
        details={"expiryTimePeriodMs": expiry - at, "expiryTimestamp": expiry, "deleted": deleted},
    )
