"""The audit trail's response models; ``Event`` is derived from ``EVENT_FIELDS``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field, WithJsonSchema, create_model

from app.api.schemas.common import INT64_MAX
from app.domain.audit import EVENT_FIELDS, EventField, FieldType, StoredEvent

_PYTHON_TYPES: dict[FieldType, Any] = {
    FieldType.SERIAL: int,
    FieldType.INT64: int,
    FieldType.INT32: int,
    FieldType.STRING: str,
    FieldType.JSON_OBJECT: dict[str, Any],
}


def _annotation(field: EventField) -> Any:
    python_type = _PYTHON_TYPES[field.type]
    return python_type | None if field.nullable else python_type


# Every field is required, null included: a client sees the whole event. No length limits in the schema:
# the service writes these values, the caller never sends them.
Event: type[BaseModel] = create_model(
    "Event", **{field.api_name: (_annotation(field), ...) for field in EVENT_FIELDS}
)


def event_view(stored: StoredEvent) -> BaseModel:
    return Event(**{field.api_name: getattr(stored, field.name) for field in EVENT_FIELDS})


INSTANT_HELP = (
    "milliseconds since the epoch, or an ISO-8601 time such as 2026-11-24T10:00:00Z or +01:00 (UTC if no offset)"
)


def _epoch_ms(value: object) -> object:
    """An ISO-8601 time becomes ms since the epoch; digits (and anything else) are left to the int check."""
    if not isinstance(value, str) or value.strip().lstrip("-").isdigit():
        return value
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"must be {INSTANT_HELP}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


# A query instant: epoch ms or ISO-8601, validated to ms since the epoch (the bounds apply to the number).
Instant = Annotated[
    int,
    BeforeValidator(_epoch_ms),
    Field(ge=0, le=INT64_MAX),
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer", "format": "int64"}, {"type": "string", "format": "date-time"}],
            "minimum": 0,
            "maximum": INT64_MAX,
        }
    ),
]
