"""The broker fixtures themselves: each is a real Kafka broker taking SCRAM logins, and refusing wrong ones."""

from __future__ import annotations

import pytest

from app.cli.client.kafka_login import Credentials
from tests.kafka.brokers import RunningBroker

MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512"]


@pytest.fixture(params=["kafka_zk_broker", "kafka_kraft_broker"])
def broker(request: pytest.FixtureRequest) -> RunningBroker:
    return request.getfixturevalue(request.param)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_the_super_user_logs_in_and_a_wrong_password_is_refused(broker: RunningBroker, mechanism: str) -> None:
    broker.login(Credentials(broker.admin.name, broker.admin.password), mechanism)
    answer = broker.login_error(Credentials(broker.admin.name, "not-the-password"), mechanism)
    print(f"Kafka {broker.version} answered a wrong password: {answer}")
    assert f"invalid credentials with SASL mechanism {mechanism}" in answer


def test_a_new_user_runs_a_tool_and_the_super_user_describes_it(broker: RunningBroker) -> None:
    user = broker.new_user("fixture")
    created = broker.tokens("--create", "--max-life-time-period", "-1", user=user)
    assert f"User:{user.name}" in created.stdout
    described = broker.configs("--describe", "--entity-type", "users", "--entity-name", user.name)
    print(described.stdout)
    assert "SCRAM-SHA-512=iterations=4096" in described.stdout
