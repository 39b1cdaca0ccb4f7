"""The audit report's steps as pure functions: DataFrame(s) in, DataFrame out; no reads, writes or collects.

Every function takes events in ``EVENT_SCHEMA`` (``events_schema.py``) or the output of another function
here, and is unit-tested on small hand-made DataFrames. Timestamps stay in ms since the epoch (UTC); days
are ``YYYY-MM-DD`` strings, hours are the ms of the hour's start. Everything is Spark's own expressions:
no Python UDF, no row ever visits Python.

Two sets of events take part: the *history*, every event before ``until``, and the *window*, the history
from ``since`` on. Figures count what happened in the window; facts about a token that may predate the
window (its create event, its last expiry) come from the history, so a token created last week and
renewed this week still finds its maximum lifetime.

The events are read twice, each time in one pass:

- ``overview``: every event, grouped so that what the denial tables tell apart stays apart and everything
  else collapses into one row per side of ``since`` (the span and the count). Small: the denial tables,
  ``denial_bursts`` included, and the span are built from it.
- ``token_lifecycle``: the settled token changes (create, renew, expire, sweep), the ``details`` fields
  they need read once, aggregated into one row per token. Every token figure is built from it. The job
  columns of the creates that name one are read apart (a narrow read: no ``details``) and joined back
  by the create's id.

Burst rule (``denial_bursts``): a principal's denials are counted per hour over every hour of the
observed span, hours without denials counting as zero. An hour is a burst when its count exceeds its
threshold: the mean plus ``BURST_STDDEVS`` standard deviations of the principal's *other* hours of the span
(leave-one-out, population stddev), and at least ``BURST_MIN_DENIALS - 1``. Leaving the hour out means one
spike in an otherwise quiet span is flagged, while a principal that fails at a steady rate is not. A
baseline needs ``BURST_BASELINE_HOURS`` other hours: in a shorter span no hour is judged (threshold null).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from app.analytics.events_schema import partition_date_column
from app.domain.audit import JOB_COLUMNS  # a create's job (app/domain/token_job.py)

MINUTE_MS = 60_000
HOUR_MS = 3_600_000
DAY_MS = 86_400_000

CREATE, RENEW, EXPIRE, SWEEP = "token.create", "token.renew", "token.expire", "token.sweep"
AUTHENTICATION = "authentication"
SUCCEEDED, DENIED = "succeeded", "denied"
REFUSAL = "refusal"  # the kind of a denial that is not a failed login

BURST_STDDEVS = 3.0
BURST_MIN_DENIALS = 5
BURST_BASELINE_HOURS = 24


def details_number(field: str) -> Column:
    """The integer value of the top-level ``field`` of an event's ``details``, null when absent or not an
    integer.

    ``details`` is the service's own ``json.dumps`` of a flat object, and a key followed by a colon can
    only be a key: inside a string value the quote before the colon would be escaped. So one regular
    expression finds the value, and costs about what reading the column does, where Spark's JSON parser
    (``from_json``) costs several full scans of the trail (bench/audit_report.py measured both)."""
    text = F.regexp_extract(F.col("details"), rf'"{field}"\s*:\s*(-?[0-9]{{1,19}})(?![0-9.eE])', 1)
    return text.try_cast("long")


def details_flag(field: str) -> Column:
    """The boolean value of the top-level ``field`` of an event's ``details``, null when absent."""
    text = F.regexp_extract(F.col("details"), rf'"{field}"\s*:\s*(true|false)\b', 1)
    return F.when(text == "true", True).when(text == "false", False)


@dataclass(frozen=True, slots=True)
class Bucket:
    """A half-open range ``[lower_ms, upper_ms)``; ``upper_ms`` None is unbounded."""

    label: str
    lower_ms: int
    upper_ms: int | None


