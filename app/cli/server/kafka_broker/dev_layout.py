"""Where a ``kts dev`` stack keeps its broker's files, so that ``kts kafka`` finds them without importing the
broker (a client command loads nothing heavy)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

DEFAULT_DATA_DIR: Final = Path(".kts-dev")  # kts dev's and kts kafka's --data-dir
ZOOKEEPER_MODE_STACK: Final = "kafka"  # kts dev --kafka's broker directory, under the data dir
KRAFT_STACK: Final = "kraft"  # kts dev --kraft's
# The admin's client properties, for a tool's --command-config (``kts kafka --admin`` passes it): written when
# start-up knows the admin's password, mode 0600 in the stack's private directory, as the secret key is.
ADMIN_CONFIG: Final = "admin.properties"
