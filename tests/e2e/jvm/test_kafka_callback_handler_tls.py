"""The callback handler reaches kts over HTTPS with the trust it is given (``kts.ssl.truststore.*``, a PEM bundle
here), and refuses a kts whose certificate it cannot verify: no token, no Kafka login, and the log says why."""

from __future__ import annotations

import json
import ssl
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from app.cli.server.embedded_zookeeper import free_port
from tests.conftest import write_properties
from tests.e2e.conftest import KTS, ROOT, kts_env
from tests.e2e.jvm.conftest import HANDLER, SCRAM, run_consumer
from tests.e2e.kafka.conftest import stop_all
from tests.jwt_material import AUDIENCE, ISSUER, JwtKey, jwks, project_token
from tests.kafka.brokers import RunningBroker
from tests.tls_material import CertificateAuthority

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(600)]


@dataclass
class HttpsKts:
    url: str
    ca: Path
    signer: JwtKey


@pytest.fixture(scope="module")
def https_kts(kafka_zk_broker: RunningBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpsKts]:
    """kts on the ZooKeeper-mode broker's chroot, serving HTTPS with a certificate of the tests' own CA."""
    directory = tmp_path_factory.mktemp("kts-https")
    ca = CertificateAuthority(directory)
    server = ca.issue("server", server=True, CN="localhost")
    signer = JwtKey.rsa("cluster-key")
    jwks_file = directory / "jwks.json"
    jwks_file.write_text(json.dumps(jwks(signer)))
    port = free_port()
    assert kafka_zk_broker.zookeeper_connect is not None
    process = subprocess.Popen(
        [*KTS, "serve"],
        cwd=ROOT,
        env=kts_env(
            KTS_ZOOKEEPER_CONNECT=kafka_zk_broker.zookeeper_connect,
            KTS_DELEGATION_TOKEN_SECRET_KEY=kafka_zk_broker.secret,
            KTS_HTTP_LISTENERS=f"https://127.0.0.1:{port}",
            KTS_SSL_CERTFILE=str(server.cert),
            KTS_SSL_KEYFILE=str(server.key),
            KTS_SASL_OAUTHBEARER_JWKS_ENDPOINT_URL=jwks_file.as_uri(),
            KTS_SASL_OAUTHBEARER_EXPECTED_ISSUER=ISSUER,
            KTS_SASL_OAUTHBEARER_EXPECTED_AUDIENCE=AUDIENCE,
        ),
        stdout=(directory / "kts.log").open("w"),
        stderr=subprocess.STDOUT,
        text=True,
    )
    processes = [process]
    try:
        url = f"https://127.0.0.1:{port}"
        context = ssl.create_default_context(cafile=str(ca.path))
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, "kts exited"
            try:
                httpx.get(f"{url}/readyz", verify=context, timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "kts's HTTPS listener did not come up"
                time.sleep(0.2)
        yield HttpsKts(url, ca.path, signer)
    finally:
        stop_all(processes)


def _client(tmp_path: Path, broker: RunningBroker, https_kts: HttpsKts, trust: str) -> tuple[str, Path]:
    sub = f"system:serviceaccount:etl:tls-{tmp_path.name[-6:]}"
    (tmp_path / "projected").mkdir()
    jwt_file = project_token(tmp_path / "projected", 1, https_kts.signer.mint(sub=sub, lifetime_s=3600))
    topic = broker.create_topic()
    broker.acls(
        "--add", "--allow-principal", f"User:{sub}", "--operation", "Read", "--operation", "Write", "--topic", topic
    )
    write_properties(
        tmp_path / "client.properties",
        {
            "bootstrap.servers": broker.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.client.callback.handler.class": HANDLER,
            "sasl.jaas.config": f'{SCRAM} required tokenauth="true" kts.url="{https_kts.url}" '
            f'kts.jwt.file="{jwt_file}" kts.first.token.timeout.ms="5000" {trust};',
        },
    )
    return topic, tmp_path / "client.properties"


def test_the_handler_trusts_kts_through_the_truststore_it_is_given(
    kafka_zk_broker: RunningBroker, https_kts: HttpsKts, kts_jvm_jar: Path, tmp_path: Path
) -> None:
    trust = f'kts.ssl.truststore.location="{https_kts.ca}" kts.ssl.truststore.type="PEM"'
    topic, config = _client(tmp_path, kafka_zk_broker, https_kts, trust)
    run = run_consumer(kafka_zk_broker, kts_jvm_jar, config, topic, tokens=1, max_lifetime_ms=0, deadline_s=120)
    print(run.stderr[-3000:])
    assert run.returncode == 0, run.events[-10:]
    assert run.of("error") == []
    assert run.of("record")


def test_a_kts_the_handler_cannot_verify_gives_no_token(
    kafka_zk_broker: RunningBroker, https_kts: HttpsKts, kts_jvm_jar: Path, tmp_path: Path
) -> None:
    topic, config = _client(tmp_path, kafka_zk_broker, https_kts, "")  # the JDK's CAs only
    run = run_consumer(kafka_zk_broker, kts_jvm_jar, config, topic, tokens=1, max_lifetime_ms=0, deadline_s=20)
    print(run.stderr[-3000:])
    assert run.returncode == 2, "it ran to its deadline"
    assert run.of("login") == [] and run.of("record") == []
    assert "SSLHandshakeException" in run.stderr
