"""Serve kts with the audit log a benchmark asks for: the configured database, or a no-op sink.

Settings come from the usual KTS_* variables; ``--audit none`` swaps in NullAuditLog, which kts serve
itself never offers (auditing is not optional in production).

With ``BENCH_STATIC_PAGE`` set to a file, ``GET /bench/static-page-in-thread`` answers that file's bytes as JSON,
read once: the no-op ceiling of describe (bench.suite), through the same server, middleware and client as a
describe, with the same answer, but none of its work. As kts's endpoints, it is a plain ``def`` served in a thread of
the authenticated routes' pool (app/api/authenticated_route.py), by the same hop: a describe writes its audit row,
durable before the answer, through a blocking database driver, so a perfect kts could not answer it from the event
loop either. ``GET /bench/static-page`` answers the same bytes from the event loop, with no hop (the ceiling
until the third round of issue 38), printed beside. ``POST /bench/noop`` is the no-op ceiling of a verify (bench.kraft,
bench.suite): a plain FastAPI endpoint as kts's own, first in the routing table, that receives and parses a JSON
body as a verify's and answers a fixed small JSON; a perfect kts could not verify with less.

With ``BENCH_PROFILE`` set to a file, every thread's CPU profile is written there at exit (bench/thread_profile.py).
With ``BENCH_GC_WATCH`` set, ``GET /bench/gc`` answers the garbage collector's pauses so far (bench/gc_watch.py).
"""

from __future__ import annotations

import argparse
import functools
import os
from pathlib import Path
from typing import Any

from app.cli.server.collector import collector_paused_for_startup


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--audit", choices=["db", "none"], required=True)
    args = parser.parse_args()
    profile = os.environ.get("BENCH_PROFILE")
    if profile:
        from bench.thread_profile import install

        install(Path(profile))
    with collector_paused_for_startup():  # as kts serve starts, its imports included
        _serve(args.audit)


def _serve(audit: str) -> None:
    from app.backends import load_settings
    from app.runtime import start_early
    from app.storage.audit.sink import NullAuditLog

    settings = load_settings()
    if audit == "db":
        from app.cli.server.serve import prepare_audit_database

        prepare_audit_database(settings)
    # As kts serve (app/cli/server/serve.py): the runtime starts before the HTTP layer is imported and built.
    early = start_early(settings, audit_log=NullAuditLog() if audit == "none" else None)
    import uvicorn

    from app.api.app import create_app
    from app.cli.server.serve import uvicorn_options

    app = create_app(settings, early=early)
    page = os.environ.get("BENCH_STATIC_PAGE")
    if page:
        _add_static_page(app, Path(page))
    _add_noop_post(app)
    if os.environ.get("BENCH_GC_WATCH"):
        _add_gc_watch(app)
    options = uvicorn_options(settings) | {"log_level": "warning", "access_log": False}
    uvicorn.run(app, **options)


STATIC_PAGE_IN_THREAD = "/bench/static-page-in-thread"


def _add_static_page(app: Any, page: Path) -> None:
    from starlette.requests import Request
    from starlette.responses import Response

    from app.api.authenticated_route import AuthenticatedRoute

    @functools.cache
    def body() -> bytes:
        return page.read_bytes()  # written by the suite once the real page is known, before the first request

    def static_page_in_thread() -> Response:
        return Response(body(), media_type="application/json")

    async def static_page(_: Request) -> Response:
        return static_page_in_thread()

    app.router.add_route("/bench/static-page", static_page, methods=["GET"])
    # Last in the routing table, as the page on the loop: each walks every route before it is found.
    app.router.routes.append(
        AuthenticatedRoute(STATIC_PAGE_IN_THREAD, static_page_in_thread, methods=["GET"], include_in_schema=False)
    )


NOOP_POST = "/bench/noop"
NOOP_ANSWER = b'{"status":"ok"}'


def _add_noop_post(app: Any) -> None:
    from fastapi import Body, Response

    from app.api.authenticated_route import AuthenticatedRoute

    # As kts's endpoints are, a plain def run in a thread of the request pool (the one hop a verify makes too, by
    # the same mechanism), the body taken and parsed by FastAPI as a verify's is (as JSON: a perfect kts could not
    # do less), a fixed answer written as bytes (as kts's model answers are: app/api/model_response.py). Body() as
    # a default, since FastAPI resolves annotations by name in the module's globals, where a local import is not.
    def noop_post(_body: dict[str, Any] = Body()) -> Response:  # noqa: B008
        return Response(NOOP_ANSWER, media_type="application/json")

    # First in the routing table: it pays no more routing than a verify (itself in the first router), rather than
    # a walk of every route.
    app.router.routes.insert(0, AuthenticatedRoute(NOOP_POST, noop_post, methods=["POST"], include_in_schema=False))


def _add_gc_watch(app: Any) -> None:
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    from bench.gc_watch import install

    watch = install()

    async def gc_counts(_: Request) -> JSONResponse:
        return JSONResponse(watch.snapshot())

    app.router.add_route("/bench/gc", gc_counts, methods=["GET"])


if __name__ == "__main__":
    main()
