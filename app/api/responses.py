"""OpenAPI documentation of error responses: every endpoint lists its statuses with the error envelope."""

from __future__ import annotations

from typing import Any

from app.api.schemas.common import ErrorBody

_DESCRIPTIONS = {
    400: "Invalid principal type (Kafka code 67)",
    401: "No, malformed or wrong credentials; or an unknown, wrong or expired token",
    403: "Not allowed (Kafka codes 31, 63, 64, 65)",
    404: "Not found, or not visible to the caller (Kafka code 62)",
    409: "Changed concurrently; retry",
    410: "Token expired (Kafka code 66)",
    413: "Request body too large",
    422: "The request does not validate",
    503: "ZooKeeper or the audit database unreachable; retry after Retry-After seconds",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {status: {"model": ErrorBody, "description": _DESCRIPTIONS[status]} for status in statuses}
