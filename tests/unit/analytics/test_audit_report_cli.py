"""``kts audit-report`` argument handling; the full command runs in tests/integration/analytics."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from app.cli import audit_report


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="kts")
    audit_report.add_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["audit-report", *argv])


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("1700000000000", 1_700_000_000_000),
        ("2023-11-14", 1_699_920_000_000),
        ("2023-11-14T22:13:20Z", 1_700_000_000_000),
        ("2023-11-14T23:13:20+01:00", 1_700_000_000_000),
        ("2023-11-14 22:13:20", 1_700_000_000_000),
    ],
)
def test_instants_are_ms_or_iso_times_in_utc(text: str, ms: int) -> None:
    assert audit_report.instant_ms(text) == ms


def test_the_subcommand_parses_and_names_its_handler(tmp_path: Path) -> None:
    args = parse(
        "--input", str(tmp_path), "--out", "hdfs://namenode/reports/w42", "--since", "2023-11-14", "--top", "5"
    )

    assert args.handler is audit_report.run
    assert args.input == tmp_path
    assert args.out == "hdfs://namenode/reports/w42"  # a URI stays text: Path would fold "//"
    assert (args.since, args.until, args.top, args.db, args.master) == (1_699_920_000_000, None, 5, None, None)


@pytest.mark.parametrize(
    "argv",
    [
        ["--out", "o"],  # no source
        ["--input", "i", "--db", "sqlite:///a.db", "--out", "o"],
        ["--input", "i"],  # no --out
        ["--input", "i", "--out", "o", "--since", "last tuesday"],
        ["--input", "i", "--out", "o", "--top", "0"],
    ],
)
def test_bad_usage_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse(*argv)
    assert exited.value.code == 2


def test_since_after_until_is_bad_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = parse(
        "--input", str(tmp_path), "--out", str(tmp_path / "o"), "--since", "2024-02-01", "--until", "2024-01-01"
    )

    assert audit_report.run(args) == 2
    assert capsys.readouterr().err == "kts: --since must be before --until\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--input", "missing-dir"], "kts: the input directory missing-dir does not exist\n"),
        (["--db", "mysql://kts:pw@db.example.com/audit"], "kts: unsupported audit database 'mysql': use "),
    ],
)
def test_unusable_sources_fail_in_one_line_before_spark_starts(
    argv: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)

    assert audit_report.run(parse(*argv, "--out", "out")) == 1

    err = capsys.readouterr().err
    assert err.startswith(message)
    assert err.count("\n") == 1
    assert "pw" not in err


def test_the_default_master_is_the_one_the_docs_give() -> None:
    docs = (Path(__file__).resolve().parents[3] / "docs" / "analytics.md").read_text(encoding="utf-8")

    assert audit_report.LOCAL_MASTER == "local[2]"
    assert f"`--master` defaults to `{audit_report.LOCAL_MASTER}`" in docs
    assert parse("--input", "i", "--out", "o").master is None  # chosen when run: spark-submit's, or the default


def test_as_of_and_verbose_parse(tmp_path: Path) -> None:
    args = parse("--input", str(tmp_path), "--out", "o", "--as-of", "2023-11-14T22:13:20Z", "--verbose")

    assert (args.as_of, args.verbose) == (1_700_000_000_000, True)
