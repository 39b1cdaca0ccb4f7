"""Logging of ``kts serve`` and ``kts dev``: one JSON object per line (``log.format=json``, for log
collectors; the default of ``kts serve``) or plain text (``log.format=text``, the default of ``kts dev``),
on standard output, uvicorn's access log included.

A JSON line holds ``timestamp`` (UTC, ISO 8601 with milliseconds), ``level``, ``logger`` and ``message``;
``requestId`` when it was written while serving a request (the id echoed in ``X-Request-ID`` and kept in
the audit trail); ``client``, ``method``, ``path`` and ``status`` on access-log lines; ``exception`` with
the traceback when there is one.

Nothing kts logs holds a password, an HMAC or the secret key. kazoo stays at WARNING: its debug logging
prints request payloads.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

from app.service.audit import request_context

LogFormat = Literal["json", "text"]
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
ACCESS_LOGGER = "uvicorn.access"
_UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", ACCESS_LOGGER)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        # Formatting happens on the logging thread, inside the request's context when there is one.
        request_id = request_context.get().request_id
        if request_id is not None:
            entry["requestId"] = request_id
        if record.name == ACCESS_LOGGER and isinstance(record.args, tuple) and len(record.args) == 5:
            # uvicorn's access record: (client, method, path with query, HTTP version, status)
            client, method, path, _version, status = record.args
            entry |= {"client": client, "method": method, "path": path, "status": status}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure_logging(log_format: LogFormat, *, level: int = logging.INFO, stream: TextIO | None = None) -> None:
    """Send every log record, uvicorn's and warnings included, to one handler on ``stream`` (stdout)."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stdout)
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for previous in list(root.handlers):
        root.removeHandler(previous)
    root.addHandler(handler)
    root.setLevel(level)
    for name in _UVICORN_LOGGERS:  # uvicorn logs through the root handler, not handlers of its own
        uvicorn_logger = logging.getLogger(name)
        for previous in list(uvicorn_logger.handlers):
            uvicorn_logger.removeHandler(previous)
        uvicorn_logger.propagate = True
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    logging.captureWarnings(True)
