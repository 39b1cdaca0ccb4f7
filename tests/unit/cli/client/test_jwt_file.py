"""``--jwt-file``: the Bearer header carries the JWT in the file now, read again after a kubelet-style symlink swap,
and a missing or garbled file is an error that names the file and never its content."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from app.cli.client.http_client import KtsClient
from app.cli.client.jwt_file import JwtFileAuth, JwtFileUnreadable
from tests.jwt_material import project_token

FIRST = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6ZXRsOnNwYXJrIn0.c2ln"
SECOND = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJvdGhlciJ9.c2lnMg"


def sent_headers(auth: JwtFileAuth, count: int = 1) -> list[str]:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["Authorization"])
        return httpx.Response(200, json={"tokens": [], "nextCursor": None})

    with KtsClient("http://kts.test", transport=httpx.MockTransport(handler), auth=auth) as client:
        for _ in range(count):
            client.describe_tokens()
    return seen


def test_each_request_carries_the_jwt_the_file_holds_now(tmp_path: Path) -> None:
    path = project_token(tmp_path, 1, FIRST + "\n")
    auth = JwtFileAuth(path)
    assert sent_headers(auth, 2) == [f"Bearer {FIRST}"] * 2
    assert auth.subject() == "system:serviceaccount:etl:spark"
    project_token(tmp_path, 2, SECOND)
    assert sent_headers(auth) == [f"Bearer {SECOND}"]
    assert auth.subject() == "other"


@pytest.mark.parametrize("content", ["", "not a jwt", "a.b", "é.b.c", "x" * 70_000])
def test_a_file_without_a_jwt_is_refused_without_echoing_it(tmp_path: Path, content: str) -> None:
    path = tmp_path / "token"
    path.write_text(content)
    with pytest.raises(JwtFileUnreadable) as refused:
        JwtFileAuth(path).token()
    assert str(refused.value) == f"the JWT file {path} does not hold a JWT"
    assert JwtFileAuth(path).subject() is None


def test_a_missing_file_is_unreadable(tmp_path: Path) -> None:
    with pytest.raises(JwtFileUnreadable, match="cannot read the JWT file"):
        JwtFileAuth(tmp_path / "absent").token()
