"""The audit's escaping scheme: which characters are escaped and how, where values are cut, and that
whatever comes in leaves as text every database driver encodes."""

from __future__ import annotations

import json

import pytest

from app.storage.audit.safe_text import DETAIL_TEXT_LIMIT, safe_details, safe_text


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        ("\x00", "\\x00"),
        ("\n\r\t", "\\x0a\\x0d\\x09"),
        ("\x1b[2J", "\\x1b[2J"),
        ("\x7f\x85\x9f", "\\x7f\\x85\\x9f"),
        ("\ud800\udfff", "\\ud800\\udfff"),
        (b"caf\xe9".decode("utf-8", "surrogateescape"), "caf\\udce9"),
        ("\u2028\u2029", "\\u2028\\u2029"),
        ("\\x00 stays", "\\x00 stays"),
        ("User:alice\x7f", "User:alice\\x7f"),  # all ASCII, one character not printable
        ("User:a b~!", "User:a b~!"),  # printable ASCII, kept as it is
        ("User:Ünïcode 例 \U0001f600 \u00a0", "User:Ünïcode 例 \U0001f600 \u00a0"),
    ],
)
def test_escaping(raw: str, stored: str) -> None:
    assert safe_text(raw, 100) == stored


def test_every_ascii_character_is_escaped_exactly_when_the_general_scheme_escapes_it() -> None:
    """Printable ASCII skips the search for characters to escape: the two ways must agree on every character."""
    for code in range(0x80):
        character = chr(code)
        expected = f"\\x{code:02x}" if code < 0x20 or code == 0x7F else character
        assert safe_text(character, 10) == expected
        assert safe_text(f"a{character}b", 10) == f"a{expected}b"


def test_every_code_point_becomes_encodable_text_without_controls() -> None:
    everything = "".join(map(chr, range(0x110000)))
    stored = safe_text(everything, 10**7)
    stored.encode("utf-8")  # no surrogate left
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in stored)


def test_truncation_counts_characters_and_ends_with_the_marker() -> None:
    assert safe_text("abcd", 4) == "abcd"
    assert safe_text("abcde", 4) == "abc\u2026"
    assert safe_text("\x00\x00", 6) == "\\x00\\\u2026"  # cut after escaping: the stored text fits its column


def test_details_are_walked_and_always_serialisable() -> None:
    long = "x" * (DETAIL_TEXT_LIMIT + 1)
    details = {"k\x00": ["\ud800", 1, 2.5, None, False, ("t",)], 3: {"n": long}, "obj": object}
    safe = safe_details(details)
    assert safe["k\\x00"] == ["\\ud800", 1, 2.5, None, False, ["t"]]
    assert safe["3"]["n"] == "x" * (DETAIL_TEXT_LIMIT - 1) + "\u2026"
    assert safe["obj"] == "<class 'object'>"
    json.dumps(safe, sort_keys=True, ensure_ascii=False).encode("utf-8")
