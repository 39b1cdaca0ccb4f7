"""Entry point for ASGI servers: ``uvicorn --factory --no-proxy-headers app.main:create_app``.

``kts serve`` is the way to run kts: it adds the connection caps, the TLS policy and handshake deadline, and
believes forwarded client addresses only from ``http.trusted.proxies``. Run under uvicorn directly, keep
``--no-proxy-headers``: uvicorn otherwise takes ``X-Forwarded-For`` from 127.0.0.1 (``FORWARDED_ALLOW_IPS``) as the
client address, which the lockout, the throttle, host ACLs and the audit trail rely on.
"""

from app.api.app import create_app

__all__ = ["create_app"]
