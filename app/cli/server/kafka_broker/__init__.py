"""Real Apache Kafka brokers beside kts: their jars from Maven Central (``release``), one process (``broker``)."""
