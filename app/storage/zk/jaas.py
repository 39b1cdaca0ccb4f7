"""The ZooKeeper login of a JAAS file, as Kafka brokers and ``zookeeper-shell`` read it.

Operators give brokers a file such as::

    Client {
        org.apache.zookeeper.server.auth.DigestLoginModule required
        username="kafka"
        password="kafka-secret";
    };

through ``-Djava.security.auth.login.config``. kts reads the same file (``zookeeper.jaas.file``) so the
brokers' ZooKeeper identity is configured in one place. Only the DIGEST-MD5 login module is understood:
Kerberos (``Krb5LoginModule``) is refused with a clear error. Error messages name lines, never values,
because the file holds a password.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

DIGEST_LOGIN_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
DEFAULT_SECTION = "Client"  # ZooKeeper's default for the ``zookeeper.sasl.clientconfig`` system property
_FLAGS = ("required", "requisite", "sufficient", "optional")

# Comments (// and /* */, as Java's ConfigFile skips them), quoted strings with backslash escapes,
# punctuation, and bare words.
_TOKEN = re.compile(
    r'\s+|//[^\n]*|/\*.*?\*/|"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<punct>[{};=])|(?P<word>[^\s{};="]+)',
    re.DOTALL,
)


class JaasError(ValueError):
    """The file cannot be read as a JAAS configuration, or holds no usable ZooKeeper login."""


@dataclass(frozen=True)
class LoginModule:
    class_name: str
    flag: str
    options: dict[str, str] = field(repr=False)  # may hold a password


@dataclass(frozen=True)
class _Token:
    kind: str  # "quoted", "punct" or "word"
    text: str
    line: int


def _tokens(text: str) -> list[_Token]:
    found: list[_Token] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            line = text.count("\n", 0, position) + 1
            raise JaasError(f"line {line}: unterminated quoted string or comment")
        kind = match.lastgroup
        if kind is not None:
            value = match.group(kind)
            if kind == "quoted":
                value = re.sub(r"\\(.)", r"\1", value)
            found.append(_Token(kind, value, text.count("\n", 0, position) + 1))
        position = match.end()
    return found


class _Parser:
    def __init__(self, tokens: list[_Token]) -> None:
        self._tokens = tokens
        self._next = 0

    def _take(self, *, expected: str) -> _Token:
        if self._next >= len(self._tokens):
            raise JaasError(f"unexpected end of file, expected {expected}")
        token = self._tokens[self._next]
        self._next += 1
        return token

    def _punct(self, symbol: str) -> None:
        token = self._take(expected=f"'{symbol}'")
        if token.kind != "punct" or token.text != symbol:
            raise JaasError(f"line {token.line}: expected '{symbol}'")

    def _peek_punct(self, symbol: str) -> bool:
        if self._next >= len(self._tokens):
            return False
        token = self._tokens[self._next]
        return token.kind == "punct" and token.text == symbol

    def _name(self, what: str) -> str:
        token = self._take(expected=what)
        if token.kind == "punct":
            raise JaasError(f"line {token.line}: expected {what}")
        return token.text

    def sections(self) -> dict[str, list[LoginModule]]:
        sections: dict[str, list[LoginModule]] = {}
        while self._next < len(self._tokens):
            name = self._name("a section name")
            self._punct("{")
            modules: list[LoginModule] = []
            while not self._peek_punct("}"):
                modules.append(self._module())
            self._punct("}")
            self._punct(";")
            sections.setdefault(name, []).extend(modules)
        return sections

    def _module(self) -> LoginModule:
        class_name = self._name("a login module class")
        flag_token = self._take(expected="a control flag")
        if flag_token.text.lower() not in _FLAGS:
            raise JaasError(f"line {flag_token.line}: expected a control flag ({', '.join(_FLAGS)})")
        options: dict[str, str] = {}
        while not self._peek_punct(";"):
            key = self._name("an option name or ';'")
            self._punct("=")
            options[key] = self._name("an option value")
        self._punct(";")
        return LoginModule(class_name, flag_token.text.lower(), options)


def parse(text: str) -> dict[str, list[LoginModule]]:
    """Every section of a JAAS configuration, by name, with its login modules in order."""
    return _Parser(_tokens(text)).sections()


def read_digest_login(path: Path, section: str = DEFAULT_SECTION) -> tuple[str, str]:
    """(username, password) of the DigestLoginModule in ``section`` of the file at ``path``."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise JaasError(f"cannot read {path}: {type(exc).__name__}") from None
    modules = parse(text).get(section)
    if not modules:
        raise JaasError(f"{path} has no '{section}' section")
    digest = [module for module in modules if module.class_name == DIGEST_LOGIN_MODULE]
    if not digest:
        names = ", ".join(sorted({module.class_name.rsplit(".", 1)[-1] for module in modules}))
        raise JaasError(
            f"the '{section}' section of {path} uses {names}; kts authenticates to ZooKeeper with "
            f"{DIGEST_LOGIN_MODULE} (SASL DIGEST-MD5) only"
        )
    options = digest[0].options
    if not options.get("username") or "password" not in options:
        raise JaasError(f"the {DIGEST_LOGIN_MODULE} of section '{section}' in {path} needs username and password")
    return options["username"], options["password"]
