"""``KtsClient``: the service's HTTP API (docs/api.md#tokens, #acls) for the ``kts`` client commands.

Errors are translated once, here, from httpx and the service's error envelope::

    KtsClientError
    ├── RequestRefused       the service answered with an error (status, Kafka code, one-line message)
    ├── ServiceUnreachable   no answer: connection refused, DNS, TLS handshake, time-out
    └── MissingCredentials   nothing to log in with, so nothing is sent

Request bodies may carry an HMAC; it never appears in a URL, a log line or an error message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any, NotRequired, TypedDict
from urllib.parse import quote

import httpx

from app.cli.client.command_config import CommandConfig

USER_AGENT = "kts-cli"
DESCRIBE_PAGE_SIZE = 1000
AUDIT_PAGE_SIZE = 1000


class TokenJson(TypedDict):
    tokenId: str
    owner: str
    tokenRequester: str
    renewers: list[str]
    issueTimestamp: int
    expiryTimestamp: int
    maxTimestamp: int
    hmac: NotRequired[str]


class ExpiryJson(TypedDict):
    tokenId: str
    expiryTimestamp: int


class AclJson(TypedDict):
    resourceType: str
    resourceName: str
    patternType: str
    principal: str
    host: str
    operation: str
    permissionType: str


class KtsClientError(Exception):
    """Base of the client's errors; ``str()`` is one line fit for ``kts: <message>``."""


