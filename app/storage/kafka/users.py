"""SCRAM users through the Kafka protocol (KIP-554): DescribeUserScramCredentials answers mechanisms and
iteration counts, never salts or keys; AlterUserScramCredentials takes a salt and the salted password kts
derived. Users made with ``kafka-configs.sh`` or ``kafka-storage format --add-scram`` are kts users as they are.

Passwords of HTTP Basic logins are checked by a broker: kts performs the caller's SCRAM exchange
(``BrokerCredentials``, the Kafka-protocol ``CredentialSource``). The verified-password cache in front of it
(app/auth/basic.py) knows a credential changed only when this replica changed it; one changed elsewhere stops
being accepted once its cache entry ends (60 seconds).
"""

from __future__ import annotations

import threading
from typing import Final

from kafka.protocol.admin import AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest

from app.domain.credentials import Mechanism, ScramCredential, Verdict
from app.domain.errors import CredentialNotFound
from app.storage.kafka.errors import check
from app.storage.kafka.ports import IntentMarks
from app.storage.kafka.wire import KafkaWire

MECHANISM_CODES: Final = {Mechanism.SCRAM_SHA_256: 1, Mechanism.SCRAM_SHA_512: 2}
RESOURCE_NOT_FOUND: Final = 91
# Strongest first, as the stored-key check (app/auth/basic.py).
_LOGIN_ORDER: Final = (Mechanism.SCRAM_SHA_512, Mechanism.SCRAM_SHA_256)


class KafkaUserStore:
    def __init__(self, wire: KafkaWire, intents: IntentMarks) -> None:
        self._wire = wire
        self._intents = intents
        self._changes: dict[str, int] = {}  # credential changes this replica made, per user
        self._lock = threading.Lock()

    def mechanisms(self, user_name: str) -> dict[Mechanism, int]:
        request = DescribeUserScramCredentialsRequest(users=[(user_name,)])
        response = self._wire.send(request)
        check(response.error_code, f"Describe the credentials of user {user_name}")
        found: dict[Mechanism, int] = {}
        by_code = {code: mechanism for mechanism, code in MECHANISM_CODES.items()}
        for result in response.results:
            if result.error_code == RESOURCE_NOT_FOUND:
                continue
            check(result.error_code, f"Describe the credentials of user {user_name}")
            for info in result.credential_infos:
                mechanism = by_code.get(info.mechanism)
                if mechanism is not None:
                    found[mechanism] = info.iterations
        return {mechanism: found[mechanism] for mechanism in Mechanism if mechanism in found}

    def put_credential(
        self, user_name: str, mechanism: Mechanism, credential: ScramCredential, intent: int | None = None
    ) -> None:
        if not credential.salted_password:
            raise ValueError("a credential for the Kafka protocol needs its salted password (derive it from one)")
        upsertion = (
            user_name,
            MECHANISM_CODES[mechanism],
            credential.iterations,
            credential.salt,
            credential.salted_password,
        )
        self._alter(user_name, AlterUserScramCredentialsRequest(deletions=[], upsertions=[upsertion]), intent)

    def delete_credential(self, user_name: str, mechanism: Mechanism, intent: int | None = None) -> None:
        request = AlterUserScramCredentialsRequest(deletions=[(user_name, MECHANISM_CODES[mechanism])], upsertions=[])
        self._alter(user_name, request, intent)

    def changes(self, user_name: str) -> int:
        return self._changes.get(user_name, 0)

    def _alter(self, user_name: str, request: AlterUserScramCredentialsRequest, intent: int | None) -> None:
        response = self._wire.send(request)
        for result in response.results:
            if result.error_code == RESOURCE_NOT_FOUND:
                raise CredentialNotFound(f"User {user_name} has no such credential.")
            check(result.error_code, f"Change the credentials of user {user_name}")
        with self._lock:
            self._changes[user_name] = self._changes.get(user_name, 0) + 1
        if intent is not None:
            self._intents.mark(intent)


class BrokerCredentials:
    """``CredentialSource``: a broker checks the password in a SCRAM exchange, strongest mechanism first."""

    def __init__(self, wire: KafkaWire, users: KafkaUserStore) -> None:
        self._wire = wire
        self._users = users

    def fingerprint(self, user_name: str) -> bytes:
        return b"kafka:%d" % self._users.changes(user_name)

    def verify(self, user_name: str, password: str) -> Verdict:
        if any(self._wire.login(mechanism.value, user_name, password) for mechanism in _LOGIN_ORDER):
            return Verdict.ACCEPTED
        # Asked only after a refusal: the audit summarises failures naming users that do not exist.
        return Verdict.REFUSED if self._users.mechanisms(user_name) else Verdict.NO_SUCH_USER
