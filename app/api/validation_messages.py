"""One human sentence per validation failure: which field, and what it allows.

pydantic's own messages name regular expressions and Python types ("String should match pattern
'^[A-Za-z0-9+/]{86}==$'"); a caller needs "The hmac field must be the 88-character standard base64 HMAC of a
token." The sentence never repeats the submitted value, which may be a password or an HMAC.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.api.schemas.common import HMAC_PATTERN, PRINTABLE_PATTERN
from app.api.schemas.users import USER_NAME_PATTERN
from app.domain.token_secret import TOKEN_ID_PATTERN

# What each pattern the schemas use allows, in words.
_PATTERNS = {
    HMAC_PATTERN: "the 88-character standard base64 HMAC of a token (letters, digits, + and /, ending in ==)",
    TOKEN_ID_PATTERN: "a token id: 1 to 64 letters, digits, '-' or '_'",
    PRINTABLE_PATTERN: "text without control characters",
    USER_NAME_PATTERN: "a user name without control characters",
}
_TYPES = {
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "a string",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "dict_type": "a JSON object",
    "model_type": "a JSON object",
    "model_attributes_type": "a JSON object",
}
_LOCATIONS = {"body": "field", "query": "query parameter", "path": "path parameter", "header": "header"}


def field_name(loc: Sequence[Any]) -> str:
    """``("body", "renewers", 0)`` -> ``renewers[0]``; the leading location is said separately."""
    parts = [part for part in loc[1:]] if loc and loc[0] in _LOCATIONS else list(loc)
    name = ""
    for part in parts:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name


def subject(loc: Sequence[Any]) -> str:
    kind = _LOCATIONS.get(str(loc[0]), "field") if loc else "field"
    name = field_name(loc)
    if not name:
        return "The request body"
    return f"The {name} {kind}"


def sentence(error: Mapping[str, Any]) -> str:
    """The one sentence for one pydantic error (its ``type``, ``loc`` and ``ctx``)."""
    kind = str(error.get("type", ""))
    loc = tuple(error.get("loc", ()))
    ctx: Mapping[str, Any] = error.get("ctx") or {}
    who = subject(loc)
    if kind == "json_invalid":
        return "The request body is not valid JSON."
    if kind == "missing":
        return f"{who} is required."
    if kind == "extra_forbidden":
        return f"{who} is not one this endpoint accepts; remove it (names are case-sensitive)."
    if kind in _TYPES:
        return f"{who} must be {_TYPES[kind]}."
    if kind == "string_pattern_mismatch":
        allowed = _PATTERNS.get(str(ctx.get("pattern")), "text in the documented format")
        return f"{who} must be {allowed}."
    if kind in ("enum", "literal_error"):
        return f"{who} must be one of {ctx.get('expected', 'the documented values')}."
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        words = {
            "greater_than_equal": "at least",
            "greater_than": "more than",
            "less_than_equal": "at most",
            "less_than": "less than",
        }[kind]
        bound = next(iter(ctx.values()), "")
        return f"{who} must be {words} {bound}."
    if kind in ("string_too_short", "string_too_long"):
        return _length(who, kind, ctx, "character")
    if kind in ("too_short", "too_long"):
        return _length(who, kind, ctx, "item")
    if kind == "value_error":
        reason = str(ctx.get("error", "")).strip() or "is not valid"
        return f"{who} is not valid: {reason.rstrip('.')}."
    return f"{who} is not valid."


def _length(who: str, kind: str, ctx: Mapping[str, Any], unit: str) -> str:
    if kind.endswith("short"):
        count = ctx.get("min_length", 1)
        return f"{who} must have at least {count} {unit}{'' if count == 1 else 's'}."
    count = ctx.get("max_length", 0)
    return f"{who} must have at most {count} {unit}{'' if count == 1 else 's'}."
