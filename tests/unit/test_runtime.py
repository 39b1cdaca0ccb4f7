"""The composition root builds the services once over whatever ``ClusterBackend`` the settings select
(app/runtime.py): it runs the backend's life cycle in order around its own steps, binds the backend once, and adds
the duties every backend's leader has to the backend's own."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from app import runtime
from app.backend_selection import Storage
from app.backends import load_settings
from app.domain.acl import AclSnapshot
from app.domain.authorization import Authorizer
from app.domain.token_secret import TokenSecret
from app.service.admission import OPEN_ADMISSION
from app.service.audit import Auditor
from app.service.backend import Bound, Duty, LeaderWork, OwnLogin
from tests.unit.fakes import FakeClock


class _Leadership:
    def __init__(self, steps: list[str], duty: Duty) -> None:
        self._steps = steps
        self.duty = duty
        self.is_leader = False

    def start(self) -> None:
        self._steps.append("leadership.start")

    def stop(self) -> None:
        self._steps.append("leadership.stop")


class _Backend:
    """Records what the runtime asks of it; its stores are never called while the runtime is only built."""

    name = "recording"

    def __init__(self, *, leader: bool) -> None:
        self.steps: list[str] = []
        self.bound_with: tuple[Auditor, Authorizer] | None = None
        self.leaderships: list[_Leadership] = []
        self._leader = leader
        store: Any = SimpleNamespace(on_released=lambda listener: None)
        self.token_store = self.token_view = self.acl_store = self.user_store = store
        self.credentials = self.intents = self.lockout_store = self.reconciler = store
        self.acl_view: Any = SimpleNamespace(snapshot=lambda: AclSnapshot())
        self.own_login = OwnLogin((), source="nothing")
        self.renewers_added = ()
        self.readiness: Any = SimpleNamespace(cluster_connected=lambda: True)

    def bind(self, auditor: Auditor, authorizer: Authorizer) -> Bound:
        assert self.bound_with is None, "bound once"
        self.bound_with = (auditor, authorizer)
        own: list[tuple[str, Duty]] = [("own-chore", lambda lost: self.steps.append("own-chore"))]
        return Bound(OPEN_ADMISSION, LeaderWork(own, self._elect if self._leader else None))

    def _elect(self, duty: Duty) -> _Leadership:
        self.leaderships.append(_Leadership(self.steps, duty))
        return self.leaderships[-1]

    def connect(self) -> None:
        self.steps.append("connect")

    def start(self) -> None:
        self.steps.append("start")

    def stop(self) -> None:
        self.steps.append("stop")

    def readings(self) -> Any:
        return "readings"


def _built(monkeypatch: pytest.MonkeyPatch, backend: _Backend, **values: Any) -> runtime.Runtime:
    stored = Storage(
        secret=TokenSecret("s" * 32),
        audit_log=SimpleNamespace(),  # type: ignore[arg-type]
        backend=backend,
        prepare=[lambda: backend.steps.append("schema")],
    )
    monkeypatch.setattr(runtime, "storage", lambda settings, clock, audit_log, backend_factory: stored)
    warned: Callable[..., list[str]] = lambda *args, **kwargs: backend.steps.append("warn") or []  # noqa: E731
    monkeypatch.setattr(runtime, "shared_identity_warnings", warned)
    settings = load_settings(zookeeper_connect="localhost:2181/kts", delegation_token_secret_key="s" * 32, **values)
    return runtime.build_runtime(settings, FakeClock())


def test_the_backend_is_bound_once_and_its_life_cycle_runs_around_the_runtimes_own_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backend = _Backend(leader=True)
    built = _built(monkeypatch, backend)
    assert backend.bound_with is not None
    assert built.backend == "recording" and built.readings() == "readings"
    built.start()
    built.stop()
    assert backend.steps == [
        "schema",
        "connect",  # reaches the cluster and checks the secret before anything loads
        "warn",
        "start",
        "leadership.start",
        "leadership.stop",
        "stop",
    ]


def test_the_leader_does_the_backends_chores_and_those_every_backend_has(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = _Backend(leader=True)
    _built(monkeypatch, backend, audit_retention_days=30)
    (leadership,) = backend.leaderships
    names: list[str] = []
    started = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda thread: names.append(thread.name))
    monkeypatch.setattr(threading.Thread, "join", lambda thread, timeout=None: None)
    leadership.duty(threading.Event())
    monkeypatch.setattr(threading.Thread, "start", started)
    assert names == ["own-chore", "lockout-cleaner", "audit-retention"]


def test_a_backend_without_a_leadership_runs_no_election(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = _Backend(leader=False)
    built = _built(monkeypatch, backend)
    built.start()
    built.stop()
    assert backend.leaderships == []
    assert backend.steps == ["schema", "connect", "warn", "start", "stop"]


def test_the_composition_root_leaves_the_kafka_protocol_client_unimported() -> None:
    """A ZooKeeper replica never pays the Kafka-protocol client's import time: the Kafka backend's assembly is
    imported only when the settings select it (app/backends.py)."""
    code = "import sys, app.runtime; print(' '.join(sorted({name.split('.')[0] for name in sys.modules})))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "app" in loaded  # positive control
    assert not {"kafka", "kio"} & set(loaded)


class _Starting:
    """A runtime whose start waits to be let go, records its thread, and may fail."""

    def __init__(self, fails: Exception | None = None) -> None:
        self.release = threading.Event()
        self.fails = fails
        self.thread: str | None = None

    def start(self) -> None:
        self.thread = threading.current_thread().name
        assert self.release.wait(10)
        if self.fails is not None:
            raise self.fails


def test_an_early_start_runs_in_a_thread_of_its_own_and_is_awaited_until_done() -> None:
    starting = _Starting()
    early = runtime.EarlyStart(starting, metrics=object())  # type: ignore[arg-type]

    async def wait() -> object:
        waiting = asyncio.ensure_future(early.started())
        await asyncio.sleep(0.05)
        assert not waiting.done()  # the lifespan (and with it /readyz) waits for the whole start
        starting.release.set()
        return await waiting

    assert asyncio.run(wait()) is starting
    assert starting.thread == "runtime-start"


def test_what_an_early_start_raises_is_raised_where_it_is_awaited() -> None:
    starting = _Starting(fails=RuntimeError("ZooKeeper is unavailable"))
    starting.release.set()
    early = runtime.EarlyStart(starting, metrics=object())  # type: ignore[arg-type]

    with pytest.raises(RuntimeError, match="ZooKeeper is unavailable"):
        asyncio.run(early.started())
