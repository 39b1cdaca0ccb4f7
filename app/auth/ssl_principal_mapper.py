"""Map a TLS client certificate to the Kafka principal name the broker would give it.

A Kafka broker names an mTLS client after the subject of its certificate: it prints
the subject the way Java's ``X500Principal.getName()`` does (RFC 2253, most specific
RDN first, e.g. ``CN=alice,OU=eng,O=acme,C=US``) and rewrites that string with the
listener's ``ssl.principal.mapping.rules`` (``SslPrincipalMapper`` used by
``DefaultKafkaPrincipalBuilder``).  A token service must derive the *same* name, or
tokens and ACLs end up attached to a principal the broker never sees, so everything
here follows Kafka and the JDK to the character rather than "doing the obvious thing".

Rule syntax (the value of ``ssl.principal.mapping.rules``)
------------------------------------------------------------
A comma-separated list of rules, tried in order; the first rule that applies wins::

    RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,
    RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,
    RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,
    DEFAULT

* ``DEFAULT`` applies to every name and keeps the distinguished name unchanged.
* ``RULE:pattern/replacement/`` applies when the Java regular expression ``pattern``
  matches the *whole* distinguished name; the result is the name rewritten with
  ``replacement`` (Java ``String.replaceAll``: ``$1``..``$n`` and ``${name}`` refer to
  groups, ``\\`` makes the next character literal, so ``\\$`` is a dollar sign).
  A ``$n`` naming a group the pattern does not have is kept literally, as Kafka does.
* ``RULE:pattern/replacement/L`` or ``/U`` lower- or upper-cases the result.
* ``\\/`` puts a slash inside ``pattern`` or ``replacement``.
* Whitespace around rules and empty entries (``,,``) are ignored.  A comma may end
  a line, as in Kafka's documentation; a line break on its own does **not**
  separate rules: Kafka then silently drops the rules before it, so such text is
  rejected here instead of being read differently from the broker.
* ``None`` (setting absent) means ``DEFAULT``.  An empty string means *no rules*:
  every name then fails with :class:`NoMatchingRule`, exactly as on a broker
  configured with an empty value.

Java regular expressions are translated to Python's ``re`` with Java's semantics for
``.``, ``^``, ``$``, ``\\Z``, ``\\w``/``\\d``/``\\s``/``\\b`` (ASCII), inline flags
``(?imsd-imsd)``, ``\\Q...\\E``, octal/hex/unicode/control escapes, ``\\h``, ``\\v``,
POSIX ``\\p{Alpha}``-style classes, named groups and back references.  Constructs
Python cannot express the same way (nested or intersected classes ``[a[b]]``,
``[a&&b]``; Unicode properties; ``\\G``, ``\\R``, ``\\X``, ``\\N{..}``, ``\\b{g}``; flags
``u``, ``U``, ``x``, ``c``; variable-width look-behind; forward references) make the
rule invalid (``ValueError``) rather than silently matching differently.

Known differences from a broker:

* ``\\b``/``\\B`` follow JDK 19 and later (word characters are ``[A-Za-z0-9_]``).
  On JDK 17 and earlier ``\\b`` also treats non-ASCII letters and digits as word
  characters, so a rule using ``\\b`` next to a non-ASCII character can differ there.
* ``/L`` and ``/U`` use Python's Unicode case mapping, which can differ from the
  JVM's ``Locale.ENGLISH`` mapping for characters whose mapping changed between
  Unicode versions.
* Where Java's ``replaceAll`` would cut a character outside the Basic Multilingual
  Plane (an emoji, say) into two unpaired surrogates, Kafka's name is not valid
  Unicode; ``name`` raises ``ValueError`` instead of returning it.
* Kafka's Java exceptions become ``ValueError``: ``IllegalArgumentException`` for bad
  rules, ``NoMatchingRule`` (an ``IOException`` in Kafka) when no rule applies, and
  the ``IndexOutOfBoundsException``/``IllegalArgumentException`` that Kafka throws
  while applying a broken replacement (e.g. ``$1`` in a pattern with no group).
* :func:`distinguished_name` prints names as JDK 17 does.  Newer JDKs (seen on JDK 25)
  decode BMPString, T61String and IA5String values by their own character sets, so
  a value of those types holding non-ASCII bytes prints differently there;
  UTF8String and PrintableString values, which nearly all certificates use, print
  the same on every JDK.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Final

from cryptography import x509

__all__ = ["NoMatchingRule", "SslPrincipalMapper", "distinguished_name", "principal_name_for"]


class NoMatchingRule(ValueError):
    """No mapping rule applies to a distinguished name.

    Kafka refuses such a client (``SslPrincipalMapper.NoMatchingRule``), so callers
    should refuse it too rather than fall back to another name.
    """

    def __init__(self, distinguished_name: str, rules: str) -> None:
        super().__init__(f"No rules apply to {distinguished_name}, rules {rules}")
        self.distinguished_name = distinguished_name


# ---------------------------------------------------------------------------
# Splitting and parsing the rule list (Kafka's RULE_SPLITTER / RULE_PARSER)
# ---------------------------------------------------------------------------

# Kafka's regexes are Java regexes; these are the same expressions spelled for Python,
# with Java's meaning of ".", "\s" and "$" written out so that both engines agree
# even on line breaks.
_J_DOT: Final = r"[^\n\r\x85\u2028\u2029]"
_J_SPACE: Final = r"[ \t\n\x0b\f\r]"
_J_END: Final = r"(?=\r\n\Z|[\r\x85\u2028\u2029]?\Z|(?<!\r)\n\Z)"
_RULE_BODY: Final = (
    r"(?P<default>DEFAULT)"
    rf"|RULE:(?P<pattern>(?:\\{_J_DOT}|[^\\/])*)/(?P<replacement>(?:\\{_J_DOT}|[^\\/])*)/(?P<case>[LU]?){_J_DOT}*?"
    rf"|(?P<other>{_J_DOT}*?)"
)
_RULE_SPLITTER: Final = re.compile(rf"{_J_SPACE}*(?P<rule>{_RULE_BODY}){_J_SPACE}*(?:,{_J_SPACE}*|{_J_END})")
_RULE_PARSER: Final = re.compile(_RULE_BODY)


def _java_trim(text: str) -> str:
    """``String.trim()``: strips every character up to U+0020, not Unicode whitespace."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def _one_line(text: str) -> str:
    """Show control characters as escapes so that error messages stay on one line."""
    return "".join(
        ch if ch >= " " and ch not in "\x7f\x85\u2028\u2029" else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


def _split_rules(rules: str) -> tuple[list[str], list[str]]:
    """The rule texts Kafka's splitter finds, in order, and the texts it skips over.

    Replays ``Matcher.find()`` (which restarts one character later after an empty
    match) so that odd input splits exactly as on the broker.  Kafka's splitter skips
    text it cannot match (a rule followed by a bare line break never matches, so it
    vanishes); the caller rejects such rules instead of dropping them.
    """
    text = _java_trim(rules)
    found: list[str] = []
    skipped: list[str] = []
    covered = 0
    search_from = 0
    while search_from <= len(text):
        match = _RULE_SPLITTER.search(text, search_from)
        if match is None:
            break
        skipped.append(text[covered : match.start()])
        found.append(match.group("rule"))
        covered = match.end()
        search_from = match.end() + 1 if match.end() == match.start() else match.end()
    skipped.append(text[covered:])
    return found, [gap.strip() for gap in skipped if gap.strip()]


# ---------------------------------------------------------------------------
# Java regular expressions -> Python re
# ---------------------------------------------------------------------------

_JAVA_DOT: Final = r"[^\n\r\x85\u2028\u2029]"
_JAVA_UNIX_DOT: Final = r"[^\n]"
_JAVA_ALL: Final = r"(?s:.)"
_JAVA_BEGIN: Final = r"(?:\A)"
_JAVA_CARET_MULTILINE: Final = r"(?:(?!\Z)(?:\A|(?<=[\n\x85\u2028\u2029])|(?<=\r)(?!\n)))"
_JAVA_UNIX_CARET_MULTILINE: Final = r"(?:(?!\Z)(?:\A|(?<=\n)))"
_JAVA_DOLLAR: Final = rf"(?:{_J_END})"
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


class _UnsupportedRegex(ValueError):
    """A valid Java construct that Python's ``re`` cannot reproduce faithfully."""


class _JavaRegexSyntaxError(ValueError):
    """What Java's ``Pattern.compile`` rejects with a ``PatternSyntaxException``."""


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
            raise _UnsupportedRegex("back reference to a group defined later in the pattern")
        return translated

    # -- helpers -------------------------------------------------------------

    def _error(self, message: str) -> _JavaRegexSyntaxError:
        return _JavaRegexSyntaxError(f"{message} near index {self._pos}")

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
                raise _UnsupportedRegex(f"inline flag '{ch}' is not supported")
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
                raise _UnsupportedRegex("nested character classes are not supported")
            if ch == "&" and self._peek(1) == "&":
                raise _UnsupportedRegex("character class intersection (&&) is not supported")
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
            raise _UnsupportedRegex("Unicode properties (\\pX) are not supported")
        self._pos += 1
        name = ""
        while self._peek() and self._peek() != "}":
            name += self._read()
        if self._read() != "}":
            raise self._error("Unclosed character family")
        if name not in _POSIX_CLASSES:
            raise _UnsupportedRegex(f"character property \\p{{{name}}} is not supported")
        if in_class:
            if negate:
                raise _UnsupportedRegex("\\P{...} inside a character class is not supported")
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
                raise _UnsupportedRegex(f"\\{ch} inside a character class is not supported")
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
                raise _UnsupportedRegex("\\b{g} is not supported")
            if ch in anchors:
                return anchors[ch]
            if ch == "Z":
                return _JAVA_UNIX_DOLLAR if flags.unix_lines else _JAVA_DOLLAR
            if ch == "k":
                return self._named_back_reference()
            if ch in ("G", "R", "X", "N"):
                raise _UnsupportedRegex(f"\\{ch} is not supported")
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
            raise _UnsupportedRegex("back references above \\99 are not supported")
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


def _compile_java_regex(pattern: str) -> re.Pattern[str]:
    """Compile a Java regex for Python, or raise ValueError naming the problem."""
    try:
        return re.compile(_JavaRegexTranslator(pattern).translate(), re.ASCII)
    except _UnsupportedRegex as exc:
        raise ValueError(f"Unsupported Java regular expression `{_one_line(pattern)}`: {exc}") from exc
    except _JavaRegexSyntaxError as exc:
        raise ValueError(f"Invalid Java regular expression `{_one_line(pattern)}`: {exc}") from exc
    except (re.error, OverflowError, RecursionError) as exc:
        # Valid in Java (e.g. variable-width look-behind) but not expressible in Python.
        raise ValueError(f"Unsupported Java regular expression `{_one_line(pattern)}`: {exc}") from exc


# ---------------------------------------------------------------------------
# Applying a rule: Kafka's escapeLiteralBackReferences + Java's replaceAll
# ---------------------------------------------------------------------------

_KAFKA_BACK_REFERENCE: Final = re.compile(r"\$([0-9]+)")


def _escape_literal_back_references(replacement: str, group_count: int) -> str:
    """Kafka's ``escapeLiteralBackReferences``: ``$n`` naming a missing group becomes literal.

    Kept bug-for-bug: offsets come from the original text while backslashes are
    inserted into the edited copy, so a second literal reference lands one place off,
    exactly as on the broker.
    """
    if group_count == 0:
        return replacement
    value = replacement
    for match in _KAFKA_BACK_REFERENCE.finditer(replacement):
        digits = match.group(1)
        if digits.startswith("0"):
            continue
        if len(digits) > 10 or int(digits) > _JAVA_INT_MAX:
            raise ValueError(f'For input string: "{digits}"')  # Integer.parseInt's complaint
        index = int(digits)
        while index > group_count and index >= 10:
            index //= 10
        if index > group_count:
            group_start = match.start(1)
            value = value[: group_start - 1] + "\\" + value[group_start - 1 :]
    return value


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


def _java_replace_all(pattern: re.Pattern[str], text: str, replacement: str) -> str:
    """``String.replaceAll``: every match Java's ``find()`` loop finds is replaced.

    Not just the full match: e.g. ``.*`` also matches the empty string at the end,
    so Java turns ``abc`` into the replacement twice.  Kafka inherits that.
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


@dataclass(frozen=True)
class _Rule:
    """One parsed rule; ``regex is None`` means ``DEFAULT``."""

    pattern: str = ""
    replacement: str = ""
    regex: re.Pattern[str] | None = None
    lower: bool = False
    upper: bool = False

    def apply(self, distinguished_name: str) -> str | None:
        """The mapped name, or None when the rule does not apply."""
        if self.regex is None:
            return distinguished_name
        match = self.regex.fullmatch(distinguished_name)
        if match is None:
            return None
        try:
            replacement = _escape_literal_back_references(self.replacement, self.regex.groups)
            result = _java_replace_all(self.regex, distinguished_name, replacement)
        except ValueError as exc:
            raise ValueError(f"Cannot apply rule `{_one_line(str(self))}`: {exc}") from exc
        if self.lower:
            return result.lower()
        if self.upper:
            return result.upper()
        return result

    def __str__(self) -> str:
        """Kafka's ``Rule.toString()`` (the pattern and replacement as written)."""
        if self.regex is None:
            return "DEFAULT"
        suffix = "/L" if self.lower else "/U" if self.upper else ""
        return f"RULE:{self.pattern}/{self.replacement}{suffix}"


# ---------------------------------------------------------------------------
# Public mapper
# ---------------------------------------------------------------------------


class SslPrincipalMapper:
    """Kafka's ``ssl.principal.mapping.rules``, applied exactly as a broker applies them."""

    def __init__(self, rules: str | None = None) -> None:
        """Parse ``rules``; None means the broker default ``DEFAULT``. See the module docs."""
        texts, skipped = _split_rules("DEFAULT" if rules is None else rules)
        # Kafka's own errors first: they are what the broker says about the same text.
        self._rules: tuple[_Rule, ...] = _parse_rules(texts)
        if skipped:
            raise ValueError(
                f"Invalid rules: Kafka would silently ignore `{_one_line(skipped[0])}`; "
                "separate rules with commas (a line break alone does not separate rules)"
            )

    @classmethod
    def from_rules(cls, rules: str | None) -> SslPrincipalMapper:
        """Mirror of Kafka's ``SslPrincipalMapper.fromRules``; invalid rules raise ValueError."""
        return cls(rules)

    def name(self, distinguished_name: str) -> str:
        """The principal name for an RFC 2253 distinguished name; the first applicable rule wins.

        Raises NoMatchingRule when no rule applies, and ValueError when the applicable
        rule's replacement is broken (Kafka fails the connection in both cases).
        """
        for rule in self._rules:
            principal = rule.apply(distinguished_name)
            if principal is not None:
                return principal
        raise NoMatchingRule(distinguished_name, self._rules_text())

    def _rules_text(self) -> str:
        return "[" + ", ".join(str(rule) for rule in self._rules) + "]"

    def __str__(self) -> str:
        """Same text as Kafka's ``toString()``, which makes logs comparable with a broker's."""
        return f"SslPrincipalMapper(rules = {self._rules_text()})"

    __repr__ = __str__


def _parse_rules(texts: list[str]) -> tuple[_Rule, ...]:
    rules: list[_Rule] = []
    for text in texts:
        match = _RULE_PARSER.match(text)
        if match is None or match.end() != len(text):
            end = 0 if match is None else match.end()
            raise ValueError(f"Invalid rule: `{_one_line(text)}`, unmatched substring: `{_one_line(text[end:])}`")
        if match.group("default") is not None:
            rules.append(_Rule())
        elif match.group("pattern") is not None:
            pattern = match.group("pattern")
            try:
                regex = _compile_java_regex(pattern)
            except ValueError as exc:
                raise ValueError(f"Invalid rule: `{_one_line(text)}`: {exc}") from exc
            case = match.group("case")
            rules.append(_Rule(pattern, match.group("replacement"), regex, case == "L", case == "U"))
        # else: an empty entry such as the one between ",," is ignored, as in Kafka
    return tuple(rules)


# ---------------------------------------------------------------------------
# Certificate subject -> X500Principal.getName() (RFC 2253)
# ---------------------------------------------------------------------------

# The only attribute types the JDK prints by keyword in RFC 2253 form; every other
# type is printed as its dotted OID with the value's DER encoding in hex.
_RFC2253_KEYWORDS: Final = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.9": "STREET",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "0.9.2342.19200300.100.1.1": "UID",
    "0.9.2342.19200300.100.1.25": "DC",
}
# UTF8String, PrintableString, T61String, IA5String, GeneralString, BMPString: the tags
# the JDK prints as text (JDK 17 decodes all of them as UTF-8, even BMPString).
_TEXT_TAGS: Final = frozenset({0x0C, 0x13, 0x14, 0x16, 0x1B, 0x1E})
_JDK_ESCAPED: Final = frozenset(',=+<>#;"\\')
# An encoded UTF-16 surrogate, whole or cut short: the JDK's UTF-8 decoder turns it
# into one U+FFFD where Python's gives one per byte; a lone invalid byte gets one in both.
_ENCODED_SURROGATE: Final = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]?")


