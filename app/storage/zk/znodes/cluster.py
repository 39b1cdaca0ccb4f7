"""The znodes that say which Kafka cluster lives under the chroot and who controls it (Kafka's ``ClusterIdZNode``,
``BrokerIdsZNode``, ``ControllerZNode``, ``ControllerEpochZNode`` and ``MigrationZNode`` in ``ZkData.scala``).
Brokers and KRaft controllers write them; kts only reads them (app/storage/zk/cluster_watch.py).

- ``/cluster/id``: ``{"version":"1","id":"<cluster id>"}``, created by the first broker that starts.
- ``/brokers/ids/<id>``: one ephemeral znode per broker running in ZooKeeper mode.
- ``/controller``: ``{"version":2,"brokerid":0,"timestamp":"<ms>","kraftControllerEpoch":-1}`` from a ZooKeeper
  broker (version 1 without ``kraftControllerEpoch`` before Kafka 3.4); a KRaft controller that claims the
  cluster writes its node id and its (non-negative) KRaft epoch.
- ``/controller_epoch``: the controller epoch in decimal; its znode version changes at every claim.
- ``/migration``: ``{"version":0,"kraft_controller_id":…,"kraft_controller_epoch":…,"kraft_metadata_offset":…,
  "kraft_metadata_epoch":…}``, -1 in each until a KRaft controller records its progress.
"""

from __future__ import annotations

import json
from typing import Any, Final

from app.domain.cluster_migration import ControllerRegistration, MigrationRecord
from app.storage.zk.znodes.malformed import MalformedZNode


class ClusterIdZNode:
    PATH: Final = "/cluster/id"

    @staticmethod
    def decode(data: bytes) -> str:
        cluster_id = _object(data, "/cluster/id").get("id")
        if not isinstance(cluster_id, str) or not cluster_id:
            raise MalformedZNode("/cluster/id has no id")
        return cluster_id


class BrokerIdsZNode:
    PATH: Final = "/brokers/ids"


class ControllerZNode:
    PATH: Final = "/controller"

    @staticmethod
    def decode(data: bytes) -> ControllerRegistration:
        doc = _object(data, "/controller")
        epoch = doc.get("kraftControllerEpoch")
        return ControllerRegistration(
            node_id=_integer(doc, "brokerid", "/controller"),
            kraft_controller_epoch=None if epoch is None else _integer(doc, "kraftControllerEpoch", "/controller"),
        )


class ControllerEpochZNode:
    PATH: Final = "/controller_epoch"


class MigrationZNode:
    PATH: Final = "/migration"
    VERSION: Final = 0  # the only one Kafka writes or reads

    @staticmethod
    def decode(data: bytes) -> MigrationRecord:
        doc = _object(data, "/migration")
        version = _integer(doc, "version", "/migration")
        if version != MigrationZNode.VERSION:
            raise MalformedZNode(f"/migration has version {version}; Kafka reads only {MigrationZNode.VERSION}")
        return MigrationRecord(
            kraft_controller_id=_integer(doc, "kraft_controller_id", "/migration"),
            kraft_controller_epoch=_integer(doc, "kraft_controller_epoch", "/migration"),
            kraft_metadata_offset=_integer(doc, "kraft_metadata_offset", "/migration"),
            kraft_metadata_epoch=_integer(doc, "kraft_metadata_epoch", "/migration"),
        )


def _object(data: bytes, path: str) -> dict[str, Any]:
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MalformedZNode(f"{path} is not UTF-8 JSON") from exc
    if not isinstance(doc, dict):
        raise MalformedZNode(f"{path} is not a JSON object")
    return doc


def _integer(doc: dict[str, Any], key: str, path: str) -> int:
    value = doc.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedZNode(f"{path} has no integer {key}")
    return value
