"""``kts audit``: query the audit trail with ``/v1/audit``'s filters, newest first, as a table or JSON.

    kts audit --principal User:alice --action token.create --since 2026-11-24T00:00:00Z --limit 20
    kts audit --job-framework spark --job-id app-20261128093000-0001

The ``--job-*`` filters find the ``token.create`` events whose job (as the orchestrator's plug-in named it
in the create request) has those values; ``kts audit --token-id ID`` shows the job a token was made for.

``--since``/``--until`` take what the API takes: milliseconds since the epoch or an ISO-8601 time. Needs
Describe on the cluster, as the endpoint does.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from app.cli.client.arguments import add_connection_options, add_output_option, principal
from app.cli.client.output import plain_table, to_json
from app.cli.client.runner import run_client_command
from app.domain.audit import Action, Outcome

if TYPE_CHECKING:
    from app.cli.client.http_client import KtsClient

COLUMNS = ("ID", "TIME (UTC)", "ACTION", "OUTCOME", "PRINCIPAL", "OWNER", "TOKENID", "ERRORCODE", "CLIENT", "JOB")
# The job filters: option, /v1/audit query parameter, help.
JOB_FILTERS = (
    ("--job-framework", "jobFramework", "token creates for jobs of this framework (spark, flink, ...)"),
    ("--job-id", "jobId", "token creates for the job of this application or job id"),
    ("--job-name", "jobName", "token creates for jobs of this name"),
    ("--job-user", "jobUser", "token creates for jobs this user submitted"),
)
DEFAULT_LIMIT = 100
MAX_LIMIT = 100_000


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "audit",
        help="query the audit trail (filters of /v1/audit)",
        description="List audit events, newest first, with the filters of GET /v1/audit.",
    )
    parser.add_argument("--token-id", metavar="ID", help="events about this token")
    parser.add_argument("--principal", type=principal, metavar="PRINCIPAL", help="events of this caller")
    parser.add_argument("--action", choices=[action.value for action in Action], help="one action")
    parser.add_argument("--outcome", choices=[outcome.value for outcome in Outcome], help="one outcome")
    for option, _, what in JOB_FILTERS:
        parser.add_argument(option, metavar="TEXT", help=what)
    parser.add_argument("--since", metavar="TIME", help="from this time (ms since the epoch or ISO-8601), inclusive")
    parser.add_argument("--until", metavar="TIME", help="before this time (ms since the epoch or ISO-8601)")
    parser.add_argument(
        "--limit", type=_limit, default=DEFAULT_LIMIT, help=f"at most this many (default {DEFAULT_LIMIT})"
    )
    add_output_option(parser)
    add_connection_options(parser)
    parser.set_defaults(handler=run, usage=parser)


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= MAX_LIMIT:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_LIMIT}")
    return value


def run(args: argparse.Namespace) -> int:
    return run_client_command(args, lambda _: None, act)


def act(client: KtsClient, args: argparse.Namespace) -> str:
    filters = {
        "tokenId": args.token_id,
        "principal": args.principal,
        "action": args.action,
        "outcome": args.outcome,
        "since": args.since,
        "until": args.until,
        **{parameter: getattr(args, option[2:].replace("-", "_")) for option, parameter, _ in JOB_FILTERS},
    }
    events = client.audit_events(filters, args.limit)
    return to_json({"events": events}) if args.output == "json" else event_table(events)


def event_table(events: list[dict[str, Any]]) -> str:
    rows = [
        (
            str(event["id"]),
            datetime.fromtimestamp(event["timestamp"] / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
            event["action"],
            event["outcome"],
            event.get("principal") or "",
            event.get("owner") or "",
            event.get("tokenId") or "",
            "" if event.get("errorCode") is None else str(event["errorCode"]),
            event.get("clientAddress") or "",
            job_text(event.get("job")),
        )
        for event in events
    ]
    return plain_table(COLUMNS, rows)


def job_text(job: dict[str, Any] | None) -> str:
    """``framework:id (name) by user``, each part only when the create named it; empty without a job."""
    if not job:
        return ""
    text = ":".join(part for part in (job.get("framework"), job.get("id")) if part)
    if job.get("name"):
        text += f" ({job['name']})" if text else str(job["name"])
    if job.get("user"):
        text += f" by {job['user']}" if text else f"by {job['user']}"
    return text
