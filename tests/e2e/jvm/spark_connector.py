"""Spark's Kafka connector jars for the PySpark tests, copied once per machine from Maven Central.

``spark/pom.xml`` names them; Maven copies them into ``$XDG_CACHE_HOME/kts-spark-kafka/<version>/libs`` with the
same machinery (file lock, completion marker) as the Kafka brokers' jars.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from app.cli.server.kafka_broker.release import copy_runtime_classpath

# The newest connector Maven Central serves here; the pinned pyspark is 4.3.0 (docs/orchestrators.md#spark says
# which pairs work).
CONNECTOR_VERSION: Final = "4.2.0"
POM: Final = Path(__file__).with_name("spark") / "pom.xml"


def connector_jars(version: str = CONNECTOR_VERSION) -> list[Path]:
    """The connector's runtime jars (spark-sql-kafka, spark-token-provider-kafka, kafka-clients, commons-pool2),
    fetched on first use; KafkaUnavailable when Maven Central cannot be reached."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    libs = copy_runtime_classpath(
        POM.read_text(encoding="utf-8"),
        Path(base) / "kts-spark-kafka" / version,
        {"spark.connector.version": version},
        expect="spark-sql-kafka-0-10_2.13-*.jar",
        what=f"Spark's Kafka connector {version}",
    )
    return sorted(libs.glob("*.jar"))