class RequestRefused(KtsClientError):
    def __init__(
        self, status: int, code: int | None, message: str, *, error: str = "", retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code  # the Kafka error code, when the refusal is a Kafka error
        self.message = message
        self.error = error  # the envelope's error name, e.g. DELEGATION_TOKEN_EXPIRED
        self.retry_after_s = retry_after_s

    @property
    def transient(self) -> bool:
        """Worth retrying as it is: the service or its ZooKeeper/database is having trouble."""
        return self.status >= 500 or self.status in (408, 409, 429)


class ServiceUnreachable(KtsClientError):
    pass


class MissingCredentials(KtsClientError):
    """No way to log in was given: every endpoint would answer 401."""


class KtsClient:
    def __init__(
        self,
        server: str,
        config: CommandConfig | None = None,
        *,
        timeout_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        auth: httpx.Auth | None = None,
    ) -> None:
        """``auth`` sets the ``Authorization`` header of each request itself (a JWT file that rotates), in place
        of the credential of ``config``."""
        config = config or CommandConfig()
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if config.authorization is not None:
            scheme, value = config.authorization
            headers["Authorization"] = f"{scheme} {value}"
        context = config.ssl_context()
        self.server = server
        self._http = httpx.Client(
            base_url=server,
            headers=headers,
            verify=context if context is not None else True,
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            transport=transport,
            auth=auth,
        )

    def __enter__(self) -> KtsClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # tokens

    def create_token(
        self, *, owner: str | None = None, renewers: Iterable[str] = (), max_lifetime_ms: int = -1
    ) -> TokenJson:
        body: dict[str, Any] = {"renewers": list(renewers), "maxLifetimeMs": max_lifetime_ms}
        if owner is not None:
            body["owner"] = owner
        result: TokenJson = self._request("POST", "/v1/tokens", json=body)
        return result

    def renew_token(self, hmac: str, renew_time_period_ms: int = -1) -> ExpiryJson:
        result: ExpiryJson = self._request(
            "POST", "/v1/tokens/renew", json={"hmac": hmac, "renewTimePeriodMs": renew_time_period_ms}
        )
        return result

    def expire_token(self, hmac: str, expiry_time_period_ms: int = -1) -> ExpiryJson:
        result: ExpiryJson = self._request(
            "POST", "/v1/tokens/expire", json={"hmac": hmac, "expiryTimePeriodMs": expiry_time_period_ms}
        )
        return result

    def revoke_tokens(self, *, owner: str | None = None, requester: str | None = None) -> list[str]:
        """Expire every token of ``owner`` and/or ``requester``; the ids of those revoked."""
        body = {key: value for key, value in (("owner", owner), ("tokenRequester", requester)) if value is not None}
        revoked: list[str] = self._request("POST", "/v1/tokens/revoke", json=body)["revoked"]
        return revoked

    def describe_tokens(self, owners: Iterable[str] | None = None) -> list[TokenJson]:
        """Every token the caller may see (all pages); ``owners`` None means no filter."""
        params: list[tuple[str, str | int]] = [("limit", DESCRIBE_PAGE_SIZE)]
        if owners is not None:
            params += [("owner", owner) for owner in owners]
        tokens: list[TokenJson] = []
        cursor: str | None = None
        while True:
            page = self._request("GET", "/v1/tokens", params=params + ([("cursor", cursor)] if cursor else []))
            tokens.extend(page["tokens"])
            cursor = page.get("nextCursor")
            if not cursor:
                return tokens

    # ACLs

    def add_acl(self, acl: AclJson) -> AclJson:
        result: AclJson = self._request("POST", "/v1/acls", json=dict(acl))
        return result

    def list_acls(self, selector: Mapping[str, str | None] | None = None) -> list[AclJson]:
        acls: list[AclJson] = self._request("GET", "/v1/acls", params=_filter(selector))["acls"]
        return acls

    def remove_acls(self, selector: Mapping[str, str | None]) -> list[AclJson]:
        deleted: list[AclJson] = self._request("DELETE", "/v1/acls", params=_filter(selector))["deleted"]
        return deleted

    # SCRAM users

    def set_credential(self, user: str, mechanism: str, password: str, iterations: int) -> dict[str, Any]:
        result: dict[str, Any] = self._request(
            "PUT",
            f"/v1/users/{_segment(user)}/credentials",
            json={"mechanism": mechanism, "password": password, "iterations": iterations},
        )
        return result

    def delete_credential(self, user: str, mechanism: str) -> dict[str, Any]:
        result: dict[str, Any] = self._request(
            "DELETE", f"/v1/users/{_segment(user)}/credentials", params={"mechanism": mechanism}
        )
        return result

    def describe_credentials(self, user: str) -> dict[str, Any]:
        result: dict[str, Any] = self._request("GET", f"/v1/users/{_segment(user)}/credentials")
        return result

    # audit

    def audit_events(self, params: Mapping[str, str | int | None], limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` events, newest first, following the cursor across pages."""
        events: list[dict[str, Any]] = []
        cursor: str | None = None
        while len(events) < limit:
            query = _filter({key: None if value is None else str(value) for key, value in params.items()})
            query["limit"] = str(min(AUDIT_PAGE_SIZE, limit - len(events)))
            if cursor:
                query["cursor"] = cursor
            page = self._request("GET", "/v1/audit", params=query)
            events.extend(page["events"])
            cursor = page.get("nextCursor")
            if not cursor:
                break
        return events

    # operations

    def readiness(self) -> dict[str, Any]:
        """``GET /readyz``'s body (a status and a reason word), whether the replica is ready (200) or not (503
        NOT_READY); no login needed."""
        try:
            response = self._http.get("/readyz")
        except httpx.TransportError as exc:
            raise ServiceUnreachable(f"cannot reach {self.server}: {_reason(exc)}") from None
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code in (200, 503) and isinstance(body, dict) and "status" in body:
            return body
        raise refusal(response)

    def cluster_status(self) -> dict[str, Any]:
        """``GET /v1/cluster/status``: what /readyz tells no stranger (needs Describe on the cluster)."""
        return dict(self._request("GET", "/v1/cluster/status"))

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise ServiceUnreachable(f"cannot reach {self.server}: {_reason(exc)}") from None
        if response.is_success:
            try:
                return response.json()
            except ValueError:
                raise RequestRefused(
                    response.status_code, None, "The service answered with something not JSON."
                ) from None
        raise refusal(response)


def refusal(response: httpx.Response) -> RequestRefused:
    """The one-line error in the service's envelope (``{"error", "message", "code"?, "details"?}``)."""
    status = response.status_code
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict) or not isinstance(body.get("message"), str):
        phrase = response.reason_phrase or "error"
        return RequestRefused(
            status, None, f"The service answered HTTP {status} {phrase}.", retry_after_s=_retry_after(response)
        )
    message = " ".join(body["message"].split())
    details = body.get("details")
    if isinstance(details, list) and details and isinstance(details[0], dict):
        # The service's message is the first detail's sentence already; an older one said only "does not validate".
        if " ".join(str(details[0].get("msg", "")).split()) != message:
            message = f"{message.rstrip('.')}: {_detail(details[0])}"
    code = body.get("code")
    return RequestRefused(
        status,
        code if isinstance(code, int) else None,
        message,
        error=str(body.get("error", "")),
        retry_after_s=_retry_after(response),
    )


def _detail(detail: Mapping[str, Any]) -> str:
    location = [str(part) for part in detail.get("loc", []) if part not in ("body", "query", "path")]
    text = " ".join(str(detail.get("msg", "invalid value")).split())
    return f"{'.'.join(location)}: {text}" if location else text


def _segment(name: str) -> str:
    """A user name as one path segment (``/`` and ``%`` included)."""
    return quote(name, safe="")


def _filter(selector: Mapping[str, str | None] | None) -> dict[str, str]:
    return {key: value for key, value in (selector or {}).items() if value is not None}


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(0.0, float(response.headers["Retry-After"]))
    except (KeyError, ValueError):
        return None


def _reason(exc: httpx.TransportError) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