LIFETIME_BUCKETS: tuple[Bucket, ...] = (
    Bucket("< 1 h", 0, HOUR_MS),
    Bucket("1 h - 6 h", HOUR_MS, 6 * HOUR_MS),
    Bucket("6 h - 1 d", 6 * HOUR_MS, DAY_MS),
    Bucket("1 d - 7 d", DAY_MS, 7 * DAY_MS),
    Bucket("7 d - 30 d", 7 * DAY_MS, 30 * DAY_MS),
    Bucket(">= 30 d", 30 * DAY_MS, None),
)
SERVER_DEFAULT = "server default"
"""The requested-lifetime bucket of creates that asked for no lifetime (``maxLifetimeMs`` <= 0)."""

OVERDUE_BUCKETS: tuple[Bucket, ...] = (
    Bucket("< 1 min", 0, MINUTE_MS),
    Bucket("1 min - 1 h", MINUTE_MS, HOUR_MS),
    Bucket("1 h - 6 h", HOUR_MS, 6 * HOUR_MS),
    Bucket("6 h - 1 d", 6 * HOUR_MS, DAY_MS),
    Bucket(">= 1 d", DAY_MS, None),
)

MAX_LIFETIME_USE_BUCKETS: tuple[tuple[str, float, float | None], ...] = (
    ("< 50 %", 0.0, 0.5),
    ("50 - 75 %", 0.5, 0.75),
    ("75 - 90 %", 0.75, 0.9),
    ("90 - 100 %", 0.9, 1.0),
    ("at max", 1.0, None),
)
"""How far a token's last renewed expiry reaches into its maximum lifetime; ``at max`` is renewed up to it."""


def in_window(events: DataFrame, *, since_ms: int | None = None, until_ms: int | None = None) -> DataFrame:
    """Events with ``since_ms <= timestamp < until_ms``; a missing bound is open."""
    if since_ms is not None:
        events = events.filter(F.col("timestamp") >= F.lit(since_ms))
    if until_ms is not None:
        events = events.filter(F.col("timestamp") < F.lit(until_ms))
    return events


def _since(column: str, since_ms: int | None) -> Column:
    return F.col(column).isNotNull() if since_ms is None else F.col(column) >= F.lit(since_ms)


# --- the first pass: the overview and the denial tables ------------------------------------------------

OVERVIEW_KEYS: tuple[str, ...] = (
    "in_window",
    "denied",
    "kind",
    "action",
    "error_code",
    "principal",
    "client_address",
    "owner",
    "token_requester",
    "hour_start",
)


def overview(history: DataFrame, *, since_ms: int | None = None) -> DataFrame:
    """The history in one pass, grouped by ``OVERVIEW_KEYS``: each denial in the window (``denied``) keeps
    what the denial tables tell apart (``kind`` refusal|authentication, the action and Kafka code, who and
    from where, owner and requester for creates, the hour); every other event only counts, in one row per
    ``in_window``. Columns: the keys, ``events`` (rows), ``denials`` (attempts: a throttled failed-login
    summary stands for ``details.attempts`` of them), ``first_at``, ``last_at``."""
    in_window_ = _since("timestamp", since_ms)
    denied = in_window_ & (F.col("outcome") == DENIED)
    failed_login = F.col("action") == AUTHENTICATION
    create = F.col("action") == CREATE

    def kept(value: Column, when: Column = denied) -> Column:
        return F.when(when, value)

    # Only failed logins carry attempts, so only their details are parsed; the rest stand for one each.
    attempts = F.coalesce(F.when(failed_login, details_number("attempts")), F.lit(1))
    keyed = history.select(
        in_window_.alias("in_window"),
        denied.alias("denied"),
        kept(F.when(failed_login, AUTHENTICATION).otherwise(REFUSAL)).alias("kind"),
        kept(F.col("action")).alias("action"),
        kept(F.col("error_code")).alias("error_code"),
        kept(F.col("principal")).alias("principal"),
        kept(F.col("client_address")).alias("client_address"),
        kept(F.col("owner"), denied & create).alias("owner"),
        kept(F.col("token_requester"), denied & create).alias("token_requester"),
        kept(F.floor(F.col("timestamp") / HOUR_MS) * HOUR_MS).cast("long").alias("hour_start"),
        F.col("timestamp"),
        kept(attempts).alias("attempts"),
    )
    return keyed.groupBy(*OVERVIEW_KEYS).agg(
        F.count(F.lit(1)).alias("events"),
        F.sum("attempts").alias("denials"),
        F.min("timestamp").alias("first_at"),
        F.max("timestamp").alias("last_at"),
    )


