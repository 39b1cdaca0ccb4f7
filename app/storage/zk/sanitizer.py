"""Kafka's ``Sanitizer``: principals and user names are URL-encoded as Java's ``URLEncoder`` does, with
``*`` as ``%2A`` and space as ``%20``, before they go into znode data or znode names."""

from __future__ import annotations

from urllib.parse import quote, unquote_plus


def sanitize(text: str) -> str:
    # quote() with no safe characters differs from Java's URLEncoder + Kafka's fix-ups only in leaving '~'.
    return quote(text, safe="").replace("~", "%7E")


def desanitize(text: str) -> str:
    return unquote_plus(text, errors="strict")