def _der_element(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, content start, content end) of the DER element at ``pos``."""
    if pos + 2 > len(data):
        raise ValueError("truncated DER")
    tag = data[pos]
    if tag & 0x1F == 0x1F:
        raise ValueError("unsupported DER tag")
    length = data[pos + 1]
    pos += 2
    if length & 0x80:
        size = length & 0x7F
        if size == 0 or size > 4 or pos + size > len(data):
            raise ValueError("unsupported DER length")
        length = int.from_bytes(data[pos : pos + size], "big")
        pos += size
    if pos + length > len(data):
        raise ValueError("truncated DER")
    return tag, pos, pos + length


def _der_length(length: int) -> bytes:
    if length < 0x80:
        return bytes([length])
    encoded = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(encoded)]) + encoded


def _oid_text(content: bytes) -> str:
    arcs: list[int] = []
    value = 0
    for byte in content:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    if not arcs or content[-1] & 0x80:
        raise ValueError("malformed OID")
    first = min(arcs[0] // 40, 2)
    return ".".join(str(arc) for arc in [first, arcs[0] - 40 * first, *arcs[1:]])


def _format_value(tag: int, content: bytes, keyword: str) -> str:
    """The JDK's ``AVA.toRFC2253String`` value part."""
    if keyword[0] in "0123456789" or tag not in _TEXT_TAGS:
        return "#" + (bytes([tag]) + _der_length(len(content)) + content).hex()
    escaped: list[str] = []
    for ch in _ENCODED_SURROGATE.sub(b"\xff", content).decode("utf-8", errors="replace"):
        if ch in _JDK_ESCAPED:
            escaped.append("\\" + ch)
        elif ch == "\x00":
            escaped.append("\\00")
        else:
            escaped.append(ch)
    text = "".join(escaped)
    # Leading and trailing spaces and carriage returns are escaped too.
    lead = len(text) - len(text.lstrip(" \r"))
    trail = len(text.rstrip(" \r"))
    return "".join("\\" + ch if i < lead or i >= trail else ch for i, ch in enumerate(text))


