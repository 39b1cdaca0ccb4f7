"""An adapter over a private part of kazoo, fenced here: a refused SASL login must fail the session.

kazoo (2.11) handles a refused SASL login only when ZooKeeper answers AUTHFAILED. A server that enforces
authentication (``enforce.auth.enabled``) answers SESSIONCLOSEDREQUIRESASLAUTH instead, which kills kazoo's
connection thread and leaves every later request hanging. kazoo has no public hook for the SASL exchange, so
the connection handler's ``_authenticate_with_sasl`` is wrapped to turn that answer into the AuthFailedError
kazoo handles: the session becomes AUTH_FAILED and pending requests fail at once.

The wrapper also records every refusal in an event the caller keeps. The session's state cannot say it
reliably: kazoo moves from AUTH_FAILED to CLOSED at once, and ``KazooClient.start`` reports a refusal that
lands between the CONNECTED event and its own check as a time-out.

Private names relied on (tests/unit/storage/zk/test_kazoo_private_api.py fails, saying which, if kazoo
changes them; pyproject.toml keeps kazoo below the next minor version):
- ``KazooClient._connection``: the client's ``ConnectionHandler``, made in ``KazooClient.__init__``;
- ``ConnectionHandler._authenticate_with_sasl(host, timeout)``, which ``ConnectionHandler._connect`` calls
  through the instance (so an instance attribute replaces it).
"""

from __future__ import annotations

import logging
import threading

from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError, SessionClosedRequireSaslError

log = logging.getLogger(__name__)


def treat_sasl_rejection_as_auth_failure(client: KazooClient) -> threading.Event:
    """Wrap the client's SASL exchange; the event returned is set once ZooKeeper has refused the login."""
    rejected = threading.Event()
    connection = getattr(client, "_connection", None)
    authenticate = getattr(connection, "_authenticate_with_sasl", None)
    if connection is None or authenticate is None:  # a kazoo whose internals moved: serve anyway, as before
        log.warning(
            "this kazoo has no ConnectionHandler._authenticate_with_sasl: a ZooKeeper that closes the session "
            "on a refused SASL login will leave requests waiting until they time out"
        )
        return rejected

    def authenticate_or_fail(host: str, timeout: float) -> None:
        try:
            authenticate(host, timeout)
        except SessionClosedRequireSaslError as exc:
            rejected.set()
            raise AuthFailedError("ZooKeeper closed the session: SASL authentication failed") from exc
        except AuthFailedError:  # kazoo's own: an AUTHFAILED answer, or the connection dropped mid-exchange
            rejected.set()
            raise

    connection._authenticate_with_sasl = authenticate_or_fail
    return rejected
