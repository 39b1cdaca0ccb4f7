"""The Kafka-protocol backend: tokens, ACLs and SCRAM users through the brokers' RPCs (KRaft clusters, and
ZooKeeper-mode brokers from Kafka 3.3 on). The only home of kafka-python and kio (docs/architecture.md)."""
