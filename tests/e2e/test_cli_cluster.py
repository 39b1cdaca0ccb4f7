"""``kts cluster status`` as a process against a real ``kts serve``: with a super user's or a Describe holder's
``--command-config`` it shows the cluster's details (``GET /v1/cluster/status``); without credentials only what
``/readyz`` tells anyone, and a user without Describe on the cluster is refused (exit 1, one line)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.api.conftest import ADMIN, ALICE
from tests.conftest import CLUSTER_ID
from tests.e2e.cli_helpers import one_error_line, password_config, plain_service, run_kts


@pytest.fixture
def url(zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]], tmp_path: Path) -> str:
    return plain_service(processes, tmp_path, zk_connect, raw_zk, ADMIN, ALICE)


def test_status_with_credentials_shows_the_details_and_without_only_the_status(url: str, tmp_path: Path) -> None:
    admin = password_config(tmp_path, ADMIN)
    detailed = run_kts("cluster", "status", "--server", url, "--command-config", str(admin))
    assert detailed.returncode == 0, detailed.stderr
    facts = dict(line.split(":", 1) for line in detailed.stdout.splitlines())
    assert {name: value.strip() for name, value in facts.items() if name in ("replica", "backend", "cluster id")} == {
        "replica": "ready",
        "backend": "zookeeper",
        "cluster id": CLUSTER_ID,
    }
    as_json = run_kts("cluster", "status", "--server", url, "--command-config", str(admin), "--output", "json")
    assert json.loads(as_json.stdout)["migration"]["clusterId"] == CLUSTER_ID

    anonymous = run_kts("cluster", "status", "--server", url)
    assert anonymous.returncode == 0, anonymous.stderr
    assert anonymous.stdout.splitlines()[0].split() == ["replica:", "ready"]
    assert "--command-config" in anonymous.stdout
    assert CLUSTER_ID not in anonymous.stdout and "zookeeper" not in anonymous.stdout

    refused = run_kts("cluster", "status", "--server", url, "--command-config", str(password_config(tmp_path, ALICE)))
    assert refused.returncode == 1
    assert "needs Describe on Cluster:kafka-cluster" in one_error_line(refused)
