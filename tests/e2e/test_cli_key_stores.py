"""A Kafka client's file with JKS or PKCS12 trust and key stores, as it is, in ``kts tokens --command-config``
and ``kts sidecar``, against a real ``kts serve`` on https that requires client certificates."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.api.helpers import eventually
from tests.conftest import SECRET, write_properties
from tests.e2e.cli_helpers import client_env, one_error_line, run_kts, serve_https
from tests.e2e.conftest import KTS, ROOT
from tests.key_store_material import jks_keystore, jks_truststore, pkcs12_keystore, pkcs12_truststore
from tests.tls_material import CertificateAuthority

PASSWORD = "client-store-pw"


@pytest.fixture
def service(
    tmp_path: Path, zk_connect: str, processes: list[subprocess.Popen[str]]
) -> tuple[str, CertificateAuthority]:
    ca = CertificateAuthority(tmp_path)
    url = serve_https(
        processes,
        tmp_path / "kts.log",
        zk_connect,
        SECRET,
        ca,
        client_auth="required",
        mapping_rules=r"RULE:^CN=svc-(.*?),.*$/$1-service/,DEFAULT",
    )
    return url, ca


def kafka_client_file(tmp_path: Path, ca: CertificateAuthority, kind: str) -> Path:
    """The file a Kafka client on SSL would use: its stores, made by keytool (JKS) or cryptography (PKCS12)."""
    client = ca.issue(f"spark-{kind}", CN="svc-spark", O="acme")
    keystore = pkcs12_keystore(tmp_path / f"spark-{kind}.p12", client, ca, PASSWORD)
    if kind == "jks":
        keystore = jks_keystore(tmp_path / "spark.keystore.jks", keystore, PASSWORD)
        truststore = jks_truststore(tmp_path / "kafka.truststore.jks", ca, PASSWORD)
    else:
        truststore = pkcs12_truststore(tmp_path / "kafka.truststore.p12", ca, PASSWORD)
    store_type = kind.upper()
    return write_properties(
        tmp_path / f"client-{kind}.properties",
        {
            "bootstrap.servers": "kafka-1.example.com:9094",
            "security.protocol": "SSL",
            "ssl.truststore.location": str(truststore),
            "ssl.truststore.type": store_type,
            "ssl.truststore.password": PASSWORD,
            "ssl.keystore.location": str(keystore),
            "ssl.keystore.type": store_type,
            "ssl.keystore.password": PASSWORD,
            "ssl.key.password": PASSWORD,
        },
    )


@pytest.mark.parametrize("kind", ["jks", "pkcs12"])
def test_the_cli_logs_in_with_a_kafka_clients_stores(
    service: tuple[str, CertificateAuthority], tmp_path: Path, raw_zk: KazooClient, kind: str
) -> None:
    url, ca = service
    config = kafka_client_file(tmp_path, ca, kind)
    created = run_kts("tokens", "--server", url, "--command-config", str(config), "--create", "--output", "json")
    assert created.returncode == 0, created.stderr
    token = json.loads(created.stdout)
    assert token["owner"] == "User:spark-service"  # the key store's certificate, mapped by the rules
    described = run_kts("tokens", "--server", url, "--command-config", str(config), "--describe")
    assert described.returncode == 0, described.stderr
    assert token["tokenId"] in described.stdout
    for output in (created.stderr, described.stdout, described.stderr):
        assert PASSWORD not in output


def test_the_server_is_not_trusted_without_the_trust_store(
    service: tuple[str, CertificateAuthority], tmp_path: Path
) -> None:
    """Positive control: the trust store is what makes the CLI trust the test CA."""
    url, ca = service
    config = kafka_client_file(tmp_path, ca, "pkcs12")
    values = {
        line.split("=", 1)[0]: line.split("=", 1)[1]
        for line in config.read_text().splitlines()
        if "=" in line and not line.startswith("#") and not line.startswith("ssl.truststore")
    }
    untrusting = write_properties(tmp_path / "no-truststore.properties", values)
    result = run_kts("tokens", "--server", url, "--command-config", str(untrusting), "--describe")
    assert result.returncode == 1
    one_error_line(result)


def test_the_sidecar_runs_with_a_kafka_clients_jks_stores(
    service: tuple[str, CertificateAuthority], tmp_path: Path
) -> None:
    url, ca = service
    config = kafka_client_file(tmp_path, ca, "jks")
    out = tmp_path / "token.json"
    log = tmp_path / "sidecar.log"
    sidecar = subprocess.Popen(
        [*KTS, "sidecar", "--server", url, "--command-config", str(config),
         "--output-file", str(out), "--format", "json", "--expire-on-exit"],
        cwd=ROOT, env=client_env(), stdout=subprocess.DEVNULL, stderr=log.open("w"), text=True,
    )  # fmt: skip
    try:
        eventually(lambda: out.exists() and out.stat().st_size > 0, 60)
        token = json.loads(out.read_text())
        described = run_kts("tokens", "--server", url, "--command-config", str(config), "--describe")
        assert described.returncode == 0, described.stderr
        (row,) = [line for line in described.stdout.splitlines() if token["tokenId"] in line]
        assert "User:spark-service" in row
    finally:
        sidecar.send_signal(signal.SIGTERM)
        assert sidecar.wait(30) == 0, log.read_text()
    assert PASSWORD not in log.read_text()
