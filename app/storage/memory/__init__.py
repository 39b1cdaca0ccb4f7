"""The in-memory backend: every port of app/service/ports.py held in this process, for one replica and no
cluster (the fast test tier's HTTP edge, and stand-ins a Kafka-protocol deployment without an audit database
uses). Nothing here survives the process."""
