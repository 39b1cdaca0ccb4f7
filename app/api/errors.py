"""The one table from errors to HTTP responses, and the handlers that apply it.

Bodies follow docs/api.md#errors: ``{"error": NAME, "message": sentence}`` plus ``"code"`` for Kafka errors and
``"details"`` for validation failures. Validation details never echo the submitted values, which may be
passwords or HMACs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.api.error_body import RETRY_AFTER_SECONDS, error_body
from app.api.validation_messages import sentence
from app.domain import errors

log = logging.getLogger(__name__)

WWW_AUTHENTICATE = 'Basic realm="kts", Bearer realm="kts"'
# The challenge for a request a page's script sent (fetch or XMLHttpRequest): browsers open their own password
# prompt on a Basic challenge even then, which hides the answer from the script (Swagger UI's Execute never
# completes). A scheme no browser handles itself leaves the 401 to the script; docs/api.md#authentication.
SCRIPT_WWW_AUTHENTICATE = 'xBasic realm="kts", Bearer realm="kts"'


def sent_by_a_script(headers: Mapping[str, str]) -> bool:
    """Did a page's script send this (fetch or XMLHttpRequest), rather than a navigation or a non-browser client?
    Browsers mark fetch and XHR requests ``Sec-Fetch-Dest: empty``; older scripts send ``X-Requested-With``."""
    return (
        headers.get("sec-fetch-dest", "").lower() == "empty"
        or headers.get("x-requested-with", "").lower() == "xmlhttprequest"
    )


_STATUS_BY_KAFKA_CODE = {
    errors.ClusterAuthorizationFailed.code: 403,
    errors.TokenAuthDisabled.code: 503,
    errors.TokenNotFound.code: 404,
    errors.TokenOwnerMismatch.code: 403,
    errors.TokenRequestNotAllowed.code: 403,
    errors.TokenAuthorizationFailed.code: 403,
    errors.TokenExpired.code: 410,
    errors.InvalidPrincipalType.code: 400,
}

_STATUS_BY_TYPE: tuple[tuple[type[errors.KtsError], int], ...] = (
    (errors.InvalidInput, 422),
    (errors.NotAuthenticated, 401),
    (errors.CredentialNotFound, 404),
    (errors.ConcurrentModification, 409),
    (errors.TooManyAttempts, 429),
    (errors.CapacityExhausted, 503),
    (errors.ClusterMigrating, 503),
    (errors.TokenQuotaExceeded, 429),
    (errors.TokenWriteShareExceeded, 429),
    (errors.StoreUnavailable, 503),
)

_HTTP_NAMES = {
    400: "BAD_REQUEST",
    401: "AUTHENTICATION_FAILED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
}


def status_for(exc: errors.KtsError) -> int:
    if isinstance(exc, errors.KafkaError):
        return _STATUS_BY_KAFKA_CODE.get(exc.code, 400)
    for error_type, status in _STATUS_BY_TYPE:
        if isinstance(exc, error_type):
            return status
    return 500


def kts_error_response(exc: errors.KtsError, *, from_script: bool = False) -> JSONResponse:
    """``from_script``: the request came from a page's script (``sent_by_a_script``), which changes the 401
    challenge only."""
    status = status_for(exc)
    body = error_body(exc.name, exc.message)
    headers: dict[str, str] = {}
    if isinstance(exc, errors.KafkaError):
        body["code"] = exc.code
    if isinstance(exc, errors.InvalidInput):
        body = error_body("INVALID_REQUEST", exc.message, details=[])
    if status == 401:
        headers["WWW-Authenticate"] = SCRIPT_WWW_AUTHENTICATE if from_script else WWW_AUTHENTICATE
    if isinstance(exc, errors.TooManyAttempts):
        headers["Retry-After"] = str(exc.retry_after_s)
    if isinstance(exc, errors.CapacityExhausted | errors.TokenWriteShareExceeded | errors.ClusterMigrating):
        headers["Retry-After"] = str(exc.retry_after_s)
    elif status == 503:
        headers["Retry-After"] = RETRY_AFTER_SECONDS
        log.warning("answering 503: %s", exc.message)
    return JSONResponse(body, status_code=status, headers=headers)


def _validation_details(exc: RequestValidationError) -> list[dict[str, Any]]:
    return [
        {
            "loc": [str(part) for part in error.get("loc", ())],
            "msg": sentence(error),
            "type": error.get("type"),
        }
        for error in exc.errors()
    ]


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(errors.KtsError)
    async def _kts(request: Request, exc: errors.KtsError) -> JSONResponse:
        return kts_error_response(exc, from_script=sent_by_a_script(request.headers))

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        details = _validation_details(exc)
        message = details[0]["msg"] if details else "The request does not validate."
        return JSONResponse(error_body("INVALID_REQUEST", message, details=details), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:  # FastAPI's one 400: a JSON body it cannot decode (not UTF-8), i.e. bad input
            return JSONResponse(
                error_body("INVALID_REQUEST", "The request body is not valid JSON.", details=[]), status_code=422
            )
        name = _HTTP_NAMES.get(exc.status_code, "HTTP_ERROR")
        message = exc.detail if isinstance(exc.detail, str) else name.replace("_", " ").capitalize()
        return JSONResponse(error_body(name, message), status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return JSONResponse(
            error_body("INTERNAL_ERROR", "The service failed unexpectedly; the error was logged."),
            status_code=500,
        )
