"""Any text a caller sends, made storable in every audit database: escaped, then cut to its column.

PostgreSQL refuses a NUL byte in text and both drivers refuse a lone surrogate (how Python carries bytes
that were not valid UTF-8), so one odd user name would otherwise cost the request its audit row, or the
request itself. Control characters are escaped too, so an audit line cannot fake a second one.

Scheme: every C0/C1 control character, DEL, lone surrogate and line/paragraph separator becomes its
Python backslash escape (``\\x00``, ``\\x1b``, ``\\x85``, ``\\udcff``, ``\\u2028``); every other character,
backslash included, is kept, so ordinary values are stored unchanged. A value still longer than its
column is cut to the column's length with its last character replaced by ``…`` (U+2026).
"""

from __future__ import annotations

import re
from typing import Any

TRUNCATION_MARKER = "\u2026"
DETAIL_TEXT_LIMIT = 1100
"""The longest string (key or value) kept inside an event's details: as long as a principal."""

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(value: str, limit: int) -> str:
    """``value`` escaped, then cut to at most ``limit`` characters with the truncation marker."""
    # Printable ASCII (almost every value) has nothing to escape: two checks in C, where the search costs more.
    escaped = value if value.isascii() and value.isprintable() else _UNSAFE.sub(_escape, value)
    if len(escaped) <= limit:
        return escaped
    return escaped[: limit - 1] + TRUNCATION_MARKER


def safe_details(value: Any) -> Any:
    """Details made storable as JSON: strings (keys too) escaped and cut, containers walked,
    numbers, booleans and None kept, anything else stored as its escaped text."""
    if isinstance(value, str):
        return safe_text(value, DETAIL_TEXT_LIMIT)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, dict):
        return {safe_text(str(key), DETAIL_TEXT_LIMIT): safe_details(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [safe_details(item) for item in value]
    return safe_text(str(value), DETAIL_TEXT_LIMIT)
