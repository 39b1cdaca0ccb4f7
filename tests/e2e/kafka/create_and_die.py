"""A kts replica on a real cluster that makes one token create and is killed with SIGKILL at a chosen point of
it: ``python -m tests.e2e.kafka.create_and_die SETTINGS_JSON USER KILL_POINT``. The replica is the real runtime
(build_runtime on the Kafka protocol, the audit database given); the kill is injected around the create RPC
and the requester's record. Kill points: ``before-rpc`` (the pending event written), ``after-rpc`` (the
controller made the token), ``after-record`` (who asked is recorded), ``none`` (the request completes)."""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

from app.backends import load_settings
from app.domain.authorization import Caller
from app.domain.principal import KafkaPrincipal
from app.domain.token_rules import CreateRequest
from app.runtime import build_runtime


def main(settings: dict[str, Any], user: str, kill_point: str) -> None:
    runtime = build_runtime(load_settings(**settings))
    runtime.start()
    store = runtime.tokens._store  # fault injection around the RPC and the record
    rpc = store._cluster.tokens
    requesters = store._requesters
    real_create, real_record = rpc.create, requesters.record

    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    def create(*args: Any, **kwargs: Any) -> Any:
        if kill_point == "before-rpc":
            die()
        made = real_create(*args, **kwargs)
        if kill_point == "after-rpc":
            die()
        return made

    def record(*args: Any, **kwargs: Any) -> Any:
        recorded = real_record(*args, **kwargs)
        if kill_point == "after-record":
            die()
        return recorded

    rpc.create = create
    requesters.record = record
    runtime.tokens.create(Caller(KafkaPrincipal.user(user)), CreateRequest(owner=None, renewers=(), max_lifetime_ms=-1))
    runtime.stop()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]), sys.argv[2], sys.argv[3])
