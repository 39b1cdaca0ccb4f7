"""``kts sidecar``: the command (options, signals), its renewal loop, its schedule and the token files it writes."""
