"""The one error a znode decoder raises."""

from __future__ import annotations


class MalformedZNode(ValueError):
    """The znode's data is not in the format Kafka writes. Readers treat such a znode as absent (or empty),
    as brokers do, and say so in the log."""
