"""The KRaft broker (4.x) takes tokens as a Kafka client presents them. kts reaches KRaft clusters through the
Kafka protocol (its own tests); here the token is minted by Kafka's own kafka-delegation-tokens.sh."""

from __future__ import annotations

import pytest

from app.cli.client.kafka_login import Credentials
from tests.e2e.kafka.conftest import created_token
from tests.kafka.brokers import RunningBroker


@pytest.mark.kafka_matrix("token-login")
def test_a_token_made_by_kafka_delegation_tokens_sh_logs_a_java_client_in(kafka_kraft_broker: RunningBroker) -> None:
    owner = kafka_kraft_broker.new_user("kraft-owner")
    topic = kafka_kraft_broker.create_topic()
    kafka_kraft_broker.acls(
        "--add", "--allow-principal", f"User:{owner.name}", "--operation", "Write", "--operation", "Read",
        "--topic", topic,
    )  # fmt: skip
    token = created_token(kafka_kraft_broker.tokens("--create", "--max-life-time-period", "-1", user=owner).stdout)
    credentials = Credentials(token.token_id, token.hmac, token=True)
    waited = kafka_kraft_broker.wait_for_login(credentials)
    print(f"kts's Python client logged in with both mechanisms after {waited:.3f} s")
    forged = Credentials(token.token_id, ("A" if token.hmac[0] != "A" else "B") + token.hmac[1:], token=True)
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        client = kafka_kraft_broker.java_token_client(token.token_id, token.hmac, topic, mechanism)
        print(f"the Java client over {mechanism} printed:\n{client.stdout}")
        assert client.returncode == 0, client.stdout + client.stderr
        assert f"hello from token {token.token_id} over {mechanism}" in client.stdout
        answer = kafka_kraft_broker.login_error(forged, mechanism)
        print(f"a wrong HMAC over {mechanism}: {answer}")
        assert f"invalid credentials with SASL mechanism {mechanism}" in answer
