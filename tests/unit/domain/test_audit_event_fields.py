"""``EVENT_FIELDS`` is the one shape of a stored audit event: ``StoredEvent`` has exactly its fields."""

from __future__ import annotations

import dataclasses
import re
import typing
from typing import Any

from app.domain.audit import EVENT_FIELDS, FieldType, StoredEvent

_PYTHON_TYPES: dict[FieldType, Any] = {
    FieldType.SERIAL: int,
    FieldType.INT64: int,
    FieldType.INT32: int,
    FieldType.STRING: str,
    FieldType.JSON_OBJECT: dict[str, Any],
}


def test_stored_event_has_the_fields_in_order_with_their_types() -> None:
    hints = typing.get_type_hints(StoredEvent)
    assert [field.name for field in dataclasses.fields(StoredEvent)] == [field.name for field in EVENT_FIELDS]
    for field in EVENT_FIELDS:
        expected = _PYTHON_TYPES[field.type]
        assert hints[field.name] == (expected | None if field.nullable else expected), field.name


def test_names_are_snake_case_and_api_names_their_camel_case() -> None:
    for field in EVENT_FIELDS:
        assert re.fullmatch(r"[a-z]+(_[a-z]+)*", field.name)
        head, *rest = field.name.split("_")
        assert field.api_name == head + "".join(word.capitalize() for word in rest)


def test_only_strings_have_a_length_and_every_string_has_one() -> None:
    for field in EVENT_FIELDS:
        assert (field.max_length is not None) == (field.type is FieldType.STRING), field.name
    assert [field.name for field in EVENT_FIELDS if field.type is FieldType.SERIAL] == ["id"]