def _format_name(name_der: bytes) -> str:
    tag, start, end = _der_element(name_der, 0)
    if tag != 0x30:
        raise ValueError("subject is not a DER SEQUENCE")
    rdns: list[str] = []
    pos = start
    while pos < end:
        _, rdn_start, rdn_end = _der_element(name_der, pos)
        avas: list[str] = []
        ava_pos = rdn_start
        while ava_pos < rdn_end:
            _, ava_start, ava_end = _der_element(name_der, ava_pos)
            oid_tag, oid_start, oid_end = _der_element(name_der, ava_start)
            if oid_tag != 0x06:
                raise ValueError("attribute type is not an OID")
            value_tag, value_start, value_end = _der_element(name_der, oid_end)
            oid = _oid_text(name_der[oid_start:oid_end])
            keyword = _RFC2253_KEYWORDS.get(oid, oid)
            avas.append(f"{keyword}={_format_value(value_tag, name_der[value_start:value_end], keyword)}")
            ava_pos = ava_end
        rdns.append("+".join(avas))
        pos = rdn_end
    return ",".join(reversed(rdns))


def _subject_der(tbs: bytes) -> bytes:
    """The subject Name inside a DER TBSCertificate, exactly as encoded."""
    _, pos, _ = _der_element(tbs, 0)
    if _der_element(tbs, pos)[0] == 0xA0:  # explicit version
        pos = _der_element(tbs, pos)[2]
    for _ in range(4):  # serialNumber, signature, issuer, validity
        pos = _der_element(tbs, pos)[2]
    return tbs[pos : _der_element(tbs, pos)[2]]


