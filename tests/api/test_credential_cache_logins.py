"""Basic logins answered from the credential cache (app/storage/zk/credential_cache.py), over HTTP on a real
ZooKeeper with two replicas: a password changed or a user deleted through one replica, or with kafka-configs.sh
behind kts's back, counts on the other as soon as the /config/changes notification reaches it, even for a login
that both the credential cache and the verified-password cache already answered."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.domain.credentials import Mechanism
from app.domain.scram import derive
from app.storage.zk.znodes import ConfigChangeZNode, UserConfigZNode
from tests.api.conftest import ADMIN, basic
from tests.api.helpers import eventually

pytestmark = pytest.mark.only_on("zookeeper", "the credential cache follows /config/changes notifications")

SHA512 = Mechanism.SCRAM_SHA_512.value


def _logs_in(client: TestClient, user: str, password: str) -> bool:
    status = client.get("/v1/tokens", headers=basic((user, password))).status_code
    assert status in (200, 401), status
    return status == 200


def _put(client: TestClient, user: str, password: str) -> None:
    body = {"mechanism": SHA512, "password": password}
    response = client.put(f"/v1/users/{user}/credentials", json=body, headers=basic(ADMIN))
    assert response.status_code in (200, 201, 204), response.text


def test_a_password_changed_through_one_replica_counts_on_the_other(
    client: TestClient, make_client: Callable[..., TestClient]
) -> None:
    other = make_client()
    _put(client, "gina", "first-pw")
    assert _logs_in(other, "gina", "first-pw")
    assert _logs_in(other, "gina", "first-pw")  # now answered from memory

    _put(client, "gina", "second-pw")

    assert _logs_in(client, "gina", "second-pw")  # the writing replica at once
    eventually(lambda: _logs_in(other, "gina", "second-pw"))
    assert not _logs_in(other, "gina", "first-pw")
    assert not _logs_in(client, "gina", "first-pw")


def test_a_user_deleted_through_one_replica_is_refused_on_the_other(
    client: TestClient, make_client: Callable[..., TestClient]
) -> None:
    other = make_client()
    _put(client, "hugo", "hugo-pw")
    assert _logs_in(other, "hugo", "hugo-pw")

    response = client.delete(f"/v1/users/hugo/credentials?mechanism={SHA512}", headers=basic(ADMIN))
    assert response.status_code in (200, 204), response.text

    assert not _logs_in(client, "hugo", "hugo-pw")
    eventually(lambda: not _logs_in(other, "hugo", "hugo-pw"))


def test_a_password_changed_with_kafka_configs_sh_counts_on_every_replica(
    client: TestClient, make_client: Callable[..., TestClient], raw_zk: KazooClient
) -> None:
    other = make_client()
    _put(client, "ines", "old-pw")
    assert _logs_in(client, "ines", "old-pw") and _logs_in(other, "ines", "old-pw")

    # What kafka-configs.sh --alter --add-config 'SCRAM-SHA-512=[password=new-pw]' writes: the config, then the
    # change notification.
    config = {SHA512: UserConfigZNode.credential_to_string(derive(Mechanism.SCRAM_SHA_512, "new-pw", 4096))}
    raw_zk.set(UserConfigZNode.path("ines"), UserConfigZNode.encode(config))
    raw_zk.create(ConfigChangeZNode.PREFIX, ConfigChangeZNode.encode("ines"), sequence=True, makepath=True)

    for replica in (client, other):
        eventually(lambda replica=replica: _logs_in(replica, "ines", "new-pw"))
        assert not _logs_in(replica, "ines", "old-pw")


def test_a_user_deleted_with_kafka_configs_sh_is_refused_on_every_replica(
    client: TestClient, make_client: Callable[..., TestClient], raw_zk: KazooClient
) -> None:
    other = make_client()
    _put(client, "jack", "jack-pw")
    assert _logs_in(client, "jack", "jack-pw") and _logs_in(other, "jack", "jack-pw")

    raw_zk.delete(UserConfigZNode.path("jack"))
    raw_zk.create(ConfigChangeZNode.PREFIX, ConfigChangeZNode.encode("jack"), sequence=True, makepath=True)

    for replica in (client, other):
        eventually(lambda replica=replica: not _logs_in(replica, "jack", "jack-pw"))
