"""A replica as its own process, for tests that kill one with SIGKILL: it registers in ``replicas`` and contends
for a lease; while it leads it prints ``lead <instance> <generation>``, and ``lost <instance>`` when its duty
is told to stop. Run as ``python -m tests.integration.storage.sql.replica_process URL SERVICE_ID LEASE_MS``;
it runs until killed or until its standard input closes."""

from __future__ import annotations

import sys
import threading

from app.storage.audit.database import make_engine
from app.storage.sql.leadership import DbLeadership
from app.storage.sql.replicas import ReplicaRegistry

LEASE = "test-leadership"


def main(url: str, service_id: str, lease_ms: int) -> None:
    engine = make_engine(url)
    registry = ReplicaRegistry(engine, service_id=service_id, ttl_ms=lease_ms)
    registry.start()
    instance = registry.instance_id

    def duty(lost: threading.Event) -> None:
        term = leadership.term
        print(f"lead {instance} {term.generation if term else -1}", flush=True)
        lost.wait()
        print(f"lost {instance}", flush=True)

    leadership = DbLeadership(engine, LEASE, instance, duty, lease_ms=lease_ms)
    leadership.start()
    print(f"ready {instance}", flush=True)
    sys.stdin.read()  # the test closes it to stop this replica cleanly
    leadership.stop()
    registry.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
