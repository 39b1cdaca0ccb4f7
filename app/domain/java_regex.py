"""Java regular expressions in Python: ``java.util.regex`` patterns and ``String.replaceAll``.

Kafka's ``ssl.principal.mapping.rules`` are Java regular expressions, applied with
Java's ``String.replaceAll``.  Python's ``re`` accepts much of the same syntax but
reads it differently: ``.`` and ``$`` know only ``\\n`` as a line terminator,
``\\Z`` is Java's ``\\z``, ``\\w``/``\\d``/``\\s``/``\\b`` and ``(?i)`` cover Unicode,
``(?i)`` in mid-pattern is an error instead of applying to the rest of its group,
``\\Q...\\E``, ``\\h``, ``\\x{..}``, ``\\cX`` and ``\\p{Alpha}`` do not exist, and
replacements say ``\\1`` where Java says ``$1``.  Handing a rule's pattern to ``re``
as it is would quietly match other names than the broker does, so it is translated.

* :func:`compile_java_regex` compiles a Java pattern to a Python one with Java's
  semantics for ``.``, ``^``, ``$``, ``\\Z``, ``\\w``/``\\d``/``\\s``/``\\b`` (ASCII),
  inline flags ``(?imsd-imsd)``, ``\\Q...\\E``, octal/hex/unicode/control escapes,
  ``\\h``, ``\\v``, POSIX ``\\p{Alpha}``-style classes, named groups and back
  references.  What Java's ``Pattern.compile`` rejects raises
  :class:`InvalidJavaRegex`; valid Java that Python cannot express the same way
  (nested or intersected classes ``[a[b]]``, ``[a&&b]``; Unicode properties; ``\\G``,
  ``\\R``, ``\\X``, ``\\N{..}``, ``\\b{g}``; flags ``u``, ``U``, ``x``, ``c``;
  variable-width look-behind; forward references) raises
  :class:`UnsupportedJavaRegex` rather than silently matching differently.
* :func:`java_replace_all` is ``String.replaceAll`` for such a pattern: every match
  Java's ``find()`` loop sees is replaced, and ``$n``, ``${name}`` and ``\\x`` in the
  replacement expand as in Java.  A broken replacement raises ``ValueError`` where
  Java throws ``IllegalArgumentException`` or ``IndexOutOfBoundsException``.
* :func:`one_line` quotes a pattern (or text holding one) in an error message.

Known differences from Java:

* ``\\b``/``\\B`` follow JDK 19 and later (word characters are ``[A-Za-z0-9_]``).
  On JDK 17 and earlier ``\\b`` also treats non-ASCII letters and digits as word
  characters, so a pattern using ``\\b`` next to a non-ASCII character can differ there.
* Where Java's ``replaceAll`` would cut a character outside the Basic Multilingual
  Plane (an emoji, say) into two unpaired surrogates, Java's result is not valid
  Unicode; :func:`java_replace_all` raises ``ValueError`` instead of returning it.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Final

__all__ = ["InvalidJavaRegex", "UnsupportedJavaRegex", "compile_java_regex", "java_replace_all", "one_line"]


class InvalidJavaRegex(ValueError):
    """What Java's ``Pattern.compile`` rejects with a ``PatternSyntaxException``."""


class UnsupportedJavaRegex(ValueError):
    """A valid Java construct that Python's ``re`` cannot reproduce faithfully."""


