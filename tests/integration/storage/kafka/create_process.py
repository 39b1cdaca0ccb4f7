"""A replica's token create on a cluster without intent markers, as its own process, killed with SIGKILL at a
chosen point: ``python -m tests.integration.storage.kafka.create_process AUDIT_URL CLUSTER_FILE OWNER KILL_POINT``.

The request path is the one app/storage/kafka/cluster_audit.py describes: the pending event (through the real
``Auditor`` with ``SqlIntentMarks``), the create RPC (to the fake cluster of tests/fake_cluster.py, standing in
for the controller until the Kafka-protocol adapter is wired), the requester's row
(``SqlTokenRequesters.record``), the event's completion naming the cluster's token id. Kill points:
``before-pending`` (decided, nothing written), ``before-rpc``, ``after-rpc``, ``after-record``, and
``none`` (the request completes; the process exits normally).
"""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import replace
from pathlib import Path

from app.domain.audit import Action, AuditEvent, Outcome
from app.domain.clock import SystemClock
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_secret import new_token_id
from app.service.audit import Auditor
from app.storage.audit.database import make_engine
from app.storage.audit.sink import SqlAuditLog
from app.storage.sql.intent_marks import SqlIntentMarks
from app.storage.sql.token_requesters import SqlTokenRequesters
from tests.fake_cluster import FakeCluster

KTS = KafkaPrincipal.user("kts")
REQUESTER = "User:alice"


def main(url: str, cluster_file: str, owner: str, kill_point: str) -> None:
    def kill_if(point: str) -> None:
        if kill_point == point:
            os.kill(os.getpid(), signal.SIGKILL)

    clock = SystemClock()
    engine = make_engine(url)
    audit_log = SqlAuditLog(engine, service_id="kts-killed", clock=clock)
    requesters = SqlTokenRequesters(engine, audit_log, service_id="kts-killed")
    cluster = FakeCluster(Path(cluster_file))
    event = AuditEvent(
        Action.TOKEN_CREATE,
        Outcome.PENDING,
        principal=REQUESTER,
        owner=owner,
        token_requester=REQUESTER,
        token_id=new_token_id(),  # the service's own id: the cluster picks the real one
        details={"requestedMaxLifetimeMs": -1, "renewers": []},
    )
    kill_if("before-pending")

    def perform(intent: int) -> TokenInformation:
        kill_if("before-rpc")
        token = cluster.create(requester=KTS, owner=KafkaPrincipal.parse(owner), renewers=(KTS,))
        kill_if("after-rpc")
        requesters.record(token.token_id, requester=REQUESTER, owner=owner, event_id=intent)
        kill_if("after-record")
        return token

    Auditor(audit_log, SqlIntentMarks(engine, clock=clock)).mutation(
        event,
        perform,
        succeeded=lambda token: replace(event.ended(Outcome.SUCCEEDED), token_id=token.token_id),
    )


if __name__ == "__main__":
    main(*sys.argv[1:5])
