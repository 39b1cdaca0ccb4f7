"""Realistic synthetic audit events for benchmarks and tests, in the layout ``kts audit-export`` writes.

    python -m bench.audit_synth --events 10000000 --out /tmp/synthetic [--days 30] [--seed 0] [--start 2026-01-05]

What the trail looks like:

- users whose activity is heavy-tailed (a Zipf-like law: a few owners hold most tokens), each calling
  from an address of their own; working hours and weekdays are busier than nights and weekends;
- a few services that create tokens for many users (KIP-373 impersonation), name themselves renewers and
  renew those tokens until close to their maximum lifetime, as a token sidecar does;
- tokens that ask for various maximum lifetimes (the server clamps to 7 days, renews by 1 day), some
  renewed, some expired by their owner, the rest removed by the sweeper after their expiry with a lag of
  up to its interval, and much longer while a leader is missing;
- the services' creates name the job they are for (``SERVICE_JOBS``), as the JVM plug-ins do; users' do not;
- refusals with Kafka's codes (63, 64, 65, 66), describes, occasional failed logins of users, and bursts
  of hundreds of failed logins from a few addresses against a few principals, which the service's
  brute-force throttle records as its first attempt plus ``throttled`` summaries of ``attempts``.

Every field follows what the service writes (``app/service``, ``app/storage/zk/sweeper.py``), ``details``
included. Generation never holds the whole trail: it walks day by day. Each day's tokens are generated
with their whole lifecycle, and the events that fall on later days are spilled to Arrow files in a
temporary directory; a day is finished once its own tokens are made (no event precedes its token), then
it is sorted by time, numbered with consecutive ids and written. So ids follow time, as in the database,
and memory holds about one day of events. The output is fixed by the seed, the count, the days and the
start.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from app.analytics.event_files import ARROW_EVENT_SCHEMA, MS_PER_DAY, partition_dirs, write_partitioned
from app.domain.audit import JOB_COLUMNS

HOUR_MS = 3_600_000
MAX_LIFETIME_MS = 7 * MS_PER_DAY  # delegation.token.max.lifetime.ms default
RENEW_MS = MS_PER_DAY  # delegation.token.expiry.time.ms default
SWEEP_INTERVAL_MS = HOUR_MS  # delegation.token.expiry.check.interval.ms default
FILE_NAME = "part-synth.parquet"

# Shares of a day's events besides token lifecycles (create, renew, expire, sweep).
DESCRIBE_SHARE = 0.07
REFUSAL_SHARE = 0.015
LOGIN_FAILURE_SHARE = 0.02
LIFECYCLE_SHARE = 1.0 - DESCRIBE_SHARE - REFUSAL_SHARE - LOGIN_FAILURE_SHARE
# Attempts of password-guessing bursts, as a share of a day's events; being throttled, they take few rows.
BURST_SHARE = 0.03
THROTTLE_WINDOW_MS = 60_000  # auth.failures.window.ms default
THROTTLE_MAX_FAILURES = 10  # auth.failures.max default

# UTC hour weights of a working day (a European and American mix) and the weekend's share of a weekday.
HOUR_WEIGHTS = np.array([2, 1, 1, 1, 1, 2, 4, 7, 10, 11, 11, 10, 9, 10, 11, 11, 10, 9, 7, 6, 5, 4, 3, 2], float)
WEEKEND_FACTOR = 0.45

REQUESTED_LIFETIMES_MS = np.array(
    [-1, HOUR_MS, 8 * HOUR_MS, MS_PER_DAY, 3 * MS_PER_DAY, 7 * MS_PER_DAY, 30 * MS_PER_DAY]
)
REQUESTED_LIFETIME_SHARES = np.array([0.35, 0.12, 0.1, 0.15, 0.1, 0.12, 0.06])

SERVICES = ("svc-stream-etl", "svc-connect", "svc-flink", "svc-airflow", "svc-ci-runner", "svc-ksql")
# The job each service's plug-in names in its creates (framework, job name), None for services that name none.
# A job is one per service, owner and day; derived from the rest, so it draws nothing from the random streams.
SERVICE_JOBS: tuple[tuple[str, str] | None, ...] = (
    ("spark", "stream-etl"),
    ("kafka-connect", "s3-sink"),
    ("flink", "sessionize"),
    ("spark", "daily-report"),
    None,
    None,
)
SUPER_USER = "admin"
REPLICAS = ("kts-0", "kts-1", "kts-2")
FIRST_NAMES = (
    "alice bob carol dave erin frank grace heidi ivan judy mallory niaj olivia peggy rupert sybil trent victor "
    "walter yvonne zoe amir bea chen dana emeka fatima goran hana igor jana kenji lena marek nora oscar priya "
    "quinn rosa sven tara umar vera wen xavier yusuf"
).split()
LAST_NAMES = (
    "smith jones garcia muller rossi kowalski nakamura silva novak ivanova dubois jensen andersen costa "
    "fischer haas kim lee martin moreau nguyen oliveira park popescu schmidt tanaka weber wong yilmaz zhang"
).split()

REASON_PASSWORD = "Invalid user name or password."
REASON_TOKEN = "Unknown, expired or invalid delegation token."
REFUSALS = (  # action, Kafka code, error name, share of refusals
    ("token.create", 65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", 0.4),
    ("token.renew", 63, "DELEGATION_TOKEN_OWNER_MISMATCH", 0.25),
    ("token.renew", 66, "DELEGATION_TOKEN_EXPIRED", 0.2),
    ("token.create", 64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", 0.15),
)

_UNSORTED_SCHEMA = pa.schema([field for field in ARROW_EVENT_SCHEMA if field.name != "id"])
_BASE64URL = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", dtype=np.uint8)
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


class SynthError(Exception):
    """The output directory cannot take the events; one line."""


@dataclass(frozen=True, slots=True)
class SynthResult:
    events: int
    tokens: int  # tokens created (succeeded creates written)
    first_ms: int
    last_ms: int
    days: int  # date partitions written


@dataclass(frozen=True)
class Population:
    """Everyone in the trail. Principal indexes: users, then services, then the super user."""

    names: pa.Array  # "User:..." per principal index
    addresses: pa.Array  # each principal's usual client address
    user_cdf: np.ndarray  # heavy-tailed activity over the users
    service_cdf: np.ndarray
    attackers: pa.Array  # addresses that brute-force logins

    @property
    def users(self) -> int:
        return len(self.user_cdf)

    @property
    def super_user(self) -> int:
        return len(self.names) - 1

    def pick_users(self, rng: np.random.Generator, count: int) -> np.ndarray:
        return np.searchsorted(self.user_cdf, rng.random(count), side="right").clip(0, self.users - 1)

    def pick_services(self, rng: np.random.Generator, count: int) -> np.ndarray:
        picked = np.searchsorted(self.service_cdf, rng.random(count), side="right").clip(0, len(SERVICES) - 1)
        return self.users + picked


def population(rng: np.random.Generator, events: int) -> Population:
    users = int(np.clip(events // 400, 50, 200_000))
    people = len(FIRST_NAMES) * len(LAST_NAMES)
    names = [
        f"User:{FIRST_NAMES[i % len(FIRST_NAMES)]}.{LAST_NAMES[(i // len(FIRST_NAMES)) % len(LAST_NAMES)]}"
        + (str(i // people) if i >= people else "")
        for i in rng.permutation(users)  # who is busiest depends on the seed, not on the alphabet
    ]
    names += [f"User:{service}" for service in SERVICES] + [f"User:{SUPER_USER}"]
    # Documentation ranges only (RFC 3849 and RFC 5737): a user's workstation, a service's pod network.
    addresses = [f"2001:db8:{i >> 16:x}:{i & 0xFFFF:x}::{rng.integers(1, 0xFFFF):x}" for i in range(users)]
    addresses += [f"2001:db8:ffff:{index:x}::10" for index in range(len(SERVICES))] + ["2001:db8:ffff:ff::1"]
    user_weights = 1.0 / np.arange(1, users + 1) ** 1.1
    service_weights = np.array([0.35, 0.25, 0.15, 0.12, 0.08, 0.05])
    attackers = [f"203.0.113.{rng.integers(2, 250)}", f"198.51.100.{rng.integers(2, 250)}", "203.0.113.66"]
    return Population(
        names=pa.array(names),
        addresses=pa.array(addresses),
        user_cdf=np.cumsum(user_weights) / user_weights.sum(),
        service_cdf=np.cumsum(service_weights) / service_weights.sum(),
        attackers=pa.array(attackers),
    )


def synthesize(
    out_dir: Path,
    *,
    events: int,
    days: int = 30,
    seed: int = 0,
    start_ms: int,
) -> SynthResult:
    """Write ``events`` events starting at the UTC day of ``start_ms``, spread over about ``days`` days."""
    if events < 1 or days < 1:
        raise ValueError("events and days must be positive")
    if out_dir.exists() and any(partition_dirs(out_dir)):
        raise SynthError(f"{out_dir} already holds date partitions; synthesize into an empty directory")
    out_dir.mkdir(parents=True, exist_ok=True)
    start = start_ms - start_ms % MS_PER_DAY
    people = population(np.random.default_rng([seed, 0]), events)
    per_token = _events_per_token(people)
    written = tokens = partitions = 0
    next_id = 1
    first_ms = last_ms = 0
    with tempfile.TemporaryDirectory(prefix=".synth-spill-", dir=out_dir) as spill_dir:
        spill = Path(spill_dir)
        for day in itertools.count():
            day_start = start + day * MS_PER_DAY
            rng = np.random.default_rng([seed, 1, day])
            budget = events / days * _day_factor(day_start)
            token_count = int(rng.poisson(budget * LIFECYCLE_SHARE / per_token))
            generated = [*_lifecycles(rng, people, day_start, token_count), *_noise(rng, people, day_start, budget)]
            today = [kept for piece, table in enumerate(generated) for kept in _route(table, day, piece, start, spill)]
            today += [_read_spilled(path) for path in sorted(spill.glob(f"{day:06d}-*.arrow"))]
            table = pa.concat_tables(today) if today else _UNSORTED_SCHEMA.empty_table()
            table = table.take(pc.sort_indices(table, [("timestamp", "ascending")]))
            table = table.slice(0, events - written)
            if table.num_rows:
                ids = pa.array(np.arange(next_id, next_id + table.num_rows, dtype=np.int64))
                write_partitioned(table.add_column(0, "id", ids), out_dir, FILE_NAME)
                first_ms = first_ms or table.column("timestamp")[0].as_py()
                last_ms = table.column("timestamp")[-1].as_py()
                next_id += table.num_rows
                written += table.num_rows
                partitions += 1
                created = pc.and_(pc.equal(table["action"], "token.create"), pc.equal(table["outcome"], "succeeded"))
                tokens += pc.sum(created).as_py() or 0
            for path in spill.glob(f"{day:06d}-*.arrow"):
                path.unlink()
            if written >= events:
                break
    return SynthResult(written, tokens, first_ms, last_ms, partitions)


def _day_factor(day_start: int) -> float:
    """A day's share of the mean day: weekends are quieter, and a week averages to 1."""
    weekday = (day_start // MS_PER_DAY + 3) % 7  # 1970-01-01 was a Thursday: 0 is Monday
    return 7 / (5 + 2 * WEEKEND_FACTOR) * (WEEKEND_FACTOR if weekday >= 5 else 1.0)


def _route(table: pa.Table, day: int, piece: int, start: int, spill: Path) -> list[pa.Table]:
    """Today's rows are returned; rows of later days go to spill files named after their day."""
    event_day = pc.divide(pc.subtract(table.column("timestamp"), start), MS_PER_DAY)
    later = pc.greater(event_day, day)
    if not pc.any(later).as_py():
        return [table]
    future = table.filter(later)
    future_days = pc.divide(pc.subtract(future.column("timestamp"), start), MS_PER_DAY).to_numpy()
    for target in np.unique(future_days):
        part = future.filter(pa.array(future_days == target))
        path = spill / f"{int(target):06d}-{day:06d}-{piece:03d}.arrow"
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, _UNSORTED_SCHEMA) as writer:
            writer.write_table(part)
    return [table.filter(pc.invert(later))]


