"""Map a TLS client certificate to the Kafka principal name the broker would give it.

A Kafka broker names an mTLS client after the subject of its certificate: it prints
the subject the way Java's ``X500Principal.getName()`` does (RFC 2253, most specific
RDN first, e.g. ``CN=alice,OU=eng,O=acme,C=US``; printed by :mod:`app.auth.x500_name`) and
rewrites that string with the listener's ``ssl.principal.mapping.rules``
(``SslPrincipalMapper`` used by ``DefaultKafkaPrincipalBuilder``).  A token service
must derive the *same* name, or tokens and ACLs end up attached to a principal the
broker never sees, so everything here follows Kafka and the JDK to the character
rather than "doing the obvious thing".

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

Patterns and replacements are applied with Java's semantics by
:mod:`app.domain.java_regex`; a valid Java pattern that Python cannot match the same
way makes the rule invalid (``ValueError``) rather than silently matching differently.

Known differences from a broker (besides those listed in :mod:`app.domain.java_regex`
and :mod:`app.auth.x500_name`):

* ``/L`` and ``/U`` use Python's Unicode case mapping, which can differ from the
  JVM's ``Locale.ENGLISH`` mapping for characters whose mapping changed between
  Unicode versions.
* Kafka's Java exceptions become ``ValueError``: ``IllegalArgumentException`` for bad
  rules, ``NoMatchingRule`` (an ``IOException`` in Kafka) when no rule applies, and
  the ``IndexOutOfBoundsException``/``IllegalArgumentException`` that Kafka throws
  while applying a broken replacement (e.g. ``$1`` in a pattern with no group).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from app.domain.java_regex import compile_java_regex, java_replace_all, one_line

__all__ = ["NoMatchingRule", "SslPrincipalMapper"]


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

# Kafka's own expressions (with named groups).  They are Java regexes, so they are
# compiled as such: "." and "$" then treat every Java line terminator as Kafka does.
_RULE: Final = (
    r"(?<default>DEFAULT)"
    r"|RULE:(?<pattern>(?:\\.|[^\\/])*)/(?<replacement>(?:\\.|[^\\/])*)/(?<case>[LU]?).*?"
    r"|(?<other>.*?)"
)
_RULE_SPLITTER: Final = compile_java_regex(rf"\s*(?<rule>{_RULE})\s*(?:,\s*|$)")
_RULE_PARSER: Final = compile_java_regex(_RULE)


def _java_trim(text: str) -> str:
    """``String.trim()``: strips every character up to U+0020, not Unicode whitespace."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


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


def _parse_rules(texts: list[str]) -> tuple[_Rule, ...]:
    """Kafka's ``parseRules`` of the split rule texts; an invalid rule raises ValueError."""
    rules: list[_Rule] = []
    for text in texts:
        match = _RULE_PARSER.match(text)
        if match is None or match.end() != len(text):
            end = 0 if match is None else match.end()
            raise ValueError(f"Invalid rule: `{one_line(text)}`, unmatched substring: `{one_line(text[end:])}`")
        if match.group("default") is not None:
            rules.append(_Rule())
        elif match.group("pattern") is not None:
            pattern = match.group("pattern")
            try:
                regex = compile_java_regex(pattern)
            except ValueError as exc:
                raise ValueError(f"Invalid rule: `{one_line(text)}`: {exc}") from exc
            case = match.group("case")
            rules.append(_Rule(pattern, match.group("replacement"), regex, case == "L", case == "U"))
        # else: an empty entry such as the one between ",," is ignored, as in Kafka
    return tuple(rules)


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
        if len(digits) > 10 or int(digits) > 2**31 - 1:
            raise ValueError(f'For input string: "{digits}"')  # Integer.parseInt's complaint
        index = int(digits)
        while index > group_count and index >= 10:
            index //= 10
        if index > group_count:
            group_start = match.start(1)
            value = value[: group_start - 1] + "\\" + value[group_start - 1 :]
    return value


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
            result = java_replace_all(self.regex, distinguished_name, replacement)
        except ValueError as exc:
            raise ValueError(f"Cannot apply rule `{one_line(str(self))}`: {exc}") from exc
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
                f"Invalid rules: Kafka would silently ignore `{one_line(skipped[0])}`; "
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
