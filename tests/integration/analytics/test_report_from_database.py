"""The report read straight from the audit database over JDBC (Debian's SQLite and PostgreSQL drivers), with
the events written by the service's own sink, and the ``audit-report`` command run as a process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from app.analytics import sources
from app.analytics.events_schema import EVENT_COLUMNS, EVENT_SCHEMA
from app.analytics.job import run_report
from app.analytics.session import build_session
from app.analytics.sources import read_events
from app.domain.audit import Action, AuditEvent, Outcome, RequestContext
from app.domain.token_job import TokenJob
from app.storage.audit import migrations
from app.storage.audit.database import make_engine
from app.storage.audit.sink import SqlAuditLog
from tests.postgres_server import PostgresServer

T0 = 1_700_000_000_000
H = 3_600_000
D = 86_400_000
ROOT = Path(__file__).resolve().parents[3]


class SteppingClock:
    def __init__(self, now_ms: int) -> None:
        self.now = now_ms

    def now_ms(self) -> int:
        return self.now


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    existing = SparkSession.getActiveSession()
    session = build_session("local[2]", app_name="kts-analytics-integration")
    yield session
    if existing is None:  # a session another module made is that module's to stop
        session.stop()


def write_trail(db_url: str) -> None:
    """A create for another owner, a refused renew and a failed login, through the service's sink."""
    engine = make_engine(db_url)
    migrations.upgrade(engine)
    clock = SteppingClock(T0)
    log = SqlAuditLog(engine, service_id="kts-a", clock=clock)
    create = AuditEvent(
        Action.TOKEN_CREATE,
        Outcome.PENDING,
        principal="User:svc",
        owner="User:bob",
        token_requester="User:svc",
        token_id="tok-1",
        details={"requestedMaxLifetimeMs": -1, "renewers": ["User:svc"]},
        job=TokenJob(framework="spark", id="app-1", name="nächtlich", user="bob"),
    )
    event_id = log.append(create, RequestContext("req-1", "192.0.2.10"))
    assert log.complete(
        event_id, create.ended(Outcome.SUCCEEDED, issueTimestamp=T0, expiryTimestamp=T0 + D, maxTimestamp=T0 + 7 * D)
    )
    clock.now = T0 + H
    renew = AuditEvent(Action.TOKEN_RENEW, Outcome.DENIED, principal="User:eve", token_id="tok-1", error_code=65)
    log.append(renew.ended(Outcome.DENIED, error_code=65, error="DELEGATION_TOKEN_OWNER_MISMATCH"), RequestContext())
    clock.now = T0 + 2 * H
    login = AuditEvent(
        Action.AUTHENTICATION, Outcome.DENIED, principal="User:eve", details={"scheme": "basic", "reason": "bad"}
    )
    log.append(login, RequestContext("req-3", "198.51.100.7"))
    engine.dispose()


EXPECTED = [
    (
        T0,
        "token.create",
        "succeeded",
        "User:svc",
        "User:bob",
        "User:svc",
        "tok-1",
        None,
        "kts-a",
        "req-1",
        "192.0.2.10",
        "spark",
        "app-1",
        "nächtlich",
        "bob",
    ),
    (T0 + H, "token.renew", "denied", "User:eve", None, None, "tok-1", 65, "kts-a", None, None, *[None] * 4),
    (
        T0 + 2 * H,
        "authentication",
        "denied",
        "User:eve",
        None,
        None,
        None,
        None,
        "kts-a",
        "req-3",
        "198.51.100.7",
        *[None] * 4,
    ),
]
"""Each event's columns but ``id`` and ``details``, in ``EVENT_COLUMNS`` order."""


@pytest.mark.parametrize("rows_per_partition", [sources.ROWS_PER_JDBC_PARTITION, 1])
def test_read_events_over_jdbc_returns_what_the_sink_wrote(
    spark: SparkSession, any_audit_db: str, rows_per_partition: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_trail(any_audit_db)
    monkeypatch.setattr(sources, "ROWS_PER_JDBC_PARTITION", rows_per_partition)  # 1: one id range per row

    events = read_events(spark, db_url=any_audit_db)

    assert events.columns == list(EVENT_COLUMNS)
    assert [field.dataType for field in events.schema.fields] == [field.dataType for field in EVENT_SCHEMA.fields]
    compared = [column for column in EVENT_COLUMNS if column not in ("id", "details")]
    found = sorted(tuple(row[column] for column in compared) for row in events.collect())
    assert found == EXPECTED
    assert events.rdd.getNumPartitions() == (1 if rows_per_partition > 3 else 3)


def test_run_report_over_jdbc(spark: SparkSession, any_audit_db: str, tmp_path: Path) -> None:
    write_trail(any_audit_db)

    summary = run_report(spark, read_events(spark, db_url=any_audit_db), tmp_path / "out", as_of_ms=T0 + 3 * H)

    assert (summary["events"], summary["tokens_issued"], summary["impersonated_tokens"]) == (3, 1, 1)
    assert (summary["refusals"], summary["authentication_failures"]) == (1, 1)
    assert (tmp_path / "out" / "report.html").is_file()


def kts_audit_report(*argv: str) -> subprocess.CompletedProcess[str]:
    """The command as ``spark-submit`` would start it: the module file, with its own arguments."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("PYSPARK_")}
    return subprocess.run(
        [sys.executable, str(ROOT / "app" / "cli" / "audit_report.py"), *argv],
        capture_output=True,
        text=True,
        timeout=540,
        cwd=ROOT,
        env=environment | {"PYTHONPATH": str(ROOT)},
        check=False,
    )


@pytest.mark.timeout(600)  # a JVM of its own, on a machine that may be loaded
def test_the_command_reports_from_sqlite(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'audit.db'}"
    write_trail(database)

    done = kts_audit_report(
        "--db", database, "--out", str(tmp_path / "out"), "--master", "local[1]", "--as-of", "2023-11-16"
    )

    assert done.returncode == 0, done.stderr
    assert f"wrote {tmp_path / 'out'}/report.html" in done.stdout
    assert "tokens_issued: 1\n" in done.stdout
    assert "lingering_tokens: 1\n" in done.stdout  # expired at T0 + 1 d, judged at --as-of
    assert (tmp_path / "out" / "report.html").is_file()
    # Progress on stderr, phase by phase; the JVM's own notices in a log file, not here.
    assert "read 3 events in the window, 2 of them denied" in done.stderr
    assert "token_lifecycle: 1 tokens" in done.stderr
    assert "WARN" not in done.stderr and "WARNING" not in done.stderr


@pytest.mark.timeout(600)
def test_the_command_fails_in_one_line_without_the_password(postgres: PostgresServer, tmp_path: Path) -> None:
    url = f"postgresql://postgres:Sup3rS3cret@127.0.0.1:{postgres.port}/no_such_database"

    done = kts_audit_report("--db", url, "--out", str(tmp_path / "out"), "--master", "local[1]")

    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("kts: audit report failed: "), done.stderr
    assert "no_such_database" in last
    assert "Sup3rS3cret" not in done.stdout + done.stderr
