"""The broker fixtures themselves: each is a real Kafka broker taking SCRAM logins, and refusing wrong ones."""

from __future__ import annotations

import pytest

from app.cli.client.kafka_login import Credentials
from tests.kafka.brokers import RunningBroker

pytestmark = pytest.mark.kafka  # the broker fixture is asked for by name, unseen by the marker's hook
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


def test_the_files_holding_the_secret_or_a_password_are_private(broker: RunningBroker) -> None:
    """server.properties holds delegation.token.secret.key and the broker's own password; a --command-config file
    a password."""
    config = broker.command_config()
    for path in (broker.directory / "server.properties", config):
        assert path.stat().st_mode & 0o777 == 0o600, path
    assert broker.directory.stat().st_mode & 0o077 == 0