def _read_spilled(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def _events_per_token(people: Population) -> float:
    """The mean number of lifecycle events of a token, measured on a sample, to size each day."""
    rng = np.random.default_rng(12345)
    sample = 20_000
    return sum(table.num_rows for table in _lifecycles(rng, people, 0, sample)) / sample


# --- token lifecycles ----------------------------------------------------------------------------------


def _lifecycles(rng: np.random.Generator, people: Population, day_start: int, count: int) -> list[pa.Table]:
    """Creates, renewals and ends (expire or sweep) of ``count`` tokens created on the given day."""
    if count == 0:
        return []
    created = day_start + _times_of_day(rng, count)
    owner = people.pick_users(rng, count)
    by_service = rng.random(count) < 0.35
    requester = np.where(by_service, people.pick_services(rng, count), owner)
    requested = rng.choice(REQUESTED_LIFETIMES_MS, size=count, p=REQUESTED_LIFETIME_SHARES)
    granted = np.where(requested <= 0, MAX_LIFETIME_MS, np.minimum(requested, MAX_LIFETIME_MS))
    max_ts = created + granted
    # Services renew at 60-85 % of the expiry period until near the maximum; users now and then.
    interval = (rng.uniform(0.6, 0.85, count) * RENEW_MS).astype(np.int64)
    wanted = np.where(
        by_service, rng.geometric(0.12, count), np.where(rng.random(count) < 0.3, rng.geometric(0.4, count), 0)
    )
    possible = (granted - 1) // interval
    renewals = np.minimum(wanted, possible)
    last_activity = created + renewals * interval
    expiry = np.minimum(max_ts, last_activity + RENEW_MS)
    token_ids = _token_ids(rng, count)
    renewers = pc.if_else(
        pa.array(by_service),
        pc.binary_join_element_wise('["', pc.take(people.names, pa.array(requester)), '"]', ""),
        "[]",
    )
    tables = [
        _table(
            rng,
            people,
            timestamp=created,
            action="token.create",
            principal=requester,
            owner=owner,
            requester=requester,
            token_id=token_ids,
            job=_jobs(people, day_start, owner, requester),
            details=_json(
                '{"expiryTimestamp": ',
                np.minimum(max_ts, created + RENEW_MS),
                ', "issueTimestamp": ',
                created,
                ', "maxTimestamp": ',
                max_ts,
                ', "renewers": ',
                renewers,
                ', "requestedMaxLifetimeMs": ',
                requested,
                "}",
            ),
        )
    ]
    token = np.repeat(np.arange(count), renewals)
    if len(token):
        nth = np.arange(len(token)) - np.repeat(np.cumsum(renewals) - renewals, renewals) + 1
        renewed_at = created[token] + nth * interval[token] + rng.integers(-60_000, 0, len(token))
        tables.append(
            _table(
                rng,
                people,
                timestamp=renewed_at,
                action="token.renew",
                principal=requester[token],
                owner=owner[token],
                requester=requester[token],
                token_id=pc.take(token_ids, pa.array(token)),
                details=_json(
                    '{"expiryTimestamp": ',
                    np.minimum(max_ts[token], renewed_at + RENEW_MS),
                    ', "renewTimePeriodMs": -1}',
                ),
            )
        )
    expired = rng.random(count) < np.where(by_service, 0.15, 0.4)
    at = last_activity + (rng.uniform(0.05, 0.95, count) * (expiry - last_activity)).astype(np.int64)
    by_admin = rng.random(count) < 0.03
    who = np.where(by_admin, people.super_user, requester)
    index = np.flatnonzero(expired)
    tables.append(
        _table(
            rng,
            people,
            timestamp=at[index],
            action="token.expire",
            principal=who[index],
            owner=owner[index],
            requester=requester[index],
            token_id=pc.take(token_ids, pa.array(index)),
            details=_json('{"deleted": true, "expiryTimePeriodMs": -1, "expiryTimestamp": ', at[index], "}"),
        )
    )
    # The sweeper runs every interval; while no leader is elected (3 % of tokens) removals wait for hours.
    lag = rng.integers(1, SWEEP_INTERVAL_MS, count) + np.where(
        rng.random(count) < 0.03, rng.exponential(4 * HOUR_MS, count).astype(np.int64), 0
    )
    swept = np.flatnonzero(~expired)
    swept_at = expiry[swept] + lag[swept]
    leader = np.array(REPLICAS)[(swept_at // (9 * MS_PER_DAY)) % len(REPLICAS)]
    tables.append(
        _table(
            rng,
            people,
            timestamp=swept_at,
            action="token.sweep",
            principal=None,
            owner=owner[swept],
            requester=requester[swept],
            token_id=pc.take(token_ids, pa.array(swept)),
            details=_json('{"expiryTimestamp": ', expiry[swept], ', "maxTimestamp": ', max_ts[swept], "}"),
            service_id=pa.array(leader),
            from_request=False,
        )
    )
    return tables


# --- everything else: describes, refusals, failed logins, bursts ---------------------------------------


def _noise(rng: np.random.Generator, people: Population, day_start: int, budget: float) -> list[pa.Table]:
    tables: list[pa.Table] = []
    count = int(rng.poisson(budget * DESCRIBE_SHARE))
    who = np.where(rng.random(count) < 0.3, people.pick_services(rng, count), people.pick_users(rng, count))
    returned = rng.geometric(0.3, count)
    tables.append(
        _table(
            rng,
            people,
            timestamp=day_start + _times_of_day(rng, count),
            action="token.describe",
            principal=who,
            details=_json('{"owners": null, "returned": ', returned, "}"),
        )
    )
    for action, code, name, share in REFUSALS:
        count = int(rng.poisson(budget * REFUSAL_SHARE * share))
        caller = people.pick_users(rng, count)
        if code == 65:  # for someone else without CreateTokens on them; services too, for a user not granted
            caller = np.where(rng.random(count) < 0.3, people.pick_services(rng, count), caller)
            owner = people.pick_users(rng, count)
        elif code == 63:  # someone else's token
            owner = people.pick_users(rng, count)
        else:
            owner = caller
        if action == "token.create":
            details = f'{{"error": "{name}", "renewers": [], "requestedMaxLifetimeMs": -1}}'
        else:
            details = f'{{"error": "{name}", "renewTimePeriodMs": -1}}'
        tables.append(
            _table(
                rng,
                people,
                timestamp=day_start + _times_of_day(rng, count),
                action=action,
                outcome="denied",
                principal=caller,
                owner=owner if code != 64 else caller,
                requester=caller if action == "token.create" else owner,
                token_id=_token_ids(rng, count),
                error_code=code,
                details=pa.repeat(pa.scalar(details), count),
            )
        )
    count = int(rng.poisson(budget * LOGIN_FAILURE_SHARE))
    bearer = rng.random(count) < 0.25  # a client still using an expired token
    claimed = people.pick_users(rng, count)
    tables.append(
        _table(
            rng,
            people,
            timestamp=day_start + _times_of_day(rng, count),
            action="authentication",
            outcome="denied",
            principal=np.where(bearer, -1, claimed),
            token_id=pc.if_else(pa.array(bearer), _token_ids(rng, count), pa.nulls(count, pa.string())),
            details=pc.if_else(
                pa.array(bearer),
                f'{{"reason": "{REASON_TOKEN}", "scheme": "bearer"}}',
                f'{{"reason": "{REASON_PASSWORD}", "scheme": "basic"}}',
            ),
            address=pc.take(people.addresses, pa.array(claimed)),
        )
    )
    tables += _bursts(rng, people, day_start, budget)
    return tables


def _bursts(rng: np.random.Generator, people: Population, day_start: int, budget: float) -> list[pa.Table]:
    """Password guessing: an address tries one principal hundreds of times within minutes. Recorded as the
    service's brute-force throttle records it (``app/domain/throttle.py``): the first attempt in full, the
    others as one ``throttled`` summary per window, counting the attempts refused unchecked (429) once the
    pair's failure budget is spent; the last summary when the burst has been quiet for a window."""
    attackers = len(people.attackers)
    happening = np.flatnonzero(rng.random(attackers) < 1 / attackers)  # about one burst a day
    tables = []
    for attacker in happening:
        size = max(20, int(rng.lognormal(np.log(budget * BURST_SHARE), 0.5)))
        start = day_start + int(rng.integers(0, MS_PER_DAY))
        duration = int(rng.integers(5, 40)) * 60_000
        target = people.super_user if rng.random() < 0.4 else int(people.pick_users(rng, 1)[0])
        attempts = np.sort(start + rng.integers(0, duration, size))
        rest = attempts[1:]
        _windows, firsts, counts = np.unique(
            (rest - attempts[0]) // THROTTLE_WINDOW_MS, return_index=True, return_counts=True
        )
        lasts = firsts + counts - 1
        recorded_at = rest[lasts].copy()
        recorded_at[-1] += THROTTLE_WINDOW_MS + int(rng.integers(0, THROTTLE_WINDOW_MS))
        address = people.attackers[attacker]
        for timestamps, details in (
            (attempts[:1], pa.array([f'{{"reason": "{REASON_PASSWORD}", "scheme": "basic"}}'])),
            (
                recorded_at,
                _json(
                    '{"attempts": ',
                    counts,
                    ', "firstAttemptMs": ',
                    rest[firsts],
                    ', "lastAttemptMs": ',
                    rest[lasts],
                    ', "refused": ',
                    np.maximum(0, counts - THROTTLE_MAX_FAILURES),
                    ', "throttled": true}',
                ),
            ),
        ):
            tables.append(
                _table(
                    rng,
                    people,
                    timestamp=timestamps,
                    action="authentication",
                    outcome="denied",
                    principal=np.full(len(timestamps), target),
                    details=details,
                    address=pa.repeat(address, len(timestamps)),
                )
            )
    return tables


# --- columns -------------------------------------------------------------------------------------------


def _table(
    rng: np.random.Generator,
    people: Population,
    *,
    timestamp: np.ndarray,
    action: str,
    principal: np.ndarray | None,
    details: pa.Array,
    outcome: str = "succeeded",
    owner: np.ndarray | None = None,
    requester: np.ndarray | None = None,
    token_id: pa.Array | None = None,
    error_code: int | None = None,
    service_id: pa.Array | None = None,
    address: pa.Array | None = None,
    from_request: bool = True,
    job: dict[str, pa.Array] | None = None,
) -> pa.Table:
    """One batch of events of one action; principal indexes of -1 (or None) are null; no job unless given."""
    count = len(timestamp)
    nothing = pa.nulls(count, pa.string())
    if address is None:
        address = _principals(people.addresses, principal, count) if from_request else nothing
    columns = {
        "timestamp": pa.array(np.asarray(timestamp, dtype=np.int64)),
        "action": pa.repeat(pa.scalar(action), count),
        "outcome": pa.repeat(pa.scalar(outcome), count),
        "principal": _principals(people.names, principal, count),
        "owner": _principals(people.names, owner, count),
        "token_requester": _principals(people.names, requester, count),
        "token_id": nothing if token_id is None else token_id,
        "error_code": pa.repeat(pa.scalar(error_code, pa.int32()), count),
        "service_id": pc.take(pa.array(REPLICAS), pa.array(rng.integers(0, len(REPLICAS), count)))
        if service_id is None
        else service_id,
        "request_id": _request_ids(rng, count) if from_request else nothing,
        "client_address": address,
        "details": details,
        **(job or {}),
    }
    columns |= {name: nothing for name in JOB_COLUMNS if name not in columns}
    return pa.Table.from_arrays([columns[field.name] for field in _UNSORTED_SCHEMA], schema=_UNSORTED_SCHEMA)


def _jobs(people: Population, day_start: int, owner: np.ndarray, requester: np.ndarray) -> dict[str, pa.Array]:
    """The job columns of creates: a service's job for each owner, one a day (``SERVICE_JOBS``); users name none."""
    per_principal = [None] * people.users + list(SERVICE_JOBS) + [None]
    requesters = pa.array(requester)
    framework = pc.take(pa.array([job and job[0] for job in per_principal], pa.string()), requesters)
    name = pc.take(pa.array([job and job[1] for job in per_principal], pa.string()), requesters)
    day = datetime.fromtimestamp(day_start / 1000, tz=UTC).strftime("%Y%m%d")
    job_id = pc.binary_join_element_wise(framework, pa.scalar(day), pc.cast(pa.array(owner), pa.string()), "-")
    user = pc.utf8_slice_codeunits(pc.take(people.names, pa.array(owner)), len("User:"))
    return {
        "job_framework": framework,
        "job_id": job_id,
        "job_name": name,
        "job_user": pc.if_else(pc.is_null(framework), pa.scalar(None, pa.string()), user),
    }


def _principals(names: pa.Array, index: np.ndarray | None, count: int) -> pa.Array:
    if index is None:
        return pa.nulls(count, pa.string())
    index = np.asarray(index)
    return pc.take(names, pa.array(index, mask=index < 0))


def _times_of_day(rng: np.random.Generator, count: int) -> np.ndarray:
    hours = rng.choice(24, size=count, p=HOUR_WEIGHTS / HOUR_WEIGHTS.sum())
    return hours * HOUR_MS + rng.integers(0, HOUR_MS, count)


def _json(*parts: str | np.ndarray | pa.Array) -> pa.Array:
    """Concatenate literal JSON pieces and columns (numbers are written as JSON numbers) row by row."""
    columns = [pc.cast(pa.array(part), pa.string()) if isinstance(part, np.ndarray) else part for part in parts]
    return pc.binary_join_element_wise(*columns, "")


def _token_ids(rng: np.random.Generator, count: int) -> pa.Array:
    """Kafka's token id form: 16 random bytes in base64url without padding (22 characters)."""
    raw = np.zeros((count, 18), dtype=np.uint32)
    raw[:, :16] = rng.integers(0, 256, size=(count, 16), dtype=np.uint8)
    groups = raw.reshape(count, 6, 3)
    value = (groups[..., 0] << 16) | (groups[..., 1] << 8) | groups[..., 2]
    sextets = np.stack([(value >> shift) & 63 for shift in (18, 12, 6, 0)], axis=-1).reshape(count, 24)[:, :22]
    return _strings(_BASE64URL[sextets])


def _request_ids(rng: np.random.Generator, count: int) -> pa.Array:
    """Random UUIDs as 32 hex digits, the form the service gives requests without an X-Request-ID."""
    nibbles = rng.integers(0, 16, size=(count, 32), dtype=np.uint8)
    nibbles[:, 12] = 4
    nibbles[:, 16] = 8 | (nibbles[:, 16] & 3)
    return _strings(_HEX[nibbles])


def _strings(characters: np.ndarray) -> pa.Array:
    """Rows of ASCII codes (a 2-D uint8 array) as a string array."""
    rows, width = characters.shape
    if rows == 0:
        return pa.array([], pa.string())
    return pa.array(np.ascontiguousarray(characters).view(f"S{width}").ravel()).cast(pa.string())


# --- the command ---------------------------------------------------------------------------------------


def _positive(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0")
    return value


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date such as 2026-01-05") from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.audit_synth",
        description=(
            "Write N realistic synthetic audit events into DIR in the layout kts audit-export writes: "
            "heavy-tailed owners, services impersonating users, renewals, sweeps, refusals and bursts of "
            "failed logins. The same arguments always give the same events."
        ),
    )
    parser.add_argument("--events", type=_positive, required=True, metavar="N", help="how many events")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="an empty or new directory")
    parser.add_argument("--seed", type=_seed, default=0, metavar="S", help="random seed (default 0)")
    parser.add_argument("--days", type=_positive, default=30, metavar="D", help="about how many days (default 30)")
    parser.add_argument("--start", type=_day, metavar="YYYY-MM-DD", help="first UTC day (default: D days before today)")
    return parser


def summary(result: SynthResult) -> str:
    first = datetime.fromtimestamp(result.first_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M")
    last = datetime.fromtimestamp(result.last_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M")
    return (
        f"wrote {result.events} events ({result.tokens} tokens created) in {result.days} date partitions, "
        f"{first} to {last} UTC"
    )


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.out.exists() and not args.out.is_dir():
        parser.error(f"--out: {args.out} is not a directory")
    first_day = args.start or datetime.now(UTC).date() - timedelta(days=args.days)
    start_ms = (first_day - date(1970, 1, 1)).days * MS_PER_DAY
    try:
        result = synthesize(args.out, events=args.events, days=args.days, seed=args.seed, start_ms=start_ms)
    except (SynthError, OSError) as exc:
        print(f"audit_synth: {exc}", file=sys.stderr)
        return 1
    print(summary(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
