"""A random secret kept in a file of its own (mode 0600, created exclusively), the same on every start of a
``kts dev`` stack: the token secret of ``kts dev``, the passwords of ``kts dev --kraft``'s users."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def kept_secret(path: Path, length: int) -> str:
    """The secret in ``path``; a new one of ``length`` random bytes (URL-safe text) when there is none yet."""
    if not path.exists():
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_urlsafe(length))
    return path.read_text().strip()
