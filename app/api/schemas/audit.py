"""The audit trail's response models; ``Event`` is derived from ``EVENT_FIELDS``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, create_model

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
