"""``EVENT_FIELDS`` is the one shape of a stored audit event: ``StoredEvent`` has exactly its fields."""

from __future__ import annotations

import dataclasses
import re
import typing
from typing import Any

from app.domain.audit import EVENT_FIELDS, JOB_COLUMNS, Action, AuditEvent, FieldType, Outcome, StoredEvent
from app.domain.token_job import JOB_KEYS, MAX_FRAMEWORK_LENGTH, MAX_JOB_TEXT_LENGTH, TokenJob, job_or_none

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


def test_the_job_columns_are_the_keys_a_create_may_send_with_their_lengths() -> None:
    assert JOB_COLUMNS == tuple(f"job_{key}" for key in JOB_KEYS)
    lengths = {field.name: field.max_length for field in EVENT_FIELDS if field.api_group == "job"}
    assert lengths == {
        "job_framework": MAX_FRAMEWORK_LENGTH,
        "job_id": MAX_JOB_TEXT_LENGTH,
        "job_name": MAX_JOB_TEXT_LENGTH,
        "job_user": MAX_JOB_TEXT_LENGTH,
    }
    assert all(field.nullable for field in EVENT_FIELDS if field.api_group == "job")


def test_an_empty_job_is_no_job() -> None:
    assert job_or_none(None) is None
    assert job_or_none(TokenJob()) is None
    assert job_or_none(TokenJob(user="joe")) == TokenJob(user="joe")


def test_an_ended_event_keeps_every_field_but_its_outcome_error_code_and_added_details() -> None:
    """``AuditEvent.ended`` names each field itself (``dataclasses.replace`` was too slow for a sweep's 100k events):
    a field added later must be carried over there too."""
    event = AuditEvent(
        Action.TOKEN_CREATE,
        Outcome.PENDING,
        principal="User:alice",
        owner="User:bob",
        token_requester="User:carol",
        token_id="T1",
        error_code=7,
        details={"kept": 1},
        job=TokenJob(framework="spark", id="j1", name="n", user="u"),
    )

    ended = event.ended(Outcome.FAILED, error_code=58, added=True)

    expected = dataclasses.replace(event, outcome=Outcome.FAILED, error_code=58, details={"kept": 1, "added": True})
    assert ended == expected
    assert event.details == {"kept": 1}  # the original's details are not shared
    assert ended.details is not event.details
