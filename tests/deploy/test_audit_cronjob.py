"""The weekly audit report CronJob example in helm/kts/examples: valid Kubernetes (strict schema check with
``kubernetes-validate``), and its two steps are commands kts really accepts, wired to one directory."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from app.cli import audit_export, audit_report

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "helm" / "kts" / "examples" / "audit-report-cronjob.yaml"
KUBERNETES_VERSION = "1.33.0"


@pytest.fixture(scope="module")
def cronjob() -> dict[str, Any]:
    documents = [document for document in yaml.safe_load_all(EXAMPLE.read_text(encoding="utf-8")) if document]
    assert [document["kind"] for document in documents] == ["CronJob"]
    return dict(documents[0])


def pod(cronjob: dict[str, Any]) -> dict[str, Any]:
    return dict(cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"])


def kts_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kts")
    commands = parser.add_subparsers(dest="command", required=True)
    audit_export.add_parser(commands)
    audit_report.add_parser(commands)
    return parser


def report_argv(container: dict[str, Any]) -> list[str]:
    """The report's ``kts`` arguments, with each ``$(date ...)`` replaced by what it prints."""
    assert container["command"][:2] == ["/bin/sh", "-c"]
    script = container["command"][2]
    script = re.sub(r"\$\(date -u (-d '7 days ago' )?\+%Y-%m-%d\)", "2026-01-05", script)
    script = re.sub(r"\$\(date -u -d '7 days ago' \+%G-W%V\)", "2026-W02", script)
    assert "$(" not in script
    words = shlex.split(script)
    assert words[:2] == ["exec", "kts"]
    return words[2:]


def test_validates_strictly(cronjob: dict[str, Any]) -> None:
    kubernetes_validate.validate(cronjob, KUBERNETES_VERSION, strict=True)


def test_runs_weekly_one_at_a_time(cronjob: dict[str, Any]) -> None:
    minute, hour, day_of_month, month, day_of_week = cronjob["spec"]["schedule"].split()
    assert minute.isdigit() and hour.isdigit() and day_of_week.isdigit()
    assert (day_of_month, month) == ("*", "*")
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    assert pod(cronjob)["restartPolicy"] == "Never"


def test_the_export_runs_first_and_the_report_reads_what_it_wrote(cronjob: dict[str, Any]) -> None:
    spec = pod(cronjob)
    (export,) = spec["initContainers"]  # an init container: done before the report starts
    (report,) = spec["containers"]
    export_args = kts_parser().parse_args(export["args"])
    assert export_args.command == "audit-export"
    report_args = kts_parser().parse_args(report_argv(report))
    assert report_args.command == "audit-report"
    assert report_args.input == export_args.out
    assert report_args.master == "local[2]"
    assert report_args.since is not None and report_args.until is not None  # the past week, from the shell
    export_mounts = {mount["mountPath"]: mount["name"] for mount in export["volumeMounts"]}
    report_mounts = {mount["mountPath"]: mount["name"] for mount in report["volumeMounts"]}
    assert export_mounts["/data"] == report_mounts["/data"]
    assert str(export_args.out).startswith("/data/") and str(report_args.out).startswith("/data/reports/")
    volumes = {volume["name"]: volume for volume in spec["volumes"]}
    assert "persistentVolumeClaim" in volumes[export_mounts["/data"]]  # the export state must outlive the pod


def test_only_the_export_gets_database_credentials_and_no_one_the_token_secret(cronjob: dict[str, Any]) -> None:
    spec = pod(cronjob)
    (export,) = spec["initContainers"]
    (report,) = spec["containers"]
    assert export["env"] == [
        {"name": "KTS_AUDIT_DB_URL", "valueFrom": {"secretKeyRef": {"name": "kts-postgres", "key": "url"}}}
    ]
    assert all("valueFrom" not in entry for entry in report["env"])
    assert "SECRET_KEY" not in EXAMPLE.read_text(encoding="utf-8")


def test_both_steps_run_the_image_with_the_analytics_extra(cronjob: dict[str, Any]) -> None:
    spec = pod(cronjob)
    images = {container["image"] for container in (*spec["initContainers"], *spec["containers"])}
    assert images == {"kts-analytics:0.1.0"}  # audit-export needs pyarrow, which the service image lacks
    assert "kts-kafka[analytics]" in EXAMPLE.read_text(encoding="utf-8")


def test_the_spark_driver_heap_fits_the_memory_limit(cronjob: dict[str, Any]) -> None:
    (report,) = pod(cronjob)["containers"]
    env = {entry["name"]: entry.get("value") for entry in report["env"]}
    heap = re.fullmatch(r"--driver-memory (\d+)g pyspark-shell", env["PYSPARK_SUBMIT_ARGS"])
    assert heap is not None
    limit = re.fullmatch(r"(\d+)Gi", report["resources"]["limits"]["memory"])
    assert limit is not None and int(heap.group(1)) < int(limit.group(1))
    for container in (*pod(cronjob)["initContainers"], report):
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
