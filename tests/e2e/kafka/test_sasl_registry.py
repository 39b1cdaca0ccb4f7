"""kafka-python's SASL mechanism registry is process-wide, on the real KRaft broker: once a token mechanism is
registered under SCRAM-SHA-512, every password login of kafka-python in that process fails, kafka-python's own admin
client and kts's connection to the brokers alike, and kts refuses to start with one line naming the cause. Run in a
child process, so this test process's registry is never touched (tests/conftest.py fails any test that leaves it
changed)."""

from __future__ import annotations

import json
import subprocess
import sys

from app.domain.jaas import SCRAM_LOGIN_MODULE
from tests.e2e.conftest import ROOT
from tests.kafka.brokers import RunningBroker

CHILD = """
import json, sys
from kafka.admin import KafkaAdminClient
from kafka.net import sasl
from app.domain.errors import StoreUnavailable
from app.storage.kafka.client_config import kafka_client_security
from app.storage.kafka.sasl import ScramTokenMechanism
from app.storage.kafka.wire import KafkaWire

bootstrap, name, password, jaas = sys.argv[1:5]
security = kafka_client_security(
    security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512", sasl_jaas_config=jaas
)
seen = {}

def admin_client():
    try:
        client = KafkaAdminClient(
            bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username=name, sasl_plain_password=password, request_timeout_ms=8000,
        )
    except Exception as exc:
        return f"refused: {type(exc).__name__}"
    try:
        return "logged in: " + str(client.describe_cluster()["cluster_id"])
    finally:
        client.close()

def kts_start(check=True):
    wire = KafkaWire(bootstrap, security, request_timeout_ms=8000)
    if not check:  # what kts met before it checked the registry (fault injection in this child only)
        wire._check_own_mechanism = lambda: None
    try:
        wire.start()
    except StoreUnavailable as exc:
        return f"refused: {exc}"
    wire.stop()
    return "started"

seen["admin client, kafka-python's SCRAM"] = admin_client()
seen["kts, kafka-python's SCRAM"] = kts_start()
stock = sasl.get_sasl_mechanism("SCRAM-SHA-512")
sasl.register_sasl_mechanism("SCRAM-SHA-512", ScramTokenMechanism, overwrite=True)
seen["admin client, token mechanism registered"] = admin_client()
seen["kts unchecked, token mechanism registered"] = kts_start(check=False)
seen["kts, token mechanism registered"] = kts_start()
sasl.register_sasl_mechanism("SCRAM-SHA-512", stock, overwrite=True)
seen["kts, kafka-python's SCRAM again"] = kts_start()
print(json.dumps(seen))
"""


def test_a_token_mechanism_registered_in_a_process_breaks_its_password_logins(
    kafka_kraft_broker: RunningBroker,
) -> None:
    admin = kafka_kraft_broker.admin
    jaas = f'{SCRAM_LOGIN_MODULE} required username="{admin.name}" password="{admin.password}";'
    child = subprocess.run(
        [sys.executable, "-c", CHILD, kafka_kraft_broker.bootstrap, admin.name, admin.password, jaas],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert child.returncode == 0, child.stderr[-3000:]
    seen = json.loads(child.stdout.splitlines()[-1])
    print(json.dumps(seen, indent=2))
    # Positive controls: the same logins, with kafka-python's own SCRAM class, before and after.
    assert seen["admin client, kafka-python's SCRAM"].startswith("logged in: ")
    assert seen["kts, kafka-python's SCRAM"] == seen["kts, kafka-python's SCRAM again"] == "started"
    # The hazard: the password goes out as a token's HMAC and the broker refuses it.
    assert seen["admin client, token mechanism registered"].startswith("refused: ")
    assert seen["kts unchecked, token mechanism registered"].startswith("refused: ")
    # kts names the cause instead, before it connects.
    refused = seen["kts, token mechanism registered"]
    assert refused.startswith("refused: kafka-python's SASL mechanism SCRAM-SHA-512 was replaced in this process")
    assert "app.storage.kafka.sasl.ScramTokenMechanism" in refused and admin.password not in refused
