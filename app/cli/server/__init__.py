"""The server commands (``kts serve``, ``kts dev``): uvicorn with the TLS policy, logging, the embedded ZooKeeper."""
