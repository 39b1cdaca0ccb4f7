"""``/v1/audit``: the audit trail, newest first, with filters and a cursor."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel

from app.api.authenticated_route import AuthenticatedRoute
from app.api.deps import Audit, CurrentCaller
from app.api.responses import error_responses
from app.api.schemas.audit import INSTANT_HELP, Event, Instant, event_view
from app.api.schemas.common import INT64_MAX, PRINTABLE_PATTERN
from app.domain.audit import Action, EventQuery, Outcome
from app.domain.errors import InvalidInput
from app.domain.principal import MAX_PRINCIPAL_LENGTH
from app.domain.token_job import MAX_FRAMEWORK_LENGTH, MAX_JOB_TEXT_LENGTH, TokenJob, job_or_none

router = APIRouter(prefix="/v1/audit", tags=["audit"], route_class=AuthenticatedRoute)
MAX_PAGE = 1000
MAX_CURSOR_LENGTH = 19  # an event id: a positive signed 64-bit integer in ASCII digits
_JOB_HELP = "the token.create events whose job (as its request named it) has this value, exactly"
_CURSOR = re.compile(rf"[0-9]{{1,{MAX_CURSOR_LENGTH}}}")


class EventPage(BaseModel):
    events: list[Event]  # type: ignore[valid-type]  # a model built from EVENT_FIELDS
    nextCursor: str | None


@router.get("", response_model=EventPage, responses=error_responses(401, 403, 422, 503))
def list_events(
    caller: CurrentCaller,
    audit: Audit,
    tokenId: Annotated[str | None, Query(max_length=64, pattern=PRINTABLE_PATTERN)] = None,
    principal: Annotated[str | None, Query(max_length=MAX_PRINCIPAL_LENGTH, pattern=PRINTABLE_PATTERN)] = None,
    action: Action | None = None,
    outcome: Outcome | None = None,
    jobFramework: Annotated[
        str | None, Query(max_length=MAX_FRAMEWORK_LENGTH, pattern=PRINTABLE_PATTERN, description=_JOB_HELP)
    ] = None,
    jobId: Annotated[
        str | None, Query(max_length=MAX_JOB_TEXT_LENGTH, pattern=PRINTABLE_PATTERN, description=_JOB_HELP)
    ] = None,
    jobName: Annotated[
        str | None, Query(max_length=MAX_JOB_TEXT_LENGTH, pattern=PRINTABLE_PATTERN, description=_JOB_HELP)
    ] = None,
    jobUser: Annotated[
        str | None, Query(max_length=MAX_JOB_TEXT_LENGTH, pattern=PRINTABLE_PATTERN, description=_JOB_HELP)
    ] = None,
    since: Annotated[Instant | None, Query(description=f"inclusive: {INSTANT_HELP}")] = None,
    until: Annotated[Instant | None, Query(description=f"exclusive: {INSTANT_HELP}")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    cursor: Annotated[str | None, Query(max_length=MAX_CURSOR_LENGTH)] = None,
) -> EventPage:
    if cursor is not None and not (_CURSOR.fullmatch(cursor) and int(cursor) <= INT64_MAX):
        raise InvalidInput("The cursor is not one this service returned.")
    query = EventQuery(
        token_id=tokenId,
        principal=principal,
        action=action.value if action else None,
        outcome=outcome.value if outcome else None,
        job=job_or_none(TokenJob(framework=jobFramework, id=jobId, name=jobName, user=jobUser)),
        since=since,
        until=until,
        limit=limit + 1,
        before_id=int(cursor) if cursor else None,
    )
    rows = audit.events(caller, query)
    page = rows[:limit]
    return EventPage(
        events=[event_view(row) for row in page],
        nextCursor=str(page[-1].id) if len(rows) > limit else None,
    )
