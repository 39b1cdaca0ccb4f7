"""``/v1/audit`` ``since``/``until`` take ISO-8601 times (Z, an offset, or UTC without one) as well as epoch ms."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from fastapi.testclient import TestClient

from tests.api.backends import User


def _ids(client: TestClient, admin: User, query: str) -> list[int]:
    response = client.get(f"/v1/audit?{query}", headers=admin.basic)
    assert response.status_code == 200, response.text
    return [event["id"] for event in response.json()["events"]]


def test_iso_times_select_the_same_events_as_epoch_ms(client: TestClient, admin: User, alice: User) -> None:
    client.post("/v1/tokens", json={}, headers=alice.basic)
    newest = client.get("/v1/audit?limit=1", headers=admin.basic).json()["events"][0]
    at = datetime.fromtimestamp(newest["timestamp"] / 1000, UTC)
    plus_two = timezone(timedelta(hours=2))
    # Up to the next millisecond only: the service may write events of its own meanwhile (on KRaft, the reconciler's
    # reconstructed creates of tokens other tests left on the shared cluster), later than the newest.
    until = f"until={newest['timestamp'] + 1}"
    by_ms = _ids(client, admin, f"since={newest['timestamp']}&{until}")
    assert newest["id"] in by_ms
    iso_z = at.replace(microsecond=(at.microsecond // 1000) * 1000).isoformat().replace("+00:00", "Z")
    iso_offset = at.astimezone(plus_two).isoformat()
    assert _ids(client, admin, f"since={iso_z}&{until}") == by_ms
    assert _ids(client, admin, "since=" + iso_offset.replace("+", "%2B") + f"&{until}") == by_ms
    naive = at.replace(tzinfo=None).isoformat()
    assert _ids(client, admin, f"since={naive}&{until}") == by_ms
    later = (at + timedelta(minutes=1)).isoformat().replace("+00:00", "Z")
    assert _ids(client, admin, f"since={later}") == []
    assert newest["id"] in _ids(client, admin, f"until={later}")


def test_a_time_that_is_neither_says_what_is_allowed(client: TestClient, admin: User) -> None:
    response = client.get("/v1/audit?since=yesterday", headers=admin.basic)
    assert response.status_code == 422
    message = response.json()["message"]
    assert message.startswith("The since query parameter is not valid: must be milliseconds since the epoch")
    assert "ISO-8601" in message
