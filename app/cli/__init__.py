"""The ``kts`` command (``main.py``) by audience: ``client/`` (tokens, acls), ``sidecar/``, ``server/`` (serve, dev)."""
