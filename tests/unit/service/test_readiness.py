"""The readiness view: each dependency's state in a few words, from probes only."""

from __future__ import annotations

from app.service.readiness import OK, Readiness
from tests.unit.fakes import FakeAuditLog


def test_every_dependency_ok() -> None:
    readiness = Readiness(lambda: True, lambda: True, lambda: True, FakeAuditLog())
    assert readiness.checks() == {"cluster": OK, "tokens": OK, "acls": OK, "audit_database": OK}


def test_each_failing_dependency_says_what_is_wrong() -> None:
    log = FakeAuditLog()
    log.down = True
    readiness = Readiness(lambda: False, lambda: False, lambda: False, log)
    assert readiness.checks() == {
        "cluster": "zookeeper connection lost (reads are served from the caches; writes are refused)",
        "tokens": "not loaded",
        "acls": "not loaded",
        "audit_database": "unreachable",
    }


def test_the_probes_are_read_at_each_check() -> None:
    connected = [False]
    readiness = Readiness(lambda: connected[0], lambda: True, lambda: True, FakeAuditLog())
    assert readiness.checks()["cluster"] != OK
    connected[0] = True
    assert readiness.checks()["cluster"] == OK
