"""The audit trail's response models; ``Event`` is derived from ``EVENT_FIELDS`` (the job columns as one ``job``)."""

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


def _group_key(field: EventField) -> str:
    """A grouped field's key inside its group's object: ``job_id`` is ``job.id``."""
    assert field.api_group is not None
    return field.name.removeprefix(f"{field.api_group}_")


def _group_model(group: str) -> type[BaseModel]:
    members = [field for field in EVENT_FIELDS if field.api_group == group]
    return create_model(
        f"Event{group.capitalize()}", **{_group_key(field): (_annotation(field), ...) for field in members}
    )


_GROUPS: dict[str, type[BaseModel]] = {
    group: _group_model(group) for group in dict.fromkeys(f.api_group for f in EVENT_FIELDS if f.api_group)
}


def _definitions() -> dict[str, Any]:
    """The model's fields in ``EVENT_FIELDS`` order, each group as one nullable object where its first field is."""
    found: dict[str, Any] = {}
    for field in EVENT_FIELDS:
        if field.api_group is None:
            found[field.api_name] = (_annotation(field), ...)
        elif field.api_group not in found:
            found[field.api_group] = (_GROUPS[field.api_group] | None, ...)
    return found


# Every field is required, null included: a client sees the whole event. No length limits in the schema:
# the service writes these values, the caller never sends them.
Event: type[BaseModel] = create_model("Event", **_definitions())


def event_view(stored: StoredEvent) -> BaseModel:
    values: dict[str, Any] = {}
    groups: dict[str, dict[str, Any]] = {}
    for field in EVENT_FIELDS:
        if field.api_group is None:
            values[field.api_name] = getattr(stored, field.name)
        else:
            groups.setdefault(field.api_group, {})[_group_key(field)] = getattr(stored, field.name)
    for group, members in groups.items():  # null when the event names nothing of the group (no job)
        values[group] = None if all(value is None for value in members.values()) else _GROUPS[group](**members)
    return Event(**values)


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
