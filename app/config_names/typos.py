"""Misspelled kts keys in a properties file that is also a broker's ``server.properties``.

A broker file carries many keys kts does not use, so an unknown key alone proves nothing. A key is taken for a
misspelling only when it is neither kts's nor Kafka's (``kafka_names.txt``, or any ``listener.name.<name>.``
override) and lies within ``MAX_EDITS`` single-character edits (Levenshtein distance) of a kts key. An edit
count, not difflib's similarity ratio: the ratio is relative to length, so long Kafka names that merely share a
prefix with a kts key (``zookeeper.ssl.keystore.type`` and ``zookeeper.ssl.keyfile``) score as close.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from importlib.resources import files

MAX_EDITS = 2
_LISTENER_OVERRIDE = "listener.name."


@cache
def kafka_names() -> frozenset[str]:
    text = files("app.config_names").joinpath("kafka_names.txt").read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def is_kafka_key(key: str) -> bool:
    return key in kafka_names() or key.startswith(_LISTENER_OVERRIDE)


def edit_distance(first: str, second: str, bound: int = MAX_EDITS) -> int:
    """Levenshtein distance, or ``bound + 1`` as soon as it is known to exceed ``bound``."""
    if abs(len(first) - len(second)) > bound:
        return bound + 1
    previous = list(range(len(second) + 1))
    for row, char in enumerate(first, start=1):
        current = [row]
        for column, other in enumerate(second, start=1):
            current.append(min(previous[column] + 1, current[column - 1] + 1, previous[column - 1] + (char != other)))
        if min(current) > bound:
            return bound + 1
        previous = current
    return previous[-1]


def likely_intended(key: str, own_keys: Iterable[str]) -> str | None:
    """The kts key ``key`` is most likely a misspelling of, or None (it is known, Kafka's, or far from all)."""
    own = set(own_keys)
    if key in own or is_kafka_key(key):
        return None
    scored = sorted((edit_distance(key, candidate), candidate) for candidate in own)
    distance, candidate = scored[0] if scored else (MAX_EDITS + 1, "")
    return candidate if distance <= MAX_EDITS else None
