"""``--jwt-file PATH``: log in with the workload JWT a platform keeps in a file, as ``Authorization: Bearer <JWT>``.

The kubelet rotates a projected service-account token by writing the new one beside the old and swapping a
symlink, so the file is checked before each request (``os.stat`` follows the link: a new inode, size or mtime
means a new token) and read again when it changed. A file that cannot be read, or holds no JWT, is
``JwtFileUnreadable``: the sidecar retries it like an unreachable service, since a rotation may be under way.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import threading
from collections.abc import Generator
from pathlib import Path

import httpx

from app.cli.client.http_client import ServiceUnreachable

MAX_JWT_FILE_BYTES = 64 * 1024
_JWT = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")


class JwtFileUnreadable(ServiceUnreachable):
    """The JWT file is missing, unreadable or holds no JWT (never repeats its content)."""


class JwtFileAuth(httpx.Auth):
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int, int] | None = None
        self._token = ""

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.token()}"
        yield request

    def token(self) -> str:
        """The JWT in the file now, read again only when the file changed."""
        with self._lock:
            try:
                status = os.stat(self.path)
            except OSError as exc:
                raise JwtFileUnreadable(f"cannot read the JWT file {self.path}: {exc.strerror or exc}") from None
            seen = (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)
            if seen != self._seen:
                self._token = _read(self.path)
                self._seen = seen
            return self._token

    def subject(self) -> str | None:
        """The ``sub`` the JWT claims (unverified): the principal the service will most likely see."""
        try:
            payload = self.token().split(".")[1]
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        except (ValueError, binascii.Error, IndexError, JwtFileUnreadable):
            return None
        subject = claims.get("sub") if isinstance(claims, dict) else None
        return subject if isinstance(subject, str) and subject else None


def _read(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_JWT_FILE_BYTES + 1)
    except OSError as exc:
        raise JwtFileUnreadable(f"cannot read the JWT file {path}: {exc.strerror or exc}") from None
    try:
        token = data.decode("ascii").strip()
    except UnicodeDecodeError:
        token = ""
    if len(data) > MAX_JWT_FILE_BYTES or not _JWT.fullmatch(token):
        raise JwtFileUnreadable(f"the JWT file {path} does not hold a JWT")
    return token
