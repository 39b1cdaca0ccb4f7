"""Who is calling: the ``Authorization`` header (Basic or Bearer) becomes a ``Caller`` or NotAuthenticated."""

from __future__ import annotations

import base64
import binascii
import re

from app.auth.basic import BasicAuthenticator
from app.domain.authorization import Caller
from app.domain.errors import InvalidInput, NotAuthenticated
from app.domain.principal import KafkaPrincipal
from app.domain.token_secret import TOKEN_ID_PATTERN, decode_hmac
from app.service.tokens import TokenService

# Enough for a long user name and password; longer headers are refused before any decoding work.
MAX_AUTHORIZATION_LENGTH = 4096
_TOKEN_ID = re.compile(TOKEN_ID_PATTERN)


class Authenticator:
    def __init__(self, basic: BasicAuthenticator, tokens: TokenService) -> None:
        self._basic = basic
        self._tokens = tokens

    def authenticate(self, authorization: str | None, host: str) -> Caller:
        if not authorization:
            raise NotAuthenticated("Authentication is required (Basic or Bearer).")
        if len(authorization) > MAX_AUTHORIZATION_LENGTH:
            raise NotAuthenticated("The Authorization header is too long.")
        scheme, _, credentials = authorization.partition(" ")
        scheme = scheme.lower()
        credentials = credentials.strip()
        if scheme == "basic":
            return self._basic_caller(credentials, host)
        if scheme == "bearer":
            return self._token_caller(credentials, host)
        raise NotAuthenticated("Unsupported authentication scheme; use Basic or Bearer.")

    def _basic_caller(self, credentials: str, host: str) -> Caller:
        try:
            decoded = base64.b64decode(credentials, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise NotAuthenticated("Malformed Basic credentials.") from None
        user_name, sep, password = decoded.partition(":")
        if not sep or not user_name or not password:
            raise NotAuthenticated("Malformed Basic credentials.")
        if not self._basic.authenticate(user_name, password):
            raise NotAuthenticated("Invalid user name or password.")
        return Caller(KafkaPrincipal.user(user_name), host=host)

    def _token_caller(self, credentials: str, host: str) -> Caller:
        token_id, sep, hmac_text = credentials.partition(":")
        if not sep or not _TOKEN_ID.fullmatch(token_id):
            raise NotAuthenticated("Bearer credentials must be <tokenId>:<base64 hmac>.")
        try:
            mac = decode_hmac(hmac_text)
        except InvalidInput:
            raise NotAuthenticated("Bearer credentials must be <tokenId>:<base64 hmac>.") from None
        token = self._tokens.verify(token_id, mac)
        if token is None:
            raise NotAuthenticated("Unknown, expired or invalid delegation token.")
        return Caller(token.authenticated_principal, host=host, token_id=token_id)
