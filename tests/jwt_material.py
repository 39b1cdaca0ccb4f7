"""Workload JWTs made by the tests: signing keys from ``cryptography``, their JWK set, JWTs minted with PyJWT,
forged ones (``alg: none``, HMAC with the public key as secret), and a local HTTPS server for the JWK set."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import ssl
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from tests.tls_material import CertificateAuthority

ISSUER = "https://issuer.example"
AUDIENCE = "kts"
SPARK = "system:serviceaccount:etl:spark"


@dataclass
class JwtKey:
    kid: str
    private: Any
    algorithm: str
    declare_alg: bool = True

    @classmethod
    def rsa(cls, kid: str, bits: int = 2048, algorithm: str = "RS256") -> JwtKey:
        return cls(kid, rsa.generate_private_key(public_exponent=65537, key_size=bits), algorithm)

    @classmethod
    def ec(cls, kid: str, curve: ec.EllipticCurve | None = None, algorithm: str = "ES256") -> JwtKey:
        return cls(kid, ec.generate_private_key(curve or ec.SECP256R1()), algorithm)

    @classmethod
    def ed25519(cls, kid: str) -> JwtKey:
        return cls(kid, ed25519.Ed25519PrivateKey.generate(), "EdDSA")

    def jwk(self) -> dict[str, Any]:
        public = self.private.public_key()
        if isinstance(public, rsa.RSAPublicKey):
            data = RSAAlgorithm.to_jwk(public, as_dict=True)
        elif isinstance(public, ec.EllipticCurvePublicKey):
            data = ECAlgorithm.to_jwk(public, as_dict=True)
        else:
            data = OKPAlgorithm.to_jwk(public, as_dict=True)
        data = {**data, "kid": self.kid, "use": "sig"}
        if self.declare_alg:
            data["alg"] = self.algorithm
        return data

    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def mint(
        self, claims: dict[str, Any] | None = None, *, headers: dict[str, Any] | None = None, **overrides: Any
    ) -> str:
        payload = claims_for(**overrides) if claims is None else claims
        with warnings.catch_warnings():  # PyJWT warns when signing with a short RSA key, which some tests want
            warnings.simplefilter("ignore")
            return jwt.encode(
                payload, self.private, algorithm=self.algorithm, headers={"kid": self.kid, **(headers or {})}
            )


def claims_for(
    sub: str | None = SPARK,
    *,
    iss: str = ISSUER,
    aud: str | list[str] = AUDIENCE,
    lifetime_s: int = 3600,
    issued_s_ago: int = 0,
    **extra: Any,
) -> dict[str, Any]:
    now = int(time.time()) - issued_s_ago
    claims: dict[str, Any] = {"iss": iss, "aud": aud, "iat": now, "nbf": now, "exp": now + lifetime_s, **extra}
    if sub is not None:
        claims["sub"] = sub
    return claims


def jwks(*keys: JwtKey) -> dict[str, Any]:
    return {"keys": [key.jwk() for key in keys]}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def forge(header: dict[str, Any], claims: dict[str, Any], secret: bytes | None = None) -> str:
    """A JWT signed with HMAC-SHA256 under ``secret``, or unsigned (``alg: none``) without one."""
    signing_input = _b64(json.dumps(header).encode()) + "." + _b64(json.dumps(claims).encode())
    if secret is None:
        return signing_input + "."
    return signing_input + "." + _b64(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest())


@dataclass
class JwksServer:
    """An HTTPS server (certificate from the test CA) answering GET with ``document``, or 503 while ``down``."""

    document: dict[str, Any]
    ca: CertificateAuthority
    down: bool = False
    requests: int = 0
    url: str = ""
    _server: ThreadingHTTPServer | None = field(default=None, repr=False)

    def publish(self, *keys: JwtKey) -> None:
        self.document = jwks(*keys)


@contextmanager
def jwks_server(directory: Path, *keys: JwtKey) -> Iterator[JwksServer]:
    ca = CertificateAuthority(directory, name="jwks test CA")
    pair = ca.issue("jwks-server", server=True, CN="localhost")
    state = JwksServer(jwks(*keys), ca)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests += 1
            body = b'{"error": "down"}' if state.down else json.dumps(state.document).encode()
            self.send_response(503 if state.down else 200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(pair.cert), str(pair.key))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    state.url = f"https://127.0.0.1:{server.server_address[1]}/openid/v1/jwks"
    state._server = server
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def project_token(directory: Path, generation: int, token: str) -> Path:
    """Write ``token`` as the kubelet projects a service-account token: into a new timestamped directory, then
    swap the ``..data`` symlink to it; ``<directory>/kts`` points through ``..data``, so it changes at once."""
    target = directory / f"..2026_11_24_00_00_0{generation}"
    target.mkdir()
    (target / "kts").write_text(token)
    swap = directory / "..data_tmp"
    swap.symlink_to(target.name)
    swap.replace(directory / "..data")
    link = directory / "kts"
    if not link.is_symlink():
        link.symlink_to("..data/kts")
    return link
