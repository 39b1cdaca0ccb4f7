"""Which configuration key names are Kafka's, and which unknown key is a likely misspelling of a kts key."""
