"""kts over the in-memory backend (app/storage/memory/assembly.py), for tests about the HTTP edge that need no
cluster: ``memory_client(...)`` builds the real app (``create_app``, its lifespan, every service) with the
``MemoryBackend`` in place of the backend the settings select, chosen programmatically (no config key selects
it); ``backend.user_store`` takes the users a test logs in as (``add_user``)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest.mock import patch

from fastapi.testclient import TestClient

from app.api.app import create_app
from app.domain.clock import Clock
from app.domain.credentials import Mechanism
from app.domain.scram import derive
from app.domain.token_secret import TokenSecret
from app.service.audit import AuditLog
from app.settings import Settings, load_settings
from app.storage.memory.assembly import MemoryBackend
from tests.conftest import SECRET


def memory_settings(tmp_path: Path, **overrides: Any) -> dict[str, Any]:
    """Settings that validate (``zookeeper.connect`` names no server: the memory backend never reads it), with an
    SQLite audit database of the test's own."""
    return {
        "zookeeper_connect": "127.0.0.1:1/unused",
        "delegation_token_secret_key": SECRET,
        "super_users": "User:admin",
        "service_id": "test",
        "audit_db_url": f"sqlite:///{tmp_path / 'audit.db'}",
        **overrides,
    }


@contextmanager
def memory_client(values: dict[str, Any]) -> Iterator[tuple[TestClient, MemoryBackend]]:
    """The app over a fresh ``MemoryBackend``, started (its lifespan entered) and stopped at the block's end."""
    made: list[MemoryBackend] = []

    def backend(
        settings: Settings, clock: Clock, audit_log: AuditLog, secret: TokenSecret, database: object
    ) -> MemoryBackend:
        made.append(MemoryBackend(settings, clock, audit_log, secret, database))
        return made[-1]

    client = TestClient(create_app(load_settings(**values)), raise_server_exceptions=False)
    with patch("app.runtime.cluster_backend", backend):
        client.__enter__()  # the lifespan builds the runtime now, over the memory backend
    try:
        yield client, made[0]
    finally:
        client.__exit__(None, None, None)


def add_user(backend: MemoryBackend, name: str, password: str) -> dict[str, str]:
    """A user the backend knows (SCRAM-SHA-512, as a broker's tools write one); the Basic header to log in as."""
    backend.user_store.put_credential(name, Mechanism.SCRAM_SHA_512, derive(Mechanism.SCRAM_SHA_512, password, 4096))
    return {"Authorization": "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode()}
