"""What replicas share in the audit database when there is no ZooKeeper to share it (a KRaft cluster): the
leader's lease, the live replicas, per-account locks, quota guards, and which HTTP caller asked for each
token kts created. PostgreSQL for several replicas, SQLite for one (docs/operations.md#replicas-without-zookeeper).
Nothing here names Kafka or ZooKeeper."""
