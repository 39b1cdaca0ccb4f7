"""Serve kts with the audit log a benchmark asks for: the configured database, or a no-op sink.

Settings come from the usual KTS_* variables; ``--audit none`` swaps in NullAuditLog, which kts serve
itself never offers (auditing is not optional in production).
"""

from __future__ import annotations

import argparse

from app.cli.server.commands import collector_paused_for_startup


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--audit", choices=["db", "none"], required=True)
    args = parser.parse_args()
    with collector_paused_for_startup():  # as kts serve starts, its imports included
        _serve(args.audit)


def _serve(audit: str) -> None:
    import uvicorn

    from app.api.app import create_app
    from app.backends import load_settings
    from app.cli.server.serve import prepare_audit_database, uvicorn_options
    from app.storage.audit.sink import NullAuditLog

    settings = load_settings()
    if audit == "db":
        prepare_audit_database(settings)
    app = create_app(settings, audit_log=NullAuditLog() if audit == "none" else None)
    options = uvicorn_options(settings) | {"log_level": "warning", "access_log": False}
    uvicorn.run(app, **options)


if __name__ == "__main__":
    main()
