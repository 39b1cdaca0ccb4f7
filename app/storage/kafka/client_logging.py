"""kafka-python's log lines at the level they deserve in kts (issue 34: no ERROR or WARNING in normal operation).

kafka-python logs a connection the broker closed three times at ERROR (the transport's ``socket disconnected``
and ``Abort``, the connection's ``Connection lost``), each bootstrap retry at WARNING or ERROR, and a SASL login
over a plaintext listener at WARNING on every connection. In kts these are normal events or ones kts reports
itself, once, in its own words:

- a broker answers a refused login by closing the connection, so kts's password checks (``wire.py``) end that way
  on every wrong password: their lines go to DEBUG;
- a broker restart closes kts's own connections, which kafka-python reopens: one INFO line per lost connection
  (the transport's two lines and the metadata refresh's say the same, at DEBUG; kts's caches say it once,
  ``refresh_outage.py``);
- a start that cannot reach or log in to the brokers is named by kts (``wire.py``'s StoreUnavailable, its
  ``waiting for ...`` lines): the bootstrap retries go to INFO;
- SCRAM over SASL_PLAINTEXT sends no password, only proofs; PLAIN over it does, which kts says once at start.

Anything else kafka-python logs keeps its level (an IO loop that crashed stays an ERROR). The lines are matched by
their format string, which ``tests/unit/storage/kafka/test_client_logging.py`` checks against the installed
library.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any, Final

# (logger, the start of the format string) -> the level kts gives the line
LEVELS: Final[dict[tuple[str, str], int]] = {
    ("kafka.net.transport", "%s: socket disconnected"): logging.DEBUG,
    ("kafka.net.transport", "%s: Abort ("): logging.DEBUG,
    ("kafka.net.transport", "%s: Error receiving network data"): logging.DEBUG,
    ("kafka.net.transport", "%s: Error sending request data"): logging.DEBUG,
    ("kafka.net.transport", "%s: Closing transport"): logging.INFO,  # DEBUG for a password check
    ("kafka.net.connection", "%s: Connection closed"): logging.INFO,  # DEBUG for a password check
    ("kafka.net.connection", "%s: Connection lost: "): logging.INFO,
    ("kafka.net.connection", "%s: Request timed out after"): logging.INFO,
    # A guess from kafka-python's own table of API versions (4.3 against a 4.4.0 broker), which misleads
    # operators; kts checks the RPC versions it needs itself (wire.py's ``missing_versions``).
    ("kafka.net.connection", "%s: Broker version identified as"): logging.DEBUG,
    ("kafka.net.manager", "Bootstrap %s not ready"): logging.INFO,
    ("kafka.net.manager", "Bootstrap connection to %s failed"): logging.INFO,
    ("kafka.net.manager", "Bootstrap attempt to "): logging.INFO,
    ("kafka.net.manager", "Bootstrap failed: "): logging.INFO,
    ("kafka.net.manager", "Connection failed: "): logging.DEBUG,  # the connection's Connection lost says it
    ("kafka.cluster", "Metadata refresh: failed "): logging.DEBUG,  # likewise
    ("kafka.cluster", "No node available for metadata refresh"): logging.DEBUG,  # every retry while none is up
    ("kafka.net.sasl.scram", "Exchanging credentials in the clear"): logging.DEBUG,
    ("kafka.net.sasl.plain", "Sending username and password in the clear"): logging.DEBUG,
}
LOGGERS: Final = sorted({name for name, _ in LEVELS})

# kts's password-check connections (wire.py): their end is the answer to a login, never a failure.
_login_checks: weakref.WeakSet[Any] = weakref.WeakSet()


def mark_login_check(connection: Any) -> None:
    """Log the end of this connection (a kafka-python ``KafkaConnection``) at DEBUG: it is a password check."""
    _login_checks.add(connection)


def _is_login_check(record: logging.LogRecord) -> bool:
    args = record.args if isinstance(record.args, tuple) else ()
    if not args:
        return False
    subject = args[0]
    connection = getattr(subject, "_protocol", subject)  # a transport's records name the transport
    try:
        return connection in _login_checks
    except TypeError:  # not weak-referenceable: not one of ours
        return False


class KafkaClientLevels(logging.Filter):
    """Gives kafka-python's lines in ``LEVELS`` kts's level, and drops those that fall below the logger's."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.msg if isinstance(record.msg, str) else ""
        for (name, start), level in LEVELS.items():
            if record.name == name and message.startswith(start):
                if _is_login_check(record):
                    level = logging.DEBUG
                if level < record.levelno:
                    record.levelno, record.levelname = level, logging.getLevelName(level)
                    if level < logging.WARNING:
                        record.exc_info = record.exc_text = None  # the cause is in the message; no traceback
                break
        return record.levelno >= logging.getLogger(record.name).getEffectiveLevel()


_FILTER: Final = KafkaClientLevels()


def install() -> None:
    """Put the filter on kafka-python's loggers (idempotent; called when kts connects to the brokers)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
