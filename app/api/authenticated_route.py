"""Routes whose endpoints authenticate their caller in their own thread: one hop to the thread pool per request.

FastAPI runs a plain ``def`` dependency in its thread pool, then the plain ``def`` endpoint in another hop. With
``get_caller`` such a dependency, every authenticated request paid two hops, each a handover between threads and
the event loop (under load, a wait for the interpreter lock each way). Here ``get_caller`` is ``async`` and only
answers a ``DeferredCaller``; the endpoint, wrapped, authenticates it first thing in its own thread and gets the
``Caller`` as before.

What a client sees is unchanged: FastAPI solves the dependencies and only then raises what failed validation, so
a request that is both unauthenticated and invalid was refused as unauthenticated. A request that fails after
``get_caller`` but before its endpoint runs is therefore authenticated (in the pool) before its failure is
answered, which then is the authentication's own when it fails. A body that is not JSON at all fails before any
dependency, as before, unauthenticated.

Every operation of such a route declares in the OpenAPI document that its caller authenticates (Basic or Bearer:
app/api/security_schemes.py).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from app.api.deps import DEFERRED_CALLER, DeferredCaller
from app.api.security_schemes import with_security


class AuthenticatedRoute(APIRoute):
    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        kwargs["openapi_extra"] = with_security(kwargs.get("openapi_extra"))  # the schemes its caller may use
        super().__init__(path, _authenticating(endpoint), **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def authenticated_first(request: Request) -> Response:
            try:
                return await handler(request)
            except Exception:
                deferred: DeferredCaller | None = request.scope.get(DEFERRED_CALLER)
                if deferred is not None and not deferred.attempted:
                    await run_in_threadpool(deferred.resolve)  # raises NotAuthenticated in place of the failure
                raise

        return authenticated_first


def _authenticating(endpoint: Callable[..., Any]) -> Callable[..., Any]:
    """``endpoint`` with each DeferredCaller argument authenticated, in the endpoint's thread."""
    if inspect.iscoroutinefunction(endpoint):
        # Run on the event loop, it could not authenticate there (a password check, a ZooKeeper read).
        raise TypeError(f"{endpoint.__name__}: an AuthenticatedRoute's endpoint is a plain def")

    @functools.wraps(endpoint)  # FastAPI reads the endpoint's signature, name and docstring through it
    def authenticated(*args: Any, **kwargs: Any) -> Any:
        for name, value in kwargs.items():
            if isinstance(value, DeferredCaller):
                kwargs[name] = value.resolve()
        return endpoint(*args, **kwargs)

    return authenticated
