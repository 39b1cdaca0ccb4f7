"""SCRAM credentials in ``/config/users/<sanitized name>`` with their ``/config/changes`` notification,
as kafka-configs.sh writes them. Config entries other than the one being changed are preserved."""

from __future__ import annotations

from collections.abc import Callable

from app.domain.credentials import Mechanism, ScramCredential
from app.domain.errors import CredentialNotFound
from app.storage.zk.compare_and_set import compare_and_set
from app.storage.zk.connection import ZkConnection
from app.storage.zk.errors import Subject
from app.storage.zk.transaction import ABSENT, ChangeTransaction
from app.storage.zk.znodes import ConfigChangeZNode, MalformedZNode, UserConfigZNode


class ZkUserStore:
    def __init__(self, zk: ZkConnection) -> None:
        self._zk = zk
        self._written: list[Callable[[str], None]] = []

    def on_written(self, listener: Callable[[str], None]) -> None:
        """Call ``listener`` with the user's name after each write of a user's config through this store (or an
        attempt whose outcome is unknown): a cache of credentials forgets what it read."""
        self._written.append(listener)

    def _read(self, user_name: str) -> tuple[dict[str, str], int] | None:
        if user_name in (".", ".."):  # sanitized, still a relative path segment: no znode can hold this user
            return None
        found = self._zk.get(UserConfigZNode.path(user_name))
        if found is None:
            return None
        data, stat = found
        try:
            return UserConfigZNode.decode(data), stat.version
        except MalformedZNode:
            return {}, stat.version

    def credentials(self, user_name: str) -> dict[Mechanism, ScramCredential]:
        current = self._read(user_name)
        return {} if current is None else UserConfigZNode.credentials(current[0])

    def mechanisms(self, user_name: str) -> dict[Mechanism, int]:
        found = self.credentials(user_name)
        return {mechanism: found[mechanism].iterations for mechanism in Mechanism if mechanism in found}

    def put_credential(
        self, user_name: str, mechanism: Mechanism, credential: ScramCredential, intent: int | None = None
    ) -> None:
        value = UserConfigZNode.credential_to_string(credential)
        self._change(user_name, lambda config: config | {mechanism.value: value}, create_missing=True, intent=intent)

    def delete_credential(self, user_name: str, mechanism: Mechanism, intent: int | None = None) -> None:
        def without(config: dict[str, str]) -> dict[str, str]:
            if mechanism.value not in config:
                raise CredentialNotFound(f"User {user_name} has no {mechanism.value} credential.")
            return {key: value for key, value in config.items() if key != mechanism.value}

        self._change(user_name, without, create_missing=False, intent=intent)

    def _change(
        self,
        user_name: str,
        edit: Callable[[dict[str, str]], dict[str, str]],
        *,
        create_missing: bool,
        intent: int | None,
    ) -> None:
        subject = Subject(f"The configuration of user {user_name}", "credential")

        def attempt() -> None:
            current = self._read(user_name)
            if current is None and not create_missing:
                raise CredentialNotFound(f"User {user_name} has no SCRAM credentials.")
            config, version = current if current is not None else ({}, ABSENT)
            transaction = ChangeTransaction(self._zk)
            transaction.write(UserConfigZNode.path(user_name), UserConfigZNode.encode(edit(config)), version)
            transaction.notify(ConfigChangeZNode.PREFIX, ConfigChangeZNode.encode(user_name))
            transaction.mark_intent(intent)
            transaction.commit(subject)

        try:
            compare_and_set(attempt, subject)
        finally:
            for listener in self._written:
                listener(user_name)