def one_line(text: str) -> str:
    """``text`` with control characters shown as escapes, so that an error message stays on one line."""
    return "".join(
        ch if ch >= " " and ch not in "\x7f\x85\u2028\u2029" else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


# ---------------------------------------------------------------------------
# java.util.regex.Pattern -> re
# ---------------------------------------------------------------------------

_JAVA_DOT: Final = r"[^\n\r\x85\u2028\u2029]"
_JAVA_UNIX_DOT: Final = r"[^\n]"
_JAVA_ALL: Final = r"(?s:.)"
_JAVA_BEGIN: Final = r"(?:\A)"
_JAVA_CARET_MULTILINE: Final = r"(?:(?!\Z)(?:\A|(?<=[\n\x85\u2028\u2029])|(?<=\r)(?!\n)))"
_JAVA_UNIX_CARET_MULTILINE: Final = r"(?:(?!\Z)(?:\A|(?<=\n)))"
_JAVA_DOLLAR: Final = r"(?:(?=\r\n\Z|[\r\x85\u2028\u2029]?\Z|(?<!\r)\n\Z))"
_JAVA_DOLLAR_MULTILINE: Final = r"(?:(?=\Z|[\r\x85\u2028\u2029]|(?<!\r)\n))"
_JAVA_UNIX_DOLLAR: Final = r"(?:(?=\n?\Z))"
_JAVA_UNIX_DOLLAR_MULTILINE: Final = r"(?:(?=\n|\Z))"
_JAVA_END: Final = r"(?:\Z)"
_HORIZONTAL_SPACE: Final = r" \t\xa0\u1680\u180e\u2000-\u200a\u202f\u205f\u3000"
_VERTICAL_SPACE: Final = r"\n\x0b\f\r\x85\u2028\u2029"
# Java's POSIX classes are US-ASCII only unless UNICODE_CHARACTER_CLASS is on.
_POSIX_CLASSES: Final = {
    "Lower": "a-z",
    "Upper": "A-Z",
    "ASCII": r"\x00-\x7f",
    "Alpha": "a-zA-Z",
    "Digit": "0-9",
    "Alnum": "a-zA-Z0-9",
    "Punct": r"\x21-\x2f\x3a-\x40\x5b-\x60\x7b-\x7e",
    "Graph": r"\x21-\x7e",
    "Print": r"\x20-\x7e",
    "Blank": r" \t",
    "Cntrl": r"\x00-\x1f\x7f",
    "XDigit": "0-9a-fA-F",
    "Space": r" \t\n\x0b\f\r",
}
_ASCII_LETTERS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_ASCII_DIGITS: Final = frozenset("0123456789")
_HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")
_JAVA_INT_MAX: Final = 2**31 - 1


@dataclass
class _Flags:
    case_insensitive: bool = False
    multiline: bool = False
    dotall: bool = False
    unix_lines: bool = False


def _literal(code_point: int) -> str:
    """A Python pattern matching exactly this character, inside or outside a class."""
    char = chr(code_point)
    if char in _ASCII_LETTERS or char in _ASCII_DIGITS:
        return char
    if code_point < 0x100:
        return f"\\x{code_point:02x}"
    if code_point < 0x10000:
        return f"\\u{code_point:04x}"
    return f"\\U{code_point:08x}"


def _case_scope(case_insensitive: bool) -> str:
    return "(?i:" if case_insensitive else "(?-i:"


def _remove_qe_quoting(pattern: str) -> str:
    """Java's ``\\Q...\\E`` preprocessing, done on the text before parsing as Java does."""
    i = 0
    while i < len(pattern) - 1:
        if pattern[i] != "\\":
            i += 1
        elif pattern[i + 1] != "Q":
            i += 2
        else:
            break
    if i >= len(pattern) - 1:
        return pattern
    out = [pattern[:i]]
    i += 2
    in_quote = True
    while i < len(pattern):
        ch = pattern[i]
        i += 1
        if not ch.isascii() or ch in _ASCII_LETTERS or ch in _ASCII_DIGITS:
            out.append(ch)
        elif ch != "\\":
            out.append("\\" + ch if in_quote else ch)
        elif in_quote:
            if i < len(pattern) and pattern[i] == "E":
                i += 1
                in_quote = False
            else:
                out.append("\\\\")
        elif i < len(pattern) and pattern[i] == "Q":
            i += 1
            in_quote = True
        else:
            out.append(ch)
            if i < len(pattern):
                out.append(pattern[i])
                i += 1
    return "".join(out)


class _JavaRegexTranslator:
    """Rewrites a ``java.util.regex`` pattern as an equivalent Python pattern.

    A recursive-descent parser shaped like ``java.util.regex.Pattern``'s own, so that
    it accepts and rejects the same texts and gives quantifiers, flags and group
    numbers the same scope.  The output is compiled with ``re.ASCII``, which makes
    ``\\w``, ``\\d``, ``\\s``, ``\\b`` and case-insensitivity ASCII-only like Java's defaults.
    """

    def __init__(self, pattern: str) -> None:
        self._src = _remove_qe_quoting(pattern)
        self._pos = 0
        self._groups = 0
        self._group_names: set[str] = set()
        self._max_unopened_reference = 0
        self._lookbehind_depth = 0

    def translate(self) -> str:
        translated = self._expr(_Flags())
        if self._pos < len(self._src):
            raise self._error("Unmatched closing ')'")
        if 0 < self._max_unopened_reference <= self._groups:
            raise UnsupportedJavaRegex("back reference to a group defined later in the pattern")
        return translated

    # -- helpers -------------------------------------------------------------

    def _error(self, message: str) -> InvalidJavaRegex:
        return InvalidJavaRegex(f"{message} near index {self._pos}")

    def _peek(self, offset: int = 0) -> str:
        index = self._pos + offset
        return self._src[index] if index < len(self._src) else ""

    def _read(self) -> str:
        ch = self._peek()
        self._pos += 1
        return ch

    # -- structure -----------------------------------------------------------

    def _expr(self, outer: _Flags) -> str:
        # Flags switched on by "(?i)" last until the enclosing group ends, across "|".
        flags = dataclasses.replace(outer)
        out: list[str] = []
        open_scopes = 0
        quantifiable = False
        while self._pos < len(self._src):
            ch = self._peek()
            if ch == ")":
                break
            if ch == "|":
                self._pos += 1
                out.append(")" * open_scopes + "|")
                open_scopes = 0
                if flags.case_insensitive != outer.case_insensitive:
                    out.append(_case_scope(flags.case_insensitive))
                    open_scopes = 1
                quantifiable = False
                continue
            if ch in "*+?":
                if not quantifiable:
                    self._pos += 1
                    raise self._error(f"Dangling meta character '{ch}'")
                out.append(self._quantifier())
                quantifiable = False
                continue
            if ch == "{":
                quantifier = self._quantifier()
                # Java quantifies an empty atom here, which always matches nothing.
                if quantifiable:
                    out.append(quantifier)
                quantifiable = False
                continue
            if ch == "(":
                group = self._group(flags)
                if isinstance(group, _Flags):
                    if group.case_insensitive != flags.case_insensitive:
                        out.append(_case_scope(group.case_insensitive))
                        open_scopes += 1
                    flags = group
                    quantifiable = False
                else:
                    out.append(group)
                    quantifiable = True
                continue
            out.append(self._atom(flags))
            quantifiable = True
        out.append(")" * open_scopes)
        return "".join(out)

    def _atom(self, flags: _Flags) -> str:
        ch = self._read()
        if ch == "[":
            return self._class()
        if ch == ".":
            if flags.dotall:
                return _JAVA_ALL
            return _JAVA_UNIX_DOT if flags.unix_lines else _JAVA_DOT
        if ch == "^":
            if not flags.multiline:
                return _JAVA_BEGIN
            return _JAVA_UNIX_CARET_MULTILINE if flags.unix_lines else _JAVA_CARET_MULTILINE
        if ch == "$":
            if flags.unix_lines:
                return _JAVA_UNIX_DOLLAR_MULTILINE if flags.multiline else _JAVA_UNIX_DOLLAR
            return _JAVA_DOLLAR_MULTILINE if flags.multiline else _JAVA_DOLLAR
        if ch == "\\":
            if self._peek() in ("p", "P"):
                return self._property(in_class=False)
            escaped = self._escape(flags, in_class=False)
            return _literal(escaped) if isinstance(escaped, int) else escaped
        return _literal(ord(ch))

    def _group(self, flags: _Flags) -> str | _Flags:
        """A parenthesised construct; an inline flag setting like ``(?i)`` returns the new flags."""
        self._pos += 1
        inner = flags
        if self._peek() != "?":
            self._groups += 1
            prefix = "("
        else:
            self._pos += 1
            kind = self._read()
            if kind in (":", "=", "!", ">"):
                prefix = "(?" + kind
            elif kind == "<":
                after = self._read()
                if after in ("=", "!"):
                    prefix = "(?<" + after
                elif after in _ASCII_LETTERS:
                    name = after
                    while self._peek() in _ASCII_LETTERS or self._peek() in _ASCII_DIGITS:
                        name += self._read()
                    if self._read() != ">":
                        raise self._error("named capturing group is missing trailing '>'")
                    if name in self._group_names:
                        raise self._error(f"Named capturing group <{name}> is already defined")
                    self._group_names.add(name)
                    self._groups += 1
                    prefix = f"(?P<{name}>"
                else:
                    raise self._error("Unknown look-behind group")
            else:
                self._pos -= 1
                inner = self._inline_flags(flags)
                end = self._read()
                if end == ")":
                    return inner
                if end != ":":
                    raise self._error("Unknown inline modifier")
                if inner.case_insensitive != flags.case_insensitive:
                    prefix = _case_scope(inner.case_insensitive)
                else:
                    prefix = "(?:"
        lookbehind = prefix in ("(?<=", "(?<!")
        self._lookbehind_depth += lookbehind
        body = self._expr(inner)
        self._lookbehind_depth -= lookbehind
        if self._read() != ")":
            raise self._error("Unclosed group")
        return prefix + body + ")"

    def _inline_flags(self, flags: _Flags) -> _Flags:
        new = dataclasses.replace(flags)
        value = True
        while True:
            ch = self._peek()
            if ch == "i":
                new.case_insensitive = value
            elif ch == "m":
                new.multiline = value
            elif ch == "s":
                new.dotall = value
            elif ch == "d":
                new.unix_lines = value
            elif ch in ("u", "U", "x", "c") and value:
                raise UnsupportedJavaRegex(f"inline flag '{ch}' is not supported")
            elif ch in ("u", "U", "x", "c"):
                pass  # switching off a flag that can never be on changes nothing
            elif ch == "-" and value:
                value = False
            else:
                return new
            self._pos += 1

    def _quantifier(self) -> str:
        ch = self._read()
        if ch == "{":
            if self._peek() not in _ASCII_DIGITS:
                raise self._error("Illegal repetition")
            low = self._number()
            high: int | None = low
            if self._peek() == ",":
                self._pos += 1
                high = None if self._peek() == "}" else self._number(optional=True)
            if self._read() != "}":
                raise self._error("Unclosed counted closure")
            if low > _JAVA_INT_MAX or (high is not None and (high > _JAVA_INT_MAX or high < low)):
                raise self._error("Illegal repetition range")
            if high == low:
                quantifier = f"{{{low}}}"
            else:
                quantifier = f"{{{low},{'' if high is None else high}}}"
        else:
            quantifier = ch
        if self._peek() in ("?", "+"):
            quantifier += self._read()
        return quantifier

    def _number(self, optional: bool = False) -> int:
        digits = ""
        while self._peek() in _ASCII_DIGITS and self._peek():
            digits += self._read()
        if not digits and optional:
            return 0
        return int(digits)

    # -- character classes ---------------------------------------------------

    def _class(self) -> str:
        negate = False
        if self._peek() == "^":
            self._pos += 1
            negate = True
        items: list[str] = []
        while True:
            ch = self._peek()
            if not ch:
                raise self._error("Unclosed character class")
            if ch == "]" and items:
                self._pos += 1
                break
            if ch == "[":
                raise UnsupportedJavaRegex("nested character classes are not supported")
            if ch == "&" and self._peek(1) == "&":
                raise UnsupportedJavaRegex("character class intersection (&&) is not supported")
            start = self._class_member()
            if isinstance(start, str):
                items.append(start)
                continue
            if self._peek() == "-" and self._peek(1) not in ("[", "]"):
                self._pos += 1
                end = self._class_member(range_end=True)
                if isinstance(end, str) or end < start:
                    raise self._error("Illegal character range")
                items.append(f"{_literal(start)}-{_literal(end)}")
            else:
                items.append(_literal(start))
        return "[" + ("^" if negate else "") + "".join(items) + "]"

    def _class_member(self, range_end: bool = False) -> int | str:
        """A character (as a code point) or a predefined class (as Python text)."""
        ch = self._read()
        if not ch:
            raise self._error("Unclosed character class")
        if ch != "\\":
            return ord(ch)
        if self._peek() in ("p", "P") and not range_end:
            return self._property(in_class=True)
        return self._escape(_Flags(), in_class=True)

    def _property(self, in_class: bool) -> str:
        negate = self._read() == "P"
        if self._peek() != "{":
            raise UnsupportedJavaRegex("Unicode properties (\\pX) are not supported")
        self._pos += 1
        name = ""
        while self._peek() and self._peek() != "}":
            name += self._read()
        if self._read() != "}":
            raise self._error("Unclosed character family")
        if name not in _POSIX_CLASSES:
            raise UnsupportedJavaRegex(f"character property \\p{{{name}}} is not supported")
        if in_class:
            if negate:
                raise UnsupportedJavaRegex("\\P{...} inside a character class is not supported")
            return _POSIX_CLASSES[name]
        return "[" + ("^" if negate else "") + _POSIX_CLASSES[name] + "]"

    # -- escapes -------------------------------------------------------------

    def _escape(self, flags: _Flags, in_class: bool) -> int | str:
        """The construct after a backslash: a literal code point, or Python text."""
        ch = self._read()
        if not ch:
            raise self._error("Unescaped trailing backslash")
        simple = {"a": 0x07, "e": 0x1B, "f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09}
        if ch in simple:
            return simple[ch]
        if ch in "dDsSwW":
            return "\\" + ch
        if ch == "h":
            return _HORIZONTAL_SPACE if in_class else f"[{_HORIZONTAL_SPACE}]"
        if ch == "v":
            return _VERTICAL_SPACE if in_class else f"[{_VERTICAL_SPACE}]"
        if ch in ("H", "V"):
            if in_class:
                raise UnsupportedJavaRegex(f"\\{ch} inside a character class is not supported")
            return f"[^{_HORIZONTAL_SPACE if ch == 'H' else _VERTICAL_SPACE}]"
        if ch == "0":
            return self._octal()
        if ch == "x":
            return self._hex()
        if ch == "u":
            return self._unicode()
        if ch == "c":
            if not self._peek():
                raise self._error("Illegal control escape sequence")
            return ord(self._read()) ^ 64
        if not in_class:
            if ch in "123456789":
                return self._back_reference(int(ch))
            # Python's \B (before 3.14) never matches an empty string; Java's does.
            anchors = {"A": r"(?:\A)", "z": _JAVA_END, "b": r"(?:\b)", "B": r"(?:\B|\A\Z)"}
            if ch == "b" and self._peek() == "{" and self._peek(1) == "g":
                raise UnsupportedJavaRegex("\\b{g} is not supported")
            if ch in anchors:
                return anchors[ch]
            if ch == "Z":
                return _JAVA_UNIX_DOLLAR if flags.unix_lines else _JAVA_DOLLAR
            if ch == "k":
                return self._named_back_reference()
            if ch in ("G", "R", "X", "N"):
                raise UnsupportedJavaRegex(f"\\{ch} is not supported")
        if ch.isascii() and (ch in _ASCII_LETTERS or ch in _ASCII_DIGITS):
            raise self._error("Illegal/unsupported escape sequence")
        return ord(ch)

    def _octal(self) -> int:
        digits = ""
        while len(digits) < 3 and self._peek() in "01234567" and self._peek():
            if len(digits) == 2 and digits[0] not in "0123":
                break
            digits += self._read()
        if not digits:
            raise self._error("Illegal octal escape sequence")
        return int(digits, 8)

    def _hex(self) -> int:
        if self._peek() in _HEX_DIGITS and self._peek() and self._peek(1) in _HEX_DIGITS and self._peek(1):
            return int(self._read() + self._read(), 16)
        if self._peek() == "{" and self._peek(1) in _HEX_DIGITS and self._peek(1):
            self._pos += 1
            digits = ""
            while self._peek() in _HEX_DIGITS and self._peek():
                digits += self._read()
                if int(digits, 16) > 0x10FFFF:
                    raise self._error("Hexadecimal codepoint is too big")
            if self._read() != "}":
                raise self._error("Unclosed hexadecimal escape sequence")
            return int(digits, 16)
        raise self._error("Illegal hexadecimal escape sequence")

    def _unicode(self) -> int:
        unit = self._four_hex()
        if 0xD800 <= unit <= 0xDBFF and self._peek() == "\\" and self._peek(1) == "u":
            saved = self._pos
            self._pos += 2
            low = self._four_hex()
            if 0xDC00 <= low <= 0xDFFF:
                return 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
            self._pos = saved
        return unit

    def _four_hex(self) -> int:
        digits = self._src[self._pos : self._pos + 4]
        if len(digits) != 4 or any(d not in _HEX_DIGITS for d in digits):
            raise self._error("Illegal Unicode escape sequence")
        self._pos += 4
        return int(digits, 16)

    def _back_reference(self, number: int) -> str:
        if self._lookbehind_depth:
            raise self._error("Look-behind group does not have an obvious maximum length")
        # Like Java: more digits belong to the reference only while such a group exists.
        while self._peek() in _ASCII_DIGITS and self._peek():
            longer = number * 10 + int(self._peek())
            if longer > self._groups:
                break
            number = longer
            self._pos += 1
        if number > self._groups:
            # Java compiles this and the reference never matches (no such group yet).
            self._max_unopened_reference = max(self._max_unopened_reference, number)
            return "(?!)"
        if number > 99:
            raise UnsupportedJavaRegex("back references above \\99 are not supported")
        return f"(?:\\{number})"

    def _named_back_reference(self) -> str:
        if self._lookbehind_depth:
            raise self._error("Look-behind group does not have an obvious maximum length")
        if self._read() != "<":
            raise self._error("\\k is not followed by '<' for named capturing group")
        name = ""
        while self._peek() and self._peek() != ">":
            name += self._read()
        if self._read() != ">" or name not in self._group_names:
            raise self._error(f"named capturing group <{name}> does not exist")
        return f"(?P={name})"


def compile_java_regex(pattern: str) -> re.Pattern[str]:
    """Compile the Java regular expression ``pattern`` for Python's ``re``, with Java's semantics.

    Raises InvalidJavaRegex if Java rejects the pattern too, and UnsupportedJavaRegex
    if Java accepts it but Python cannot match exactly what Java matches.
    """
    try:
        return re.compile(_JavaRegexTranslator(pattern).translate(), re.ASCII)
    except InvalidJavaRegex as exc:
        raise InvalidJavaRegex(f"Invalid Java regular expression `{one_line(pattern)}`: {exc}") from exc
    except (UnsupportedJavaRegex, re.error, OverflowError, RecursionError) as exc:
        # re.error and the others: valid in Java (e.g. variable-width look-behind) but not in Python.
        raise UnsupportedJavaRegex(f"Unsupported Java regular expression `{one_line(pattern)}`: {exc}") from exc


# ---------------------------------------------------------------------------
# String.replaceAll
# ---------------------------------------------------------------------------


def _expand_replacement(match: re.Match[str], replacement: str) -> str:
    """``Matcher.appendReplacement``'s expansion of ``$n``, ``${name}`` and ``\\x``."""
    group_count = match.re.groups
    out: list[str] = []
    i = 0
    while i < len(replacement):
        ch = replacement[i]
        i += 1
        if ch == "\\":
            if i == len(replacement):
                raise ValueError("character to be escaped is missing")
            out.append(replacement[i])
            i += 1
            continue
        if ch != "$":
            out.append(ch)
            continue
        if i == len(replacement):
            raise ValueError("Illegal group reference: group index is missing")
        if replacement[i] == "{":
            i += 1
            name = ""
            while i < len(replacement) and (replacement[i] in _ASCII_LETTERS or replacement[i] in _ASCII_DIGITS):
                name += replacement[i]
                i += 1
            if not name:
                raise ValueError("named capturing group has 0 length name")
            if i == len(replacement) or replacement[i] != "}":
                raise ValueError("named capturing group is missing trailing '}'")
            i += 1
            if name[0] in _ASCII_DIGITS:
                raise ValueError(f"capturing group name {{{name}}} starts with digit character")
            if name not in match.re.groupindex:
                raise ValueError(f"No group with name {{{name}}}")
            number = match.re.groupindex[name]
        else:
            if replacement[i] not in _ASCII_DIGITS:
                raise ValueError("Illegal group reference")
            number = int(replacement[i])
            i += 1
            while i < len(replacement) and replacement[i] in _ASCII_DIGITS:
                longer = number * 10 + int(replacement[i])
                if longer > group_count:
                    break
                number = longer
                i += 1
            if number > group_count:
                raise ValueError(f"No group {number}")  # Java: IndexOutOfBoundsException
        group = match.group(number)
        if group is not None:
            out.append(group)
    return "".join(out)


def java_replace_all(pattern: re.Pattern[str], text: str, replacement: str) -> str:
    """Java's ``text.replaceAll(pattern, replacement)`` for a pattern from :func:`compile_java_regex`.

    Every match Java's ``find()`` loop finds is replaced, not just the first or the
    full one: e.g. ``.*`` also matches the empty string at the end, so Java turns
    ``abc`` into the replacement twice.  Raises ValueError for a replacement Java
    rejects (e.g. ``$1`` in a pattern with no group) and for a result Java would cut
    in half (see the module docs).
    """
    original = text
    out: list[str] = []
    appended = 0
    search_from = 0
    while search_from <= len(text):
        match = pattern.search(text, search_from)
        if match is None:
            break
        out.append(text[appended : match.start()])
        out.append(_expand_replacement(match, replacement))
        appended = search_from = match.end()
        if match.end() == match.start():
            search_from += 1
            if match.end() < len(text) and ord(text[match.end()]) > 0xFFFF:
                # Java's find() moves on one UTF-16 unit, which is inside this character:
                # from here on it sees the two surrogate halves as separate characters.
                text = text[: match.end()] + _surrogate_halves(text[match.end()]) + text[match.end() + 1 :]
    out.append(text[appended:])
    result = "".join(out).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    if _has_surrogates(result) and not _has_surrogates(original):
        raise ValueError("Java's replaceAll would leave half of a character outside the BMP (an invalid name)")
    return result


def _surrogate_halves(char: str) -> str:
    offset = ord(char) - 0x10000
    return chr(0xD800 + (offset >> 10)) + chr(0xDC00 + (offset & 0x3FF))


def _has_surrogates(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)
