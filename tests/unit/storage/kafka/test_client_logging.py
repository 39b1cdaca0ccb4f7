"""kafka-python's lines at kts's levels: the format strings matched are still the installed library's, each
demoted line falls below the logger's level, and anything else keeps its level."""

from __future__ import annotations

import importlib
import inspect
import logging

import pytest

from app.storage.kafka import client_logging
from app.storage.kafka.client_logging import LEVELS, KafkaClientLevels, mark_login_check


@pytest.mark.parametrize(("logger", "start"), sorted(LEVELS))
def test_each_matched_line_is_in_the_installed_library(logger: str, start: str) -> None:
    source = inspect.getsource(importlib.import_module(logger))
    assert f"'{start}" in source or f'"{start}' in source or f"f'{start}" in source, (
        f"kafka-python's {logger} no longer logs a line starting {start!r}: update app/storage/kafka/client_logging.py"
    )


def record(name: str, level: int, msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, args, None)


class Connection:
    pass


class Transport:
    def __init__(self, protocol: object) -> None:
        self._protocol = protocol


def test_a_lost_connection_is_one_info_line_and_the_transports_lines_drop() -> None:
    levels = KafkaClientLevels()
    logging.getLogger("kafka.net").setLevel(logging.INFO)
    try:
        lost = record("kafka.net.connection", logging.ERROR, "%s: Connection lost: %s", Connection(), "EOF")
        assert levels.filter(lost) and lost.levelname == "INFO"
        abort = record("kafka.net.transport", logging.ERROR, "%s: Abort (%s)", Transport(Connection()), "EOF")
        assert not levels.filter(abort)
        crashed = record("kafka.net.selector", logging.ERROR, "IO loop crashed (client_id=%s)", "kts")
        assert levels.filter(crashed) and crashed.levelname == "ERROR"
    finally:
        logging.getLogger("kafka.net").setLevel(logging.NOTSET)


def test_the_end_of_a_password_check_drops_below_info() -> None:
    levels = KafkaClientLevels()
    check = Connection()
    mark_login_check(check)
    logging.getLogger("kafka.net").setLevel(logging.INFO)
    try:
        assert not levels.filter(record("kafka.net.connection", logging.ERROR, "%s: Connection lost: %s", check, "x"))
        assert not levels.filter(record("kafka.net.connection", logging.INFO, "%s: Connection closed", check))
        assert not levels.filter(record("kafka.net.transport", logging.INFO, "%s: Closing transport", Transport(check)))
        other = record("kafka.net.connection", logging.INFO, "%s: Connection closed", Connection())
        assert levels.filter(other) and other.levelname == "INFO"
    finally:
        logging.getLogger("kafka.net").setLevel(logging.NOTSET)


def test_install_is_idempotent() -> None:
    client_logging.install()
    client_logging.install()
    for name in client_logging.LOGGERS:
        assert sum(isinstance(f, KafkaClientLevels) for f in logging.getLogger(name).filters) == 1
