"""JAAS configuration text, read as Java's ``ConfigFile`` and Kafka's ``JaasConfig`` read it, and written.

Pure: callers read and write the files. Two shapes of one grammar:

- a configuration file (``-Djava.security.auth.login.config``, kts's ``zookeeper.jaas.file``): named
  sections, each a list of login modules::

      Client {
          org.apache.zookeeper.server.auth.DigestLoginModule required
          username="kafka"
          password="kafka-secret";
      };

- one login module entry, as a Kafka client's ``sasl.jaas.config`` holds it::

      org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="...";

Both are read with the tokens of Java's ``StreamTokenizer``: words, double-quoted strings with backslash
escapes, ``//`` and ``/* */`` comments, and the characters ``{ } ; =``. Errors name the line and what was
expected, never a value: option values are passwords and HMACs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

DIGEST_LOGIN_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
CONTROL_FLAGS = ("required", "requisite", "sufficient", "optional")

_TOKEN = re.compile(
    r'\s+|//[^\n]*|/\*.*?\*/|(?P<unclosed>/\*)|"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<punct>[{};=])|(?P<word>[^\s{};="]+)',
    re.DOTALL,
)
# StreamTokenizer's escapes in quoted strings; any other escaped character stands for itself.
_JAVA_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_QUOTED_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"}


class JaasSyntaxError(ValueError):
    """The text is not JAAS configuration. ``reason`` never holds a value from the text."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason if line is None else f"line {line}: {reason}")
        self.reason = reason
        self.line = line


@dataclass(frozen=True)
class LoginModule:
    class_name: str
    flag: str = "required"
    options: dict[str, str] = field(default_factory=dict, repr=False)  # may hold a password


@dataclass(frozen=True)
class _Token:
    kind: str  # "quoted", "punct" or "word"
    text: str
    line: int


def parse_config(text: str) -> dict[str, list[LoginModule]]:
    """Every section of a configuration file, by name, with its login modules in order."""
    parser = _Parser(_tokens(text), end="file")
    sections: dict[str, list[LoginModule]] = {}
    while not parser.at_end():
        name = parser.name("a section name")
        parser.punct("{")
        modules: list[LoginModule] = []
        while not parser.peek_punct("}"):
            modules.append(parser.login_module())
        parser.punct("}")
        parser.punct(";")
        sections.setdefault(name, []).extend(modules)
    return sections


def parse_login_module(text: str) -> LoginModule:
    """The one login module of a ``sasl.jaas.config`` entry."""
    parser = _Parser(_tokens(text), end="entry")
    module = parser.login_module()
    if not parser.at_end():
        raise JaasSyntaxError("one login module only (a Kafka client uses exactly one)")
    return module


def render_login_module(module: LoginModule, *, separator: str = " ") -> str:
    """``<class> <flag> key="value" ...;`` with ``separator`` before each option (one line by default)."""
    options = "".join(f"{separator}{key}={_quoted(value)}" for key, value in module.options.items())
    return f"{module.class_name} {module.flag}{options};"


def render_section(name: str, modules: Iterable[LoginModule], *, indent: str = "  ") -> str:
    """A configuration file's section, each option of each module on a line of its own."""
    body = "".join(f"{indent}{render_login_module(module, separator=chr(10) + indent)}\n" for module in modules)
    return f"{name} {{\n{body}}};\n"


def _quoted(value: str) -> str:
    return '"' + "".join(_QUOTED_ESCAPES.get(char, char) for char in value) + '"'


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda match: _JAVA_ESCAPES.get(match[1], match[1]), body, flags=re.DOTALL)


def _tokens(text: str) -> list[_Token]:
    found: list[_Token] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        line = text.count("\n", 0, position) + 1
        if match is None or match.lastgroup == "unclosed":
            raise JaasSyntaxError("unterminated quoted string or comment", line)
        kind = match.lastgroup
        if kind is not None:
            value = match[kind]
            found.append(_Token(kind, _unescape(value) if kind == "quoted" else value, line))
        position = match.end()
    return found


class _Parser:
    def __init__(self, tokens: list[_Token], *, end: str) -> None:
        self._tokens = tokens
        self._next = 0
        self._end = end  # what the text is, for "unexpected end of ..."

    def at_end(self) -> bool:
        return self._next >= len(self._tokens)

    def take(self, *, expected: str) -> _Token:
        if self.at_end():
            raise JaasSyntaxError(f"unexpected end of {self._end}, expected {expected}")
        token = self._tokens[self._next]
        self._next += 1
        return token

    def punct(self, symbol: str) -> None:
        token = self.take(expected=f"'{symbol}'")
        if token.kind != "punct" or token.text != symbol:
            raise JaasSyntaxError(f"expected '{symbol}'", token.line)

    def peek_punct(self, symbol: str) -> bool:
        if self.at_end():
            return False
        token = self._tokens[self._next]
        return token.kind == "punct" and token.text == symbol

    def name(self, what: str) -> str:
        token = self.take(expected=what)
        if token.kind == "punct":
            raise JaasSyntaxError(f"expected {what}", token.line)
        return token.text

    def login_module(self) -> LoginModule:
        class_name = self.name("a login module class")
        flag = self.take(expected="a control flag")
        if flag.kind == "punct" or flag.text.lower() not in CONTROL_FLAGS:
            raise JaasSyntaxError(f"expected a control flag ({', '.join(CONTROL_FLAGS)})", flag.line)
        options: dict[str, str] = {}
        while not self.peek_punct(";"):
            key = self.name("an option name or ';'")
            self.punct("=")
            options[key] = self.name("an option value")
        self.punct(";")
        return LoginModule(class_name, flag.text.lower(), options)
