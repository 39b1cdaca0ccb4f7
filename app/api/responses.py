"""OpenAPI documentation of error responses: every endpoint lists its statuses with the error envelope."""

from __future__ import annotations

from typing import Any

from app.api.limits import MAX_BODY_BYTES, MAX_HEADER_BYTES
from app.api.schemas.common import ErrorBody

_DESCRIPTIONS = {
    400: "Invalid principal type (Kafka code 67)",
    401: "No, malformed or wrong credentials; or an unknown, wrong or expired token",
    403: "Not allowed (Kafka codes 31, 63, 64, 65)",
    404: "Not found, or not visible to the caller (Kafka code 62)",
    409: "Changed concurrently; retry",
    410: "Token expired (Kafka code 66)",
    413: f"Request body larger than {MAX_BODY_BYTES} bytes",
    415: "The request body is not sent as Content-Type: application/json",
    422: "The request does not validate",
    431: f"The request line and header fields exceed {MAX_HEADER_BYTES} bytes (a long query, such as many owner "
    "filters, or large headers)",
    429: "Too many failed logins or token verifies from this address or for this principal; retry after "
    "Retry-After seconds. On a token create, also a per-user token quota reached (TOKEN_QUOTA_EXCEEDED); on a "
    "token create, renew or expire that keeps the token, also the caller's share of the token lists used up "
    "(TOKEN_WRITE_SHARE_EXCEEDED, with Retry-After)",
    503: "The cluster or the audit database unreachable; retry after Retry-After seconds",
}


_RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before trying again", "schema": {"type": "integer"}}}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """Wherever credentials are checked (401) the brute-force defence may answer 429 too, and the request's
    query and headers (credentials included) may be too long (431); wherever a body is read (413) it must be
    JSON (415)."""
    if 401 in statuses:
        statuses = tuple(sorted({*statuses, 429, 431}))
    if 413 in statuses:
        statuses = tuple(sorted({*statuses, 415}))
    responses: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        responses[status] = {"model": ErrorBody, "description": _DESCRIPTIONS[status]}
        if status == 429:
            responses[status]["headers"] = _RETRY_AFTER
    return responses