def span(overview_: DataFrame) -> DataFrame:
    """One row: ``events``, ``denied_events``, ``first_at`` and ``last_at`` of the window, and
    ``history_events`` and ``newest_at`` of the history."""
    inside = F.col("in_window")

    def total(column: Column) -> Column:
        return F.coalesce(F.sum(column), F.lit(0)).cast("long")

    return overview_.agg(
        total(F.when(inside, F.col("events"))).alias("events"),
        total(F.when(F.col("denied"), F.col("events"))).alias("denied_events"),
        F.min(F.when(inside, F.col("first_at"))).alias("first_at"),
        F.max(F.when(inside, F.col("last_at"))).alias("last_at"),
        total(F.col("events")).alias("history_events"),
        F.max("last_at").alias("newest_at"),
    )


def denials(overview_: DataFrame) -> DataFrame:
    """The groups of denied events in the window (``overview`` rows with ``denied``)."""
    return overview_.filter(F.col("denied")).drop("in_window", "denied")


def denials_by_principal(denied: DataFrame) -> DataFrame:
    """``kind, principal, client_address, denials, first_at, last_at`` (principal null: none claimed)."""
    return denied.groupBy("kind", "principal", "client_address").agg(
        F.sum("denials").alias("denials"),
        F.min("first_at").alias("first_at"),
        F.max("last_at").alias("last_at"),
    )


def refusals_by_action(denied: DataFrame) -> DataFrame:
    """``kind, action, error_code, denials``: what was refused and with which Kafka error."""
    return denied.groupBy("kind", "action", "error_code").agg(F.sum("denials").alias("denials"))


