"""Helpers for API tests: snapshots of the token znodes, to prove a refused request changed nothing."""

from __future__ import annotations

from kazoo.client import KazooClient

from app.storage.zk.paths import TOKEN_CHANGES, TOKENS


def token_state(raw_zk: KazooClient) -> dict[str, object]:
    """Every token znode with its data and version, and the notification names."""
    tokens = {}
    for token_id in raw_zk.get_children(TOKENS):
        data, stat = raw_zk.get(f"{TOKENS}/{token_id}")
        tokens[token_id] = (data, stat.version)
    return {"tokens": tokens, "changes": sorted(raw_zk.get_children(TOKEN_CHANGES))}


def notifications(raw_zk: KazooClient) -> list[bytes]:
    return [raw_zk.get(f"{TOKEN_CHANGES}/{name}")[0] for name in sorted(raw_zk.get_children(TOKEN_CHANGES))]
