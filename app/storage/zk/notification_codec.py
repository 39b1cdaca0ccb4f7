"""Change notification payloads: a token change carries the raw tokenId; a config change is versioned JSON."""

from __future__ import annotations

import json

from app.storage.zk.paths import user_entity_path


def token_change(token_id: str) -> bytes:
    return token_id.encode("utf-8")


def user_config_change(user_name: str) -> bytes:
    return json.dumps({"version": 2, "entity_path": user_entity_path(user_name)}, separators=(",", ":")).encode("utf-8")
