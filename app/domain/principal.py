"""Kafka principals: ``Type:name``, as Kafka's ``SecurityUtils.parseKafkaPrincipal`` reads them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.domain.errors import InvalidPrincipal

USER_TYPE = "User"
# Long enough for any certificate distinguished name seen in practice, short enough to bound znode and
# log sizes. Applies to the whole "Type:name" string.
MAX_PRINCIPAL_LENGTH = 1024
_TYPE = re.compile(r"[A-Za-z][A-Za-z0-9_\-]{0,63}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @property
    def is_user(self) -> bool:
        return self.principal_type == USER_TYPE

    @classmethod
    def user(cls, name: str) -> KafkaPrincipal:
        return cls(USER_TYPE, name)

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """Parse ``Type:name``; the name may itself contain ``:`` (as in Kafka, the first colon splits)."""
        if not isinstance(text, str):
            raise InvalidPrincipal("A principal must be a string of the form Type:name.")
        if len(text) > MAX_PRINCIPAL_LENGTH:
            raise InvalidPrincipal(f"A principal may be at most {MAX_PRINCIPAL_LENGTH} characters long.")
        principal_type, sep, name = text.partition(":")
        if not sep:
            raise InvalidPrincipal("A principal must have a type, as in User:alice.")
        if not _TYPE.fullmatch(principal_type):
            raise InvalidPrincipal("A principal type must be a word such as User, as in User:alice.")
        if not name:
            raise InvalidPrincipal("A principal must have a name after its type, as in User:alice.")
        if _CONTROL.search(name):
            raise InvalidPrincipal("A principal name must not contain control characters.")
        return cls(principal_type, name)
