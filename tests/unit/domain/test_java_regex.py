"""compile_java_regex and java_replace_all behave as Java's regex engine does.

Every expected value was produced by running the same input through Kafka's
SslPrincipalMapper on JDK 17 (a rule applies when its pattern matches the whole
name), so these tables are what java.util.regex does.
"""

from __future__ import annotations

import pytest

from app.domain.java_regex import InvalidJavaRegex, UnsupportedJavaRegex, compile_java_regex, java_replace_all

# Java regex semantics that differ from Python's re: (pattern, text, does it match the whole text?)
JAVA_REGEX = [
    (".*", "a\rb", False),  # "." excludes every Java line terminator, not just \n
    (".*", "a\u2028b", False),
    ("(?s).*", "a\rb", True),
    ("(?d).*", "a\rb", True),
    ("a$\\n", "a\n", True),  # $ before the final line terminator
    ("a$\\r\\n", "a\r\n", True),
    ("a$\\u2028", "a\u2028", True),
    ("\\w+", "é", False),  # \w, \d, \s, \b are ASCII-only
    ("\\W", "é", True),
    ("(?i)É", "é", False),  # case-insensitivity is ASCII-only without (?u)
    ("(?i)[a-c]+", "AbC", True),
    ("a(?i)b|c", "C", True),  # (?i) lasts to the end of the group, across |
    ("(a(?i)b)|c", "C", False),
    ("(?i:a)b", "AB", False),
    ("\\Q.*\\E", ".*", True),
    ("\\Q.*\\E", "ab", False),
    ("[\\Qa\\E-c]", "b", True),
    ("\\p{Alpha}+\\P{Alpha}", "ab1", True),
    ("[\\p{Upper}\\d]+", "A1", True),
    ("\\x41\\u0042\\0103\\x{44}\\cA", "ABCD\x01", True),
    ("\\h\\v", "\t\n", True),
    ("(a)\\1\\11", "aaa1", True),  # \11 is group 1 then "1" when there is no group 11
    ("(?<g>x)\\k<g>", "xx", True),
    ("a\\Z\\n", "a\n", True),
    ("a\\z\\n", "a\n", False),
    ("\\B", "", True),
    ("{2}x", "x", True),  # Java quantifies an empty atom here
    ("[]a]+", "]a", True),
    ("\\bab\\b", "ab", True),
]

# Valid Java regexes with no faithful Python form: rejected rather than guessed.
UNSUPPORTED_PATTERNS = [
    "[a[b]]",
    "[a&&b]",
    "\\p{L}",
    "\\pL",
    "\\G",
    "\\R",
    "\\X",
    "\\b{g}",
    "(?u)a",
    "(?x)a",
    "(?<=a|bc)x",
]

# Rejected by Java's Pattern.compile as well.
INVALID_PATTERNS = ["(", "a)", "a{x}", "a{,2}", "*a", "a**", "[a", "\\y", "\\0", "[b-a]", "\\k<n>", "(?<=\\1)(a)"]


@pytest.mark.parametrize(("pattern", "text", "matches"), JAVA_REGEX)
def test_patterns_have_java_semantics(pattern: str, text: str, matches: bool) -> None:
    regex = compile_java_regex(pattern)
    assert (regex.fullmatch(text) is not None) is matches
    if matches:
        assert "matched" in java_replace_all(regex, text, "matched")  # replaceAll may add a second "matched"


@pytest.mark.parametrize("pattern", UNSUPPORTED_PATTERNS)
def test_java_constructs_without_python_equivalent_are_rejected(pattern: str) -> None:
    with pytest.raises(UnsupportedJavaRegex, match=r"^Unsupported Java regular expression"):
        compile_java_regex(pattern)


@pytest.mark.parametrize("pattern", INVALID_PATTERNS)
def test_patterns_java_rejects_are_rejected(pattern: str) -> None:
    with pytest.raises(InvalidJavaRegex, match=r"^Invalid Java regular expression") as error:
        compile_java_regex(pattern)
    assert "\n" not in str(error.value)


def test_result_that_java_would_cut_in_half_is_refused() -> None:
    # After an empty match Java steps one UTF-16 unit, into the emoji's surrogate pair.
    regex = compile_java_regex("[^,]*?")
    with pytest.raises(ValueError, match="half of a character"):
        java_replace_all(regex, "a\U0001f600", "x")
    # An empty replacement glues the halves back together, as in Java.
    assert java_replace_all(regex, "a\U0001f600", "") == "a\U0001f600"