def span_hours(start_ms: int, end_ms: int) -> int:
    """How many clock hours ``[start_ms, end_ms)`` touches (at least 1)."""
    return max(1, (max(end_ms, start_ms + 1) - 1) // HOUR_MS - start_ms // HOUR_MS + 1)


def denial_bursts(
    denied: DataFrame,
    *,
    span_start_ms: int,
    span_end_ms: int,
    stddevs: float = BURST_STDDEVS,
    min_denials: int = BURST_MIN_DENIALS,
    baseline_hours: int = BURST_BASELINE_HOURS,
) -> DataFrame:
    """Each principal's hours with denials, judged against its own other hours of the span (module
    docstring): ``principal, hour_start, hour, denials, baseline_mean, baseline_stddev, threshold,
    is_burst``. ``hour`` is ``YYYY-MM-DD HH:00`` UTC; the baseline is null without other hours, the
    threshold null (and nothing a burst) with fewer than ``baseline_hours`` of them."""
    others = span_hours(span_start_ms, span_end_ms) - 1
    hourly = denied.groupBy("principal", "hour_start").agg(F.sum("denials").alias("denials"))
    principal = Window.partitionBy("principal")
    total = F.sum("denials").over(principal) - F.col("denials")
    squares = F.sum(F.col("denials") * F.col("denials")).over(principal) - F.col("denials") * F.col("denials")
    mean = total / others if others else F.lit(None)
    # Rounding can leave a tiny negative variance where there is none.
    stddev = F.sqrt(F.greatest(squares / others - mean * mean, F.lit(0.0))) if others else F.lit(None)
    with_baseline = hourly.select(
        "principal",
        "hour_start",
        "denials",
        mean.cast("double").alias("baseline_mean"),
        stddev.cast("double").alias("baseline_stddev"),
    )
    statistical = F.col("baseline_mean") + F.lit(stddevs) * F.col("baseline_stddev")
    threshold = F.greatest(statistical, F.lit(float(min_denials - 1))) if others >= baseline_hours else F.lit(None)
    judged = with_baseline.withColumn("threshold", threshold.cast("double"))
    return judged.select(
        "principal",
        "hour_start",
        F.date_format(F.timestamp_millis("hour_start"), "yyyy-MM-dd HH:00").alias("hour"),
        "denials",
        "baseline_mean",
        "baseline_stddev",
        "threshold",
        F.coalesce(F.col("denials") > F.col("threshold"), F.lit(False)).alias("is_burst"),
    )


# --- the second pass: one row per token ----------------------------------------------------------------


_ID_BITS = 21
# A token change, as the lifecycle pass codes it; the removals (a deleting expire, a sweep) come last.
_CREATED, _RENEWED, _RENEWED_BEFORE, _SHORTENED, _DELETED, _SWEPT = range(6)
_CREATE_ID, _JOB_EVENT = "_create_id", "_job_event"  # the lifecycle's own join columns, not in its output


def _order_key() -> Column:
    """An event's place in time as one long: its timestamp, ties broken by the low 21 bits of its id.
    One long rather than a (timestamp, id) struct keeps every aggregation buffer fixed-width, which lets
    Spark aggregate by hashing instead of sorting the token changes."""
    return F.shiftleft(F.col("timestamp"), _ID_BITS).bitwiseOR(F.col("id").bitwiseAND(F.lit((1 << _ID_BITS) - 1)))


def token_lifecycle(history: DataFrame, *, since_ms: int | None = None) -> DataFrame:
    """One row per token with a settled change (create, renew, expire, sweep) in the history, each
    change's ``details`` read once: ``token_id, owner, token_requester``; from its create (null when that
    predates the history) ``created_at, requested_max_lifetime_ms, issue_timestamp, max_timestamp,
    issued_expiry_timestamp``; its renewals in the window (``renewals``, ``last_renewed_at``,
    ``renewed_expiry_timestamp``: the expiry the last one set); ``last_expiry_timestamp``, the latest
    expiry any change recorded before its removal; and its removal, the first of a sweep or an expire
    that deleted it: ``removed_at``, ``removed_by_sweep``, ``removal_expiry_timestamp``; last, the job
    its create named (``JOB_COLUMNS``, null when it named none; a token created twice under the same owner
    and requester keeps its last create's job).

    A token's owner and requester never change (Kafka's token information is immutable in them), and
    every change of it carries both: they are grouping keys, not aggregates."""
    changes = history.filter(
        F.col("action").isin(CREATE, RENEW, EXPIRE, SWEEP)
        & (F.col("outcome") == SUCCEEDED)
        & F.col("token_id").isNotNull()
    )
    action = F.col("action")
    created = action == CREATE

    def on_create(value: Column) -> Column:
        return F.when(created, value)

    # What crosses the shuffle is kept narrow: the change as a small code, its time inside its order key.
    deleted = F.coalesce(details_flag("deleted"), F.lit(False))
    change = (
        F.when(created, _CREATED)
        .when(action == RENEW, F.when(_since("timestamp", since_ms), _RENEWED).otherwise(_RENEWED_BEFORE))
        .when(action == EXPIRE, F.when(deleted, _DELETED).otherwise(_SHORTENED))
        .otherwise(_SWEPT)
        .cast("byte")
    )
    slim = changes.select(
        "token_id",
        "owner",
        "token_requester",
        change.alias("change"),
        _order_key().alias("order_key"),
        on_create(F.col("id")).alias("create_id"),
        on_create(details_number("requestedMaxLifetimeMs")).alias("requested"),
        on_create(details_number("issueTimestamp")).alias("issued"),
        on_create(details_number("maxTimestamp")).alias("maximum"),
        details_number("expiryTimestamp").alias("expiry"),
    )
    code, key, expiry = F.col("change"), F.col("order_key"), F.col("expiry")
    at = F.shiftright(key, _ID_BITS)
    made, renewed, removal = code == _CREATED, code == _RENEWED, code >= _DELETED
    keys = ("token_id", "owner", "token_requester")
    # Every aggregate here keeps a fixed-width buffer, so Spark hashes the changes instead of sorting them.
    figures = (
        slim.repartition("token_id")
        .groupBy(*keys)
        .agg(
            F.max(F.when(made, at)).alias("created_at"),
            F.max("requested").alias("requested_max_lifetime_ms"),
            F.max("issued").alias("issue_timestamp"),
            F.max("maximum").alias("max_timestamp"),
            F.max(F.when(made, expiry)).alias("issued_expiry_timestamp"),
            F.count(F.when(renewed, 1)).alias("renewals"),
            F.max(F.when(renewed, at)).alias("last_renewed_at"),
            F.max_by(expiry, F.when(renewed, key)).alias("renewed_expiry_timestamp"),
            F.max_by(expiry, F.when(~removal & expiry.isNotNull(), key)).alias("last_expiry_timestamp"),
            F.min(F.when(removal, at)).alias("removed_at"),
            F.min_by(code == _SWEPT, F.when(removal, key)).alias("removed_by_sweep"),
            F.min_by(expiry, F.when(removal, key)).alias("removal_expiry_timestamp"),
            F.max("create_id").alias(_CREATE_ID),
        )
    )
    # The job's text columns would make that aggregate sort, so it keeps a fixed-width handle instead: the id
    # of the token's last create, which names the one event whose job is the token's. The jobs are read apart
    # (the creates that name one, a few of the changes; a narrow read: the id, the token, no ``details``, no
    # owner or requester) and shuffled by token alike. Ids are unique, so no aggregate: each job row is one
    # create, and it finds its token's row, if any, by token and id.
    jobs = (
        history.filter((action == CREATE) & F.coalesce(*(F.col(column) for column in JOB_COLUMNS)).isNotNull())
        .select(F.col("token_id").alias("job_token_id"), F.col("id").alias(_JOB_EVENT), *JOB_COLUMNS)
        .repartition("job_token_id")
    )
    # Joined by token alone, so that both sides keep the shuffle by token: the id as a second equality would
    # be a join key too, and more keys than the shuffle's one shuffle both sides again. An equality written
    # as a coalesce is a condition, not a key.
    condition = (F.col("token_id") == F.col("job_token_id")) & F.coalesce(
        F.col(_CREATE_ID) == F.col(_JOB_EVENT), F.lit(False)
    )
    joined = figures.join(jobs.hint("shuffle_hash"), condition, "left")
    return joined.select(*keys, *figures.columns[len(keys) : -1], *JOB_COLUMNS)


def issued(lifecycle: DataFrame, *, since_ms: int | None = None) -> DataFrame:
    """The tokens created in the window, with their creation ``date`` (UTC)."""
    return lifecycle.filter(_since("created_at", since_ms)).withColumn("date", partition_date_column("created_at"))


def tokens_by_job(issued_: DataFrame) -> DataFrame:
    """Tokens issued in the window per job their create named: ``job_framework, job_id, job_name, job_user,
    tokens, first_at, last_at`` (the first and last creation). Tokens whose create named no job are left out;
    a job is its four fields, so the same id under another name or user is another row."""
    named = issued_.filter(F.coalesce(*(F.col(column) for column in JOB_COLUMNS)).isNotNull())
    return named.groupBy(*JOB_COLUMNS).agg(
        F.count(F.lit(1)).alias("tokens"),
        F.min("created_at").alias("first_at"),
        F.max("created_at").alias("last_at"),
    )


def issued_per_day(issued_: DataFrame, by: str) -> DataFrame:
    """Tokens issued per UTC day and ``by`` (``owner`` or ``token_requester``): ``date, <by>, tokens``."""
    return issued_.groupBy("date", by).agg(F.count(F.lit(1)).alias("tokens"))


def _creates_for_others(issued_: DataFrame, denied: DataFrame) -> DataFrame:
    """Issued tokens and refused creates as rows of ``token_requester, owner, tokens, refused``."""
    return issued_.select("token_requester", "owner", F.lit(1).alias("tokens"), F.lit(0).alias("refused")).unionByName(
        denied.filter(F.col("action") == CREATE).select(
            "token_requester", "owner", F.lit(0).alias("tokens"), F.col("denials").alias("refused")
        )
    )


def impersonation_matrix(issued_: DataFrame, denied: DataFrame) -> DataFrame:
    """Creates where the requester asked for another owner (KIP-373):
    ``token_requester, owner, tokens`` (issued), ``refused`` (denied attempts)."""
    return (
        _creates_for_others(issued_, denied)
        .filter(F.col("token_requester") != F.col("owner"))
        .groupBy("token_requester", "owner")
        .agg(F.sum("tokens").cast("long").alias("tokens"), F.sum("refused").cast("long").alias("refused"))
    )


# --- lifetimes and renewals ----------------------------------------------------------------------------


def _bucketed(value: Column, buckets: Sequence[Bucket]) -> tuple[Column, Column, Column, Column]:
    """(order, label, lower_ms, upper_ms) of the bucket holding ``value``; order starts at 1."""
    order: Column | None = None
    for index, bucket in enumerate(buckets, start=1):
        inside = value >= F.lit(bucket.lower_ms)
        if bucket.upper_ms is not None:
            inside = inside & (value < F.lit(bucket.upper_ms))
        order = F.when(inside, index) if order is None else order.when(inside, index)
    assert order is not None
    labels = F.array(*[F.lit(bucket.label) for bucket in buckets])
    lowers = F.array(*[F.lit(bucket.lower_ms).cast("long") for bucket in buckets])
    uppers = F.array(*[F.lit(bucket.upper_ms).cast("long") for bucket in buckets])
    return order, F.get(labels, order - 1), F.get(lowers, order - 1), F.get(uppers, order - 1)


def lifetime_distribution(issued_: DataFrame) -> DataFrame:
    """Issued tokens by requested and by granted maximum lifetime (``maxTimestamp - issueTimestamp``):
    ``kind`` (requested|granted), ``bucket_order``, ``bucket``, ``lower_ms``, ``upper_ms``, ``tokens``.
    Requests without a lifetime (<= 0) are the bucket ``SERVER_DEFAULT`` (order 0) of ``requested``."""
    lifetimes = issued_.select(
        F.explode(
            F.array(
                F.struct(F.lit("requested").alias("kind"), F.col("requested_max_lifetime_ms").alias("ms")),
                F.struct(
                    F.lit("granted").alias("kind"), (F.col("max_timestamp") - F.col("issue_timestamp")).alias("ms")
                ),
            )
        ).alias("lifetime")
    ).select("lifetime.kind", "lifetime.ms")
    order, label, lower, upper = _bucketed(F.col("ms"), LIFETIME_BUCKETS)
    default = (F.col("kind") == "requested") & (F.col("ms").isNull() | (F.col("ms") <= 0))
    bucketed = lifetimes.filter(default | F.col("ms").isNotNull()).select(
        "kind",
        F.when(default, 0).otherwise(order).alias("bucket_order"),
        F.when(default, SERVER_DEFAULT).otherwise(label).alias("bucket"),
        F.when(default, None).otherwise(lower).alias("lower_ms"),
        F.when(default, None).otherwise(upper).alias("upper_ms"),
    )
    return bucketed.groupBy("kind", "bucket_order", "bucket", "lower_ms", "upper_ms").agg(
        F.count(F.lit(1)).alias("tokens")
    )


def token_renewals(lifecycle: DataFrame, *, since_ms: int | None = None) -> DataFrame:
    """Per token issued or renewed in the window: ``token_id, owner, token_requester, created_at,
    renewals`` (succeeded renews in the window), ``last_renewed_at``, ``issue_timestamp``,
    ``max_timestamp``, ``expiry_timestamp`` (after its last renewal, else as issued), ``headroom_ms``
    (``max_timestamp - expiry_timestamp``) and ``max_lifetime_used`` (share of the maximum lifetime the
    expiry reaches, 0..1). Metadata is null for tokens whose create predates the history."""
    tokens = lifecycle.filter(_since("created_at", since_ms) | (F.col("renewals") > 0))
    expiry = F.coalesce(F.col("renewed_expiry_timestamp"), F.col("issued_expiry_timestamp"))
    lifetime = F.col("max_timestamp") - F.col("issue_timestamp")
    return tokens.select(
        "token_id",
        "owner",
        "token_requester",
        "created_at",
        "renewals",
        "last_renewed_at",
        "issue_timestamp",
        "max_timestamp",
        expiry.alias("expiry_timestamp"),
        (F.col("max_timestamp") - expiry).alias("headroom_ms"),
        F.when(lifetime > 0, (expiry - F.col("issue_timestamp")) / lifetime).alias("max_lifetime_used"),
    )


def renew_count_distribution(renewals: DataFrame) -> DataFrame:
    """How many tokens were renewed how often: ``renewals, tokens`` (from ``token_renewals``)."""
    return renewals.groupBy("renewals").agg(F.count(F.lit(1)).alias("tokens"))


def max_lifetime_use(renewals: DataFrame) -> DataFrame:
    """Renewed tokens by how close their renewed expiry comes to the maximum lifetime:
    ``bucket_order, bucket, tokens`` (buckets ``MAX_LIFETIME_USE_BUCKETS``)."""
    used = F.col("max_lifetime_used")
    order: Column | None = None
    for index, (_label, lower, upper) in enumerate(MAX_LIFETIME_USE_BUCKETS, start=1):
        inside = used >= F.lit(lower) if upper is None else (used >= F.lit(lower)) & (used < F.lit(upper))
        order = F.when(inside, index) if order is None else order.when(inside, index)
    assert order is not None
    labels = F.array(*[F.lit(label) for label, _lower, _upper in MAX_LIFETIME_USE_BUCKETS])
    renewed = renewals.filter((F.col("renewals") > 0) & used.isNotNull())
    return (
        renewed.select(order.alias("bucket_order"))
        .groupBy("bucket_order")
        .agg(F.count(F.lit(1)).alias("tokens"))
        .select("bucket_order", F.get(labels, F.col("bucket_order") - 1).alias("bucket"), "tokens")
    )


# --- expiry compliance ---------------------------------------------------------------------------------


def expiry_compliance(lifecycle: DataFrame, *, as_of_ms: int, since_ms: int | None = None) -> DataFrame:
    """Tokens that outlived their expiry: ``token_id, owner, token_requester, expiry_timestamp,
    removed_at, status, overdue_ms``.

    ``status`` is ``swept`` (deleted by the sweeper; ``expiry_timestamp`` is the one it recorded, so the
    overdue time is the sweep lag), ``expired`` (deleted by an expire request; overdue from its last
    expiry, 0 when it was still valid) or ``lingering`` (no removal in the history although its last
    expiry passed before ``as_of_ms``; overdue until ``as_of_ms``). Removals count when they fall in the
    window; lingering tokens count whenever their expiry passed. Tokens still valid are not listed."""
    removed_at = F.col("removed_at")
    swept = F.coalesce(F.col("removed_by_sweep"), F.lit(False))
    last_expiry = F.col("last_expiry_timestamp")
    expiry = (
        F.when(swept, F.col("removal_expiry_timestamp"))
        .when(removed_at.isNotNull(), F.coalesce(last_expiry, removed_at))
        .otherwise(last_expiry)
    )
    status = (
        F.when(swept, "swept").when(removed_at.isNotNull(), "expired").when(last_expiry < F.lit(as_of_ms), "lingering")
    )
    overdue = F.greatest(F.lit(0).cast("long"), F.coalesce(removed_at, F.lit(as_of_ms)) - expiry)
    listed = lifecycle.select(
        "token_id",
        "owner",
        "token_requester",
        expiry.alias("expiry_timestamp"),
        removed_at.alias("removed_at"),
        status.alias("status"),
        overdue.alias("overdue_ms"),
    )
    return listed.filter(
        (F.col("status") == "lingering") | (F.col("status").isNotNull() & _since("removed_at", since_ms))
    )


def overdue_distribution(compliance: DataFrame) -> DataFrame:
    """``status, bucket_order, bucket, lower_ms, upper_ms, tokens``: how long tokens outlived their expiry."""
    order, label, lower, upper = _bucketed(F.col("overdue_ms"), OVERDUE_BUCKETS)
    return (
        compliance.select(
            "status",
            order.alias("bucket_order"),
            label.alias("bucket"),
            lower.alias("lower_ms"),
            upper.alias("upper_ms"),
        )
        .groupBy("status", "bucket_order", "bucket", "lower_ms", "upper_ms")
        .agg(F.count(F.lit(1)).alias("tokens"))
    )


# --- top-N ---------------------------------------------------------------------------------------------


def _ranked(table: DataFrame, top_n: int, *order: Column) -> DataFrame:
    top = table.orderBy(*order).limit(top_n)
    return top.withColumn("rank", F.row_number().over(Window.orderBy(*order)))


def top_owners(lifecycle: DataFrame, *, since_ms: int | None = None, top_n: int) -> DataFrame:
    """The ``top_n`` owners by tokens issued: ``rank, owner, tokens, impersonated`` (issued by someone
    else), ``requesters`` (distinct), ``renewals`` (succeeded renewals of their tokens)."""
    issued_ = _since("created_at", since_ms)
    table = (
        lifecycle.filter(issued_ | (F.col("renewals") > 0))
        .groupBy("owner")
        .agg(
            F.count(F.when(issued_, 1)).alias("tokens"),
            F.count(F.when(issued_ & (F.col("token_requester") != F.col("owner")), 1)).alias("impersonated"),
            F.countDistinct(F.when(issued_, F.col("token_requester"))).alias("requesters"),
            F.sum("renewals").cast("long").alias("renewals"),
        )
    )
    return _ranked(table, top_n, F.desc("tokens"), F.desc("renewals"), F.asc("owner")).select(
        "rank", "owner", "tokens", "impersonated", "requesters", "renewals"
    )


def top_requesters(issued_: DataFrame, denied: DataFrame, *, top_n: int) -> DataFrame:
    """The ``top_n`` requesters by tokens issued: ``rank, token_requester, tokens, for_others`` (owner is
    someone else), ``owners`` (distinct), ``refused`` (denied create attempts)."""
    creates = _creates_for_others(issued_, denied)
    was_issued = F.col("tokens") > 0
    table = creates.groupBy("token_requester").agg(
        F.sum("tokens").cast("long").alias("tokens"),
        F.count(F.when(was_issued & (F.col("owner") != F.col("token_requester")), 1)).alias("for_others"),
        F.countDistinct(F.when(was_issued, F.col("owner"))).alias("owners"),
        F.sum("refused").cast("long").alias("refused"),
    )
    return _ranked(table, top_n, F.desc("tokens"), F.desc("refused"), F.asc("token_requester")).select(
        "rank", "token_requester", "tokens", "for_others", "owners", "refused"
    )
