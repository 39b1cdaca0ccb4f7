"""The verdict on one fault of the matrix: what the clients were told, against what ZooKeeper and the audit
trail hold once every replica has recovered and reconciled. One row of the fault table, and the list of
violations that fail the test.

- unexpected: an answer outside the contract (a status other than 2xx, 409 and 503, or a 503 without
  Retry-After); a 500 has its own column;
- lost: an acknowledged create whose token is missing (with no succeeded expire of it) or differs from
  the answer, an acknowledged renew whose expiry went back, an acknowledged expire whose token remains;
- orphan: a token in ZooKeeper with no succeeded ``token.create`` event;
- phantom: a succeeded ``token.create`` event whose token is neither in ZooKeeper nor expired or swept
  with a succeeded event;
- unaudited: an acknowledged request without a succeeded event carrying its request id, or a token gone
  from ZooKeeper by a sweep without a succeeded ``token.sweep`` event;
- pending: events still ``pending`` after every replica reconciled;
- expired left: tokens past their expiry or maximum still in ZooKeeper after the sweep fault.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient

from app.storage.zk.znodes import TokenZNode
from tests.e2e.fault_tools import Answer

ACTIONS = {"create": "token.create", "renew": "token.renew", "expire": "token.expire"}
EXPECTED_STATUSES = {200, 201, 409, 503}  # 503 with Retry-After: unavailable; 409: a compare-and-set race lost
EXAMPLES = 5


@dataclass(frozen=True)
class AuditRow:
    id: int
    action: str
    outcome: str
    token_id: str | None
    request_id: str | None
    service_id: str


def read_audit(database_url: str) -> list[AuditRow]:
    """The token events, straight from the audit database (the API would page and audit the reads)."""
    import psycopg

    with psycopg.connect(database_url) as connection:
        rows = connection.execute(
            "SELECT id, action, outcome, token_id, request_id, service_id FROM audit_events WHERE action LIKE 'token.%'"
        ).fetchall()
    return [AuditRow(*row) for row in rows]


def last_event_id(database_url: str) -> int:
    return _scalar(database_url, "SELECT coalesce(max(id), 0) FROM audit_events")


def sweepers(database_url: str, after_event_id: int) -> set[str]:
    """The service ids of replicas that recorded sweep events (pending or settled) after the given event."""
    import psycopg

    with psycopg.connect(database_url) as connection:
        rows = connection.execute(
            "SELECT DISTINCT service_id FROM audit_events WHERE action = 'token.sweep' AND id > %s", (after_event_id,)
        ).fetchall()
    return {row[0] for row in rows}


def pending_owners(database_url: str) -> set[str]:
    """The service ids of replicas with pending events: restarting them settles the events."""
    import psycopg

    with psycopg.connect(database_url) as connection:
        rows = connection.execute("SELECT DISTINCT service_id FROM audit_events WHERE outcome = 'pending'").fetchall()
    return {row[0] for row in rows}


def _scalar(database_url: str, query: str) -> int:
    import psycopg

    with psycopg.connect(database_url) as connection:
        row = connection.execute(query).fetchone()
    assert row is not None
    return int(row[0])


def read_tokens(zk: KazooClient) -> dict[str, dict[str, Any]]:
    """Every token znode's JSON, read pipelined; retried while the test's own session recovers from the
    fault (after a whole-ensemble outage it may still be reconnecting)."""

    def read() -> dict[str, dict[str, Any]]:
        ids = zk.get_children(TokenZNode.ROOT)
        reads = [zk.get_async(TokenZNode.path(token_id)) for token_id in ids]
        return {token_id: json.loads(r.get()[0]) for token_id, r in zip(ids, reads, strict=True)}

    return zk.retry(read)  # type: ignore[no-any-return]


@dataclass
class FaultRow:
    fault: str
    requests: int = 0
    acknowledged: int = 0
    unavailable: int = 0
    conflicts: int = 0
    server_errors: int = 0
    unanswered: int = 0
    unexpected: int = 0  # answers outside the contract: another status, or a 503 without Retry-After
    lost: int = 0
    orphans: int = 0
    phantoms: int = 0
    unaudited: int = 0
    pending: int = 0
    expired_left: int = 0
    recover_s: float = 0.0
    problems: list[str] = field(default_factory=list)
    _kinds: Counter[str] = field(default_factory=Counter)

    def problem(self, kind: str, message: str) -> None:
        """Count a violation in its column (when ``kind`` names one) and keep a few examples of each kind."""
        if isinstance(getattr(self, kind, None), int):
            setattr(self, kind, getattr(self, kind) + 1)
        self._kinds[kind] += 1
        if self._kinds[kind] <= EXAMPLES:
            self.problems.append(f"{kind}: {message}")
        elif self._kinds[kind] == EXAMPLES + 1:
            self.problems.append(f"{kind}: ... and more")


COLUMNS = (
    ("fault", "fault", 35),
    ("requests", "requests", 8),
    ("acknowledged", "acked", 6),
    ("unavailable", "503", 5),
    ("conflicts", "409", 4),
    ("server_errors", "500", 4),
    ("unanswered", "no answer", 9),
    ("unexpected", "unexpected", 10),
    ("lost", "lost", 4),
    ("orphans", "orphans", 7),
    ("phantoms", "phantoms", 8),
    ("unaudited", "unaudited", 9),
    ("pending", "pending", 7),
    ("expired_left", "expired left", 12),
    ("recover_s", "recover s", 9),
)


def table(rows: Iterable[FaultRow]) -> str:
    """The fault table, one row per fault; ``pending`` is counted after reconciliation."""

    def cell(value: object, width: int, first: bool) -> str:
        text = f"{value:.1f}" if isinstance(value, float) else str(value)
        return text.ljust(width) if first else text.rjust(width)

    lines = [" | ".join(cell(title, width, n == 0) for n, (_, title, width) in enumerate(COLUMNS))]
    lines.append("-+-".join("-" * width for _, _, width in COLUMNS))
    for row in rows:
        lines.append(" | ".join(cell(getattr(row, name), width, n == 0) for n, (name, _, width) in enumerate(COLUMNS)))
    return "\n".join(lines)


def judge(
    fault: str,
    answers: list[Answer],
    tokens: dict[str, dict[str, Any]],
    audit: list[AuditRow],
    *,
    now_ms: int,
    recover_s: float,
    earlier_tokens: frozenset[str] = frozenset(),
    first_event_id: int = 0,
    loaded: frozenset[str] = frozenset(),
) -> FaultRow:
    """``earlier_tokens`` and events up to ``first_event_id`` predate the fault (earlier faults' rows
    judged them); ``loaded`` are the expired tokens written straight into ZooKeeper, which must be swept."""
    row = FaultRow(fault, recover_s=recover_s)
    _answers(row, answers)
    succeeded = {(event.action, event.token_id) for event in audit if event.outcome == "succeeded"}
    audited_requests = {(event.action, event.request_id) for event in audit if event.outcome == "succeeded"}
    for event in audit:
        if event.outcome == "pending":
            row.problem("pending", f"{event.action} {event.token_id} (event {event.id} of {event.service_id})")

    created: dict[str, dict[str, Any]] = {}
    last_renewal: dict[str, int] = {}
    renew_sent: set[str] = set()
    expire_sent: set[str] = set()
    expire_acknowledged: set[str] = set()
    for answer in sorted(answers, key=lambda answer: answer.sent_at):
        if answer.acknowledged and (ACTIONS[answer.operation], answer.request_id) not in audited_requests:
            row.problem("unaudited", f"{answer.operation} {answer.token_id} (request {answer.request_id})")
        if answer.token_id is None:
            continue
        if answer.operation == "expire":
            expire_sent.add(answer.token_id)
        elif answer.operation == "renew":
            renew_sent.add(answer.token_id)
        if not answer.acknowledged:
            continue
        if answer.operation == "create":
            created[answer.token_id] = answer.body
        elif answer.operation == "renew":
            last_renewal[answer.token_id] = answer.body["expiryTimestamp"]
        else:
            expire_acknowledged.add(answer.token_id)

    for token_id, token in created.items():
        stored = tokens.get(token_id)
        if stored is None:
            if token_id not in expire_sent or ("token.expire", token_id) not in succeeded:
                row.problem("lost", f"acknowledged token {token_id} is gone without a succeeded expire")
        elif token_id in expire_acknowledged:
            row.problem("lost", f"acknowledged expire of {token_id} did not delete it")
        elif (stored["issueTimestamp"], stored["maxTimestamp"]) != (token["issueTimestamp"], token["maxTimestamp"]):
            row.problem("lost", f"token {token_id} is not the one acknowledged")
        elif stored["expiryTimestamp"] < last_renewal.get(token_id, token["expiryTimestamp"]):
            row.problem("lost", f"token {token_id} expiry went back to {stored['expiryTimestamp']}")
        elif token_id not in renew_sent and stored["expiryTimestamp"] != token["expiryTimestamp"]:
            row.problem("lost", f"token {token_id} expiry changed without a renew")

    for token_id, stored in tokens.items():
        new = token_id not in earlier_tokens and token_id not in loaded
        if new and ("token.create", token_id) not in succeeded:
            row.problem("orphans", f"token {token_id} has no succeeded create event")
        if min(stored["expiryTimestamp"], stored["maxTimestamp"]) < now_ms:
            row.problem("expired_left", f"token {token_id} is past its expiry")
    ended = {token_id for action, token_id in succeeded if action in ("token.expire", "token.sweep")}
    for event in audit:
        if event.id <= first_event_id or (event.action, event.outcome) != ("token.create", "succeeded"):
            continue
        if event.token_id not in tokens and event.token_id not in ended:
            row.problem("phantoms", f"create of {event.token_id} succeeded but the token is nowhere")
    for token_id in loaded - tokens.keys():
        if ("token.sweep", token_id) not in succeeded:
            row.problem("unaudited", f"expired token {token_id} deleted without a succeeded sweep event")
    return row


def _answers(row: FaultRow, answers: list[Answer]) -> None:
    statuses = Counter(answer.status for answer in answers)
    row.requests = len(answers)
    row.acknowledged = sum(1 for answer in answers if answer.acknowledged)
    row.unavailable = statuses[503]
    row.conflicts = statuses[409]
    row.unanswered = statuses[None]
    for answer in answers:
        where = f"{answer.operation} via {answer.replica} (request {answer.request_id})"
        if answer.status is not None and answer.status >= 500 and answer.status != 503:
            row.problem("server_errors", f"{answer.status} on {where}: {answer.body}")
        elif answer.status == 503 and not answer.retry_after:
            row.problem("unexpected", f"503 without Retry-After on {where}")
        elif answer.status is not None and answer.status not in EXPECTED_STATUSES:
            row.problem("unexpected", f"{answer.status} on {where}: {answer.body}")
