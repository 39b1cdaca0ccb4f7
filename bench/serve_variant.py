"""Serve kts with the audit log a benchmark asks for: the configured database, or a no-op sink.

Settings come from the usual KTS_* variables; ``--audit none`` swaps in NullAuditLog, which kts serve
itself never offers (auditing is not optional in production).

With ``BENCH_STATIC_PAGE`` set to a file, ``GET /bench/static-page`` answers that file's bytes as JSON, read once:
the no-op ceiling of describe (bench.suite), through the same server, middleware and client as a describe, with
the same answer, but none of its work. With ``BENCH_PROFILE`` set to a file, every thread's CPU profile is
written there at exit (bench/thread_profile.py).
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
    options = uvicorn_options(settings) | {"log_level": "warning", "access_log": False}
    uvicorn.run(app, **options)


def _add_static_page(app: Any, page: Path) -> None:
    from starlette.requests import Request
    from starlette.responses import Response

    @functools.cache
    def body() -> bytes:
        return page.read_bytes()  # written by the suite once the real page is known, before the first request

    async def static_page(_: Request) -> Response:
        return Response(body(), media_type="application/json")

    app.router.add_route("/bench/static-page", static_page, methods=["GET"])


if __name__ == "__main__":
    main()
