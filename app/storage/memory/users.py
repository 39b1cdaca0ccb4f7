"""SCRAM credentials held in this process: the ``UserStore`` of app/service/ports.py, which also answers the keys
(``credentials``), as ZooKeeper's does, so HTTP Basic passwords are checked against them (``StoredKeyCredentials``,
app/auth/basic.py). Only what a broker keeps is kept: salt, keys and iterations, never the salted password."""

from __future__ import annotations

import threading
from dataclasses import replace

from app.domain.credentials import Mechanism, ScramCredential
from app.domain.errors import CredentialNotFound


class MemoryUserStore:
    def __init__(self) -> None:
        self._users: dict[str, dict[Mechanism, ScramCredential]] = {}
        self._lock = threading.Lock()

    def credentials(self, user_name: str) -> dict[Mechanism, ScramCredential]:
        with self._lock:
            return dict(self._users.get(user_name, {}))

    def mechanisms(self, user_name: str) -> dict[Mechanism, int]:
        found = self.credentials(user_name)
        return {mechanism: found[mechanism].iterations for mechanism in Mechanism if mechanism in found}

    def put_credential(
        self, user_name: str, mechanism: Mechanism, credential: ScramCredential, intent: str | None = None
    ) -> None:
        kept = replace(credential, salted_password=b"")
        with self._lock:
            self._users[user_name] = self._users.get(user_name, {}) | {mechanism: kept}

    def delete_credential(self, user_name: str, mechanism: Mechanism, intent: str | None = None) -> None:
        with self._lock:
            found = self._users.get(user_name)
            if found is None:
                raise CredentialNotFound(f"User {user_name} has no SCRAM credentials.")
            if mechanism not in found:
                raise CredentialNotFound(f"User {user_name} has no {mechanism.value} credential.")
            left = {kept: credential for kept, credential in found.items() if kept is not mechanism}
            if left:
                self._users[user_name] = left
            else:
                del self._users[user_name]
