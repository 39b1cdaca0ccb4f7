"""The log line formats of ``kts serve`` (JSON, one object per line) and ``kts dev`` (text)."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator

import pytest

from app.cli.server.logging_config import JsonFormatter, configure_logging
from app.domain.audit import RequestContext
from app.service.audit import request_context


def record(
    message: str, *args: object, name: str = "app.test", level: int = logging.INFO, exc: bool = False
) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, message, args, sys.exc_info() if exc else None)


def test_a_line_has_timestamp_level_logger_and_message() -> None:
    line = JsonFormatter().format(record("loaded %d tokens", 3))
    entry = json.loads(line)
    assert entry["level"] == "INFO"
    assert entry["logger"] == "app.test"
    assert entry["message"] == "loaded 3 tokens"
    assert entry["timestamp"].endswith("+00:00")
    assert "requestId" not in entry


def test_a_line_written_while_serving_a_request_carries_its_id() -> None:
    reset = request_context.set(RequestContext("req-42", "192.0.2.7"))
    try:
        line = JsonFormatter().format(record("hello"))
    finally:
        request_context.reset(reset)
    assert json.loads(line)["requestId"] == "req-42"


def test_an_access_log_line_has_its_parts_as_fields() -> None:
    access = record('%s - "%s %s HTTP/%s" %d', "192.0.2.7:5000", "GET", "/v1/tokens?owner=User:a", "1.1", 200)
    access.name = "uvicorn.access"
    entry = json.loads(JsonFormatter().format(access))
    assert entry["message"] == '192.0.2.7:5000 - "GET /v1/tokens?owner=User:a HTTP/1.1" 200'
    assert (entry["client"], entry["method"], entry["path"], entry["status"]) == (
        "192.0.2.7:5000",
        "GET",
        "/v1/tokens?owner=User:a",
        200,
    )


def test_an_exception_stays_on_one_line() -> None:
    try:
        raise ValueError("boom\nsecond line")
    except ValueError:
        line = JsonFormatter().format(record("failed", level=logging.ERROR, exc=True))
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["level"] == "ERROR"
    assert "ValueError: boom" in entry["exception"]


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """configure_logging changes process-wide state; put it back for the other tests."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    uvicorn_saved = {
        name: (list(logging.getLogger(name).handlers), logging.getLogger(name).propagate)
        for name in ("uvicorn", "uvicorn.error", "uvicorn.access")
    }
    kazoo_level = logging.getLogger("kazoo").level
    yield
    logging.captureWarnings(False)
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])
    for name, (handlers, propagate) in uvicorn_saved.items():
        logging.getLogger(name).handlers[:] = handlers
        logging.getLogger(name).propagate = propagate
    logging.getLogger("kazoo").setLevel(kazoo_level)


@pytest.mark.usefixtures("restored_logging")
def test_json_logging_sends_every_logger_through_one_json_handler() -> None:
    stream = io.StringIO()
    logging.getLogger("uvicorn.access").addHandler(logging.StreamHandler(io.StringIO()))  # as uvicorn's own config
    configure_logging("json", stream=stream)
    logging.getLogger("uvicorn.error").info("Uvicorn running")
    logging.getLogger("app.test").warning("careful")
    logging.getLogger("kazoo.client").info("kazoo chatter stays out")
    lines = stream.getvalue().splitlines()
    entries = [json.loads(line) for line in lines]
    assert [(entry["logger"], entry["message"]) for entry in entries] == [
        ("uvicorn.error", "Uvicorn running"),
        ("app.test", "careful"),
    ]
    assert not logging.getLogger("uvicorn.access").handlers


@pytest.mark.usefixtures("restored_logging")
def test_text_logging_is_plain_lines() -> None:
    stream = io.StringIO()
    configure_logging("text", stream=stream)
    logging.getLogger("app.test").info("loaded %d tokens", 3)
    line = stream.getvalue().strip()
    assert line.endswith("INFO app.test: loaded 3 tokens")
    with pytest.raises(json.JSONDecodeError):
        json.loads(line)
