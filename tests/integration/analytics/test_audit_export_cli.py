"""``kts audit-export`` through its own argument parser, on real SQLite and PostgreSQL databases."""

from __future__ import annotations

import argparse
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from app.cli import audit_export
from app.cli.server.embedded_zookeeper import free_port
from app.domain.audit import Action, AuditEvent, Outcome, RequestContext
from app.domain.clock import SystemClock
from app.storage.audit import migrations
from app.storage.audit.database import make_engine
from app.storage.audit.sink import SqlAuditLog
from tests.conftest import write_properties


def kts_audit_export(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="kts")
    audit_export.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["audit-export", *argv])
    return int(args.handler(args))


def audit_db_with(url: str, owners: list[str]) -> None:
    engine = make_engine(url)
    migrations.upgrade(engine)
    log = SqlAuditLog(engine, service_id="kts-0", clock=SystemClock())
    for owner in owners:
        log.append(
            AuditEvent(Action.TOKEN_CREATE, Outcome.SUCCEEDED, principal=owner, owner=owner, token_requester=owner),
            RequestContext(),
        )
    engine.dispose()


def exported_owners(out: Path) -> list[str]:
    table = ds.dataset(out, format="parquet", partitioning="hive").to_table()
    return sorted(table.column("owner").to_pylist())


def test_exports_then_adds_only_new_events(
    any_audit_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    audit_db_with(any_audit_db, ["User:a", "User:b"])
    out = tmp_path / "export"

    assert kts_audit_export("--db", any_audit_db, "--out", str(out), "--settle-seconds", "0") == 0
    first = capsys.readouterr().out.strip()
    assert first.startswith("exported 2 events (ids 1..2) into 1 date partition;")
    assert kts_audit_export("--db", any_audit_db, "--out", str(out), "--settle-seconds", "0") == 0
    assert capsys.readouterr().out.strip() == "no new events to export; 2 in total, last exported id 2"

    audit_db_with(any_audit_db, ["User:c"])
    assert kts_audit_export("--db", any_audit_db, "--out", str(out), "--settle-seconds", "0") == 0
    assert "exported 1 event (ids 3..3)" in capsys.readouterr().out
    assert exported_owners(out) == ["User:a", "User:b", "User:c"]


def test_new_events_wait_for_the_default_settle_window(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'audit.db'}"
    audit_db_with(url, ["User:a"])
    assert kts_audit_export("--db", url, "--out", str(tmp_path / "export")) == 0
    assert capsys.readouterr().out.strip() == (
        "no new events to export; 0 in total, last exported id 0; "
        "1 newer held back (pending or within the settle window)"
    )


def test_the_database_comes_from_the_service_config_without_its_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'audit.db'}"
    audit_db_with(url, ["User:a"])
    config = write_properties(tmp_path / "kts.properties", {"audit.db.url": url})  # no ZooKeeper, no secret key
    assert kts_audit_export("--config", str(config), "--out", str(tmp_path / "from-file"), "--settle-seconds", "0") == 0
    assert exported_owners(tmp_path / "from-file") == ["User:a"]

    monkeypatch.setenv("KTS_AUDIT_DB_URL", url)  # the environment, as for kts serve
    assert kts_audit_export("--out", str(tmp_path / "from-env"), "--settle-seconds", "0") == 0
    assert exported_owners(tmp_path / "from-env") == ["User:a"]


def test_a_missing_sqlite_file_is_not_created(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    absent = tmp_path / "typo.db"
    assert kts_audit_export("--db", f"sqlite:///{absent}", "--out", str(tmp_path / "export")) == 1
    assert capsys.readouterr().err == f"kts: audit.db.url: no SQLite database at {absent}\n"
    assert not absent.exists()


def test_a_database_without_the_audit_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.db"
    make_engine(f"sqlite:///{empty}").connect().close()
    assert kts_audit_export("--db", f"sqlite:///{empty}", "--out", str(tmp_path / "export")) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "has no audit_events table" in error


def test_an_unreachable_database_is_one_line_without_the_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"postgresql://kts:hunter2@127.0.0.1:{free_port()}/audit"
    assert kts_audit_export("--db", url, "--out", str(tmp_path / "export")) == 1
    error = capsys.readouterr().err
    assert error.startswith("kts: audit.db.url: cannot reach postgresql://kts:***@127.0.0.1:")
    assert error.count("\n") == 1 and "hunter2" not in error


def test_bad_usage_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert kts_audit_export("--db", "mysql://x/y", "--out", str(tmp_path)) == 2
    assert (
        capsys.readouterr().err
        == "kts: configuration error: audit.db.url: must name an SQLite or PostgreSQL database\n"
    )
    a_file = tmp_path / "file"
    a_file.write_text("", encoding="utf-8")
    for argv in (["--out", str(a_file)], ["--out", str(tmp_path), "--settle-seconds", "-1"], []):
        with pytest.raises(SystemExit) as exited:
            kts_audit_export(*argv)
        assert exited.value.code == 2