def distinguished_name(certificate_der: bytes) -> str:
    """The certificate subject as Java's ``X500Principal.getName()`` prints it.

    This is the string Kafka feeds to the mapping rules.  ``Name.rfc4514_string()``
    is close but not the same: the JDK also escapes ``=`` and ``#`` anywhere in a
    value and spaces or carriage returns at either end, prints only CN, C, L, ST,
    STREET, O, OU, DC and UID by keyword (emailAddress becomes
    ``1.2.840.113549.1.9.1=#<hex of the DER value>``), prints NUL as ``\\00``, decodes
    every text type as UTF-8 (JDK 17; so a BMPString comes out garbled, as on the
    broker) and hex-encodes UniversalString, VisibleString and NumericString values.
    So the subject is read from the certificate's own DER bytes and formatted like
    the JDK, keeping multi-valued RDNs in encoded order joined with ``+``.

    Raises ValueError if the bytes are not a DER X.509 certificate that the
    ``cryptography`` package accepts (it is stricter than the JDK about some
    malformed encodings).
    """
    certificate = x509.load_der_x509_certificate(certificate_der)
    try:
        return _format_name(_subject_der(certificate.tbs_certificate_bytes))
    except IndexError as exc:
        raise ValueError("malformed certificate subject") from exc


def principal_name_for(certificate_der: bytes, mapper: SslPrincipalMapper) -> str:
    """The Kafka principal name (without ``User:``) a broker would give this client certificate."""
    return mapper.name(distinguished_name(certificate_der))
