"""User configs and their change notifications, as kafka-configs.sh writes them (``ZkData``'s
``ConfigEntityZNode`` and ``ConfigEntityChangeNotificationSequenceZNode``).

``/config/users/<sanitized name>`` holds ``{"version":1,"config":{...}}``. SCRAM credentials are entries
named after their mechanism whose value is ``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>``
(Kafka's ``ScramCredentialUtils``). Other entries (quotas) are kept untouched.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Final

from app.domain.credentials import Mechanism, ScramCredential
from app.storage.zk.sanitizer import desanitize, sanitize
from app.storage.zk.znodes.malformed import MalformedZNode


class UserConfigZNode:
    """``/config/users/<sanitized user name>``: a user's config entries."""

    ROOT: Final = "/config/users"

    @staticmethod
    def path(user_name: str) -> str:
        return f"{UserConfigZNode.ROOT}/{sanitize(user_name)}"

    @staticmethod
    def encode(config: dict[str, str]) -> bytes:
        return json.dumps({"version": 1, "config": config}, separators=(",", ":")).encode("utf-8")

    @staticmethod
    def decode(data: bytes | None) -> dict[str, str]:
        if not data:
            return {}
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise MalformedZNode("user config znode is not UTF-8 JSON") from exc
        config = doc.get("config") if isinstance(doc, dict) else None
        if not isinstance(config, dict) or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in config.items()
        ):
            raise MalformedZNode("user config znode has no string-valued config object")
        return config

    @staticmethod
    def credential_to_string(credential: ScramCredential) -> str:
        def b64(raw: bytes) -> str:
            return base64.b64encode(raw).decode("ascii")

        return (
            f"salt={b64(credential.salt)},stored_key={b64(credential.stored_key)},"
            f"server_key={b64(credential.server_key)},iterations={credential.iterations}"
        )

    @staticmethod
    def credential_from_string(text: str) -> ScramCredential:
        try:
            fields = dict(part.split("=", 1) for part in text.split(","))
            return ScramCredential(
                salt=base64.b64decode(fields["salt"], validate=True),
                stored_key=base64.b64decode(fields["stored_key"], validate=True),
                server_key=base64.b64decode(fields["server_key"], validate=True),
                iterations=int(fields["iterations"]),
            )
        except (KeyError, ValueError, binascii.Error) as exc:
            raise MalformedZNode("malformed SCRAM credential") from exc

    @staticmethod
    def credentials(config: dict[str, str]) -> dict[Mechanism, ScramCredential]:
        """The well-formed SCRAM credentials in a user's config; a malformed one is treated as absent."""
        found: dict[Mechanism, ScramCredential] = {}
        for mechanism in Mechanism:
            text = config.get(mechanism.value)
            if text is None:
                continue
            try:
                found[mechanism] = UserConfigZNode.credential_from_string(text)
            except MalformedZNode:
                continue
        return found


class ConfigChangeZNode:
    """``/config/changes/config_change_<seq>`` (persistent sequential): ``{"version":2,"entity_path":..}``
    names the config entity brokers must re-read."""

    ROOT: Final = "/config/changes"
    PREFIX: Final = f"{ROOT}/config_change_"  # ZooKeeper appends the sequence number

    @staticmethod
    def entity_path(user_name: str) -> str:
        return f"users/{sanitize(user_name)}"

    @staticmethod
    def encode(user_name: str) -> bytes:
        """The notification of a change to ``user_name``'s config."""
        doc = {"version": 2, "entity_path": ConfigChangeZNode.entity_path(user_name)}
        return json.dumps(doc, separators=(",", ":")).encode("utf-8")

    @staticmethod
    def changed_user(data: bytes) -> str | None:
        """The user whose config a notification names (``users/<name>``, or ``users/<name>/clients/<id>`` for
        a quota), or None for another entity (a topic, a client, a broker: version 1 names only topics and
        clients). MalformedZNode when it cannot be read, as a broker refuses it."""
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise MalformedZNode("config change notification is not UTF-8 JSON") from exc
        version = doc.get("version") if isinstance(doc, dict) else None
        if version == 1:
            return None
        path = doc.get("entity_path") if version == 2 else None
        if not isinstance(path, str) or not path:
            raise MalformedZNode("config change notification has neither version 1 nor a version 2 entity_path")
        entity_type, _, rest = path.partition("/")
        if entity_type != "users":
            return None
        try:
            return desanitize(rest.partition("/")[0])
        except UnicodeDecodeError as exc:
            raise MalformedZNode("config change notification names an undecodable user") from exc
