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

The hop itself is the event loop's own (``run_in_executor``, on a pool of ``REQUEST_THREADS`` threads kept for these
endpoints) rather than FastAPI's (anyio's ``to_thread``, whose capacity limiter, cancel scope and ``queue.Queue``
handover cost some 90 µs of CPU more a request: bench, describe against a static page). The wrapped endpoint is a
coroutine to FastAPI, which therefore never hops itself; the endpoint's context variables (the request's id and
address, app/api/request_context.py) go with it, as with anyio. A response model is then validated on the loop (a
plain ``def`` endpoint's is validated in another hop), which costs the same CPU.

Every operation of such a route declares in the OpenAPI document that its caller authenticates (Basic or Bearer:
app/api/security_schemes.py).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from app.api.deps import DEFERRED_CALLER, DeferredCaller
from app.api.security_schemes import with_security

# As many as anyio's default limit for FastAPI's own pool: requests past that many at once wait for a thread.
REQUEST_THREADS = 40


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
    """``endpoint`` with each DeferredCaller argument authenticated, in the endpoint's thread: a coroutine that runs
    both in a thread of the request pool."""
    if inspect.iscoroutinefunction(endpoint):
        # Run on the event loop, it could not authenticate there (a password check, a ZooKeeper read).
        raise TypeError(f"{endpoint.__name__}: an AuthenticatedRoute's endpoint is a plain def")

    def authenticated_in_thread(kwargs: dict[str, Any]) -> Any:
        for name, value in kwargs.items():
            if isinstance(value, DeferredCaller):
                kwargs[name] = value.resolve()
        return endpoint(**kwargs)

    @functools.wraps(endpoint)  # FastAPI reads the endpoint's signature, name and docstring through it
    async def authenticated(**kwargs: Any) -> Any:
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(_request_pool(), context.run, authenticated_in_thread, kwargs)

    return authenticated


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _request_pool() -> ThreadPoolExecutor:
    """The threads of authenticated endpoints, started with the first request (none at import). One for the process,
    as anyio's: its threads are joined as the interpreter exits, so a request under way completes."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=REQUEST_THREADS, thread_name_prefix="kts-request")
    return _pool
