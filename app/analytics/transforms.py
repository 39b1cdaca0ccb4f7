"""The audit report's steps as pure functions: DataFrame(s) in, DataFrame out; no reads, writes or collects.

Every function takes events in ``EVENT_SCHEMA`` (``events_schema.py``) or the output of another function
here, and is unit-tested on small hand-made DataFrames. Timestamps stay in ms since the epoch (UTC); days
are ``YYYY-MM-DD`` strings, hours are the ms of the hour's start.

Two sets of events take part (``job.run_report`` builds both): the *history*, every event before
``until``, and the *window*, the history from ``since`` on. Figures count what happened in the window;
facts about a token that may predate the window (its create event, its last expiry) come from the
history, so a token created last week and renewed this week still finds its maximum lifetime.

Burst rule (``denial_bursts``): a principal's denials are counted per hour over every hour of the
observed span, hours without denials counting as zero. An hour is a burst when its count is at least
``BURST_MIN_DENIALS`` and exceeds ``mean + BURST_STDDEVS * stddev`` of the principal's *other* hours of the
span (leave-one-out, population stddev). Leaving the hour out means one spike in an otherwise quiet span
is flagged however short the span, while a principal that fails at a steady rate is not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

from app.analytics.events_schema import partition_date_column

MINUTE_MS = 60_000
HOUR_MS = 3_600_000
DAY_MS = 86_400_000

CREATE, RENEW, EXPIRE, SWEEP = "token.create", "token.renew", "token.expire", "token.sweep"
AUTHENTICATION = "authentication"
SUCCEEDED, DENIED = "succeeded", "denied"

BURST_STDDEVS = 3.0
BURST_MIN_DENIALS = 5

DETAILS_SCHEMA = StructType(
    [
        StructField("requestedMaxLifetimeMs", LongType()),
        StructField("issueTimestamp", LongType()),
        StructField("expiryTimestamp", LongType()),
        StructField("maxTimestamp", LongType()),
        StructField("renewTimePeriodMs", LongType()),
        StructField("expiryTimePeriodMs", LongType()),
        StructField("deleted", BooleanType()),
        StructField("scheme", StringType()),
        StructField("reason", StringType()),
        StructField("attempts", LongType()),  # a throttled burst's summary row stands for this many attempts
    ]
)
"""The ``details`` fields the report reads; other keys are ignored, malformed JSON reads as nulls."""


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


# --- selection and parsing -----------------------------------------------------------------------------


def in_window(events: DataFrame, *, since_ms: int | None = None, until_ms: int | None = None) -> DataFrame:
    """Events with ``since_ms <= timestamp < until_ms``; a missing bound is open."""
    if since_ms is not None:
        events = events.filter(F.col("timestamp") >= F.lit(since_ms))
    if until_ms is not None:
        events = events.filter(F.col("timestamp") < F.lit(until_ms))
    return events


REPORT_COLUMNS: tuple[str, ...] = (
    "id",
    "timestamp",
    "date",
    "action",
    "outcome",
    "principal",
    "owner",
    "token_requester",
    "token_id",
    "error_code",
    "client_address",
    "requested_max_lifetime_ms",
    "issue_timestamp",
    "expiry_timestamp",
    "max_timestamp",
    "deleted",
    "attempts",
)
"""What the figures read of an event; the rest (``details`` text above all) is left behind."""


def report_events(events: DataFrame) -> DataFrame:
    """The only events the report reads beyond counting: settled token changes and every refusal, with
    their ``details`` parsed (``with_details``), in ``REPORT_COLUMNS``. Worth caching: it is read often."""
    token_changes = F.col("action").isin(CREATE, RENEW, EXPIRE, SWEEP) & (F.col("outcome") == SUCCEEDED)
    return with_details(events.filter(token_changes | (F.col("outcome") == DENIED))).select(*REPORT_COLUMNS)


def with_details(events: DataFrame) -> DataFrame:
    """Adds the ``details`` fields as snake_case columns (null where absent) plus the event's ``date``."""
    parsed = F.from_json(F.col("details"), DETAILS_SCHEMA)
    return events.select(
        *[column for column in events.columns if column != "date"],
        partition_date_column().alias("date"),
        parsed["requestedMaxLifetimeMs"].alias("requested_max_lifetime_ms"),
        parsed["issueTimestamp"].alias("issue_timestamp"),
        parsed["expiryTimestamp"].alias("expiry_timestamp"),
        parsed["maxTimestamp"].alias("max_timestamp"),
        parsed["renewTimePeriodMs"].alias("renew_time_period_ms"),
        parsed["expiryTimePeriodMs"].alias("expiry_time_period_ms"),
        parsed["deleted"].alias("deleted"),
        parsed["scheme"].alias("scheme"),
        parsed["reason"].alias("reason"),
        parsed["attempts"].alias("attempts"),
    )


def token_creations(events: DataFrame) -> DataFrame:
    """One row per issued token (succeeded ``token.create``), from ``with_details`` output."""
    return events.filter((F.col("action") == CREATE) & (F.col("outcome") == SUCCEEDED)).select(
        "token_id",
        "owner",
        "token_requester",
        F.col("timestamp").alias("created_at"),
        "date",
        "requested_max_lifetime_ms",
        "issue_timestamp",
        "expiry_timestamp",
        "max_timestamp",
        (F.col("max_timestamp") - F.col("issue_timestamp")).alias("granted_lifetime_ms"),
    )


def _since(column: str, since_ms: int | None) -> Column:
    return F.lit(True) if since_ms is None else F.col(column) >= F.lit(since_ms)


# --- issuance ------------------------------------------------------------------------------------------


def issued_per_day(creations: DataFrame, by: str) -> DataFrame:
    """Tokens issued per UTC day and ``by`` (``owner`` or ``token_requester``): ``date, <by>, tokens``."""
    return creations.groupBy("date", by).agg(F.count(F.lit(1)).alias("tokens"))


def impersonation_matrix(events: DataFrame) -> DataFrame:
    """Creates where the requester asked for another owner (KIP-373):
    ``token_requester, owner, tokens`` (issued), ``refused`` (denied attempts)."""
    attempts = events.filter(
        (F.col("action") == CREATE)
        & F.col("outcome").isin(SUCCEEDED, DENIED)
        & (F.col("token_requester") != F.col("owner"))
    )
    return attempts.groupBy("token_requester", "owner").agg(
        F.count(F.when(F.col("outcome") == SUCCEEDED, 1)).alias("tokens"),
        F.count(F.when(F.col("outcome") == DENIED, 1)).alias("refused"),
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


def lifetime_distribution(creations: DataFrame) -> DataFrame:
    """Issued tokens by requested and by granted maximum lifetime (``maxTimestamp - issueTimestamp``):
    ``kind`` (requested|granted), ``bucket_order``, ``bucket``, ``lower_ms``, ``upper_ms``, ``tokens``.
    Requests without a lifetime (<= 0) are the bucket ``SERVER_DEFAULT`` (order 0) of ``requested``."""
    lifetimes = creations.select(
        F.explode(
            F.array(
                F.struct(F.lit("requested").alias("kind"), F.col("requested_max_lifetime_ms").alias("ms")),
                F.struct(F.lit("granted").alias("kind"), F.col("granted_lifetime_ms").alias("ms")),
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


def token_renewals(history: DataFrame, *, since_ms: int | None = None) -> DataFrame:
    """Per token issued or renewed in the window: ``token_id, owner, token_requester, created_at,
    renewals`` (succeeded renews in the window), ``last_renewed_at``, ``issue_timestamp``,
    ``max_timestamp``, ``expiry_timestamp`` (after its last renewal, else as issued), ``headroom_ms``
    (``max_timestamp - expiry_timestamp``) and ``max_lifetime_used`` (share of the maximum lifetime the
    expiry reaches, 0..1). Metadata is null for tokens whose create predates the history."""
    renewed = (
        history.filter((F.col("action") == RENEW) & (F.col("outcome") == SUCCEEDED) & _since("timestamp", since_ms))
        .groupBy("token_id")
        .agg(
            F.count(F.lit(1)).alias("renewals"),
            F.max("timestamp").alias("last_renewed_at"),
            F.max_by("expiry_timestamp", F.struct("timestamp", "id")).alias("renewed_expiry"),
            F.max("owner").alias("renewed_owner"),
            F.max("token_requester").alias("renewed_requester"),
        )
    )
    created = token_creations(history).drop("date", "requested_max_lifetime_ms", "granted_lifetime_ms")
    tokens = created.join(renewed, "token_id", "full_outer").filter(
        _since("created_at", since_ms) | F.col("renewals").isNotNull()
    )
    expiry = F.coalesce(F.col("renewed_expiry"), F.col("expiry_timestamp"))
    lifetime = F.col("max_timestamp") - F.col("issue_timestamp")
    return tokens.select(
        "token_id",
        F.coalesce("owner", "renewed_owner").alias("owner"),
        F.coalesce("token_requester", "renewed_requester").alias("token_requester"),
        "created_at",
        F.coalesce("renewals", F.lit(0)).cast("long").alias("renewals"),
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


def expiry_compliance(history: DataFrame, *, now_ms: int, since_ms: int | None = None) -> DataFrame:
    """Tokens that outlived their expiry: ``token_id, owner, token_requester, expiry_timestamp,
    removed_at, status, overdue_ms``.

    ``status`` is ``swept`` (deleted by the sweeper; ``expiry_timestamp`` is the one it recorded, so the
    overdue time is the sweep lag), ``expired`` (deleted by an expire request; overdue from its last
    expiry, 0 when it was still valid) or ``lingering`` (no removal by ``now_ms`` although its last expiry
    has passed; overdue until ``now_ms``). Removals count when they fall in the window; lingering tokens
    count whenever their expiry passed. Tokens still valid at ``now_ms`` are not listed."""
    lifecycle = history.filter(
        F.col("action").isin(CREATE, RENEW, EXPIRE, SWEEP)
        & (F.col("outcome") == SUCCEEDED)
        & F.col("token_id").isNotNull()
    )
    is_removal = (F.col("action") == SWEEP) | ((F.col("action") == EXPIRE) & F.coalesce("deleted", F.lit(False)))
    order = F.struct("timestamp", "id")
    per_token = lifecycle.groupBy("token_id").agg(
        F.max("owner").alias("owner"),
        F.max("token_requester").alias("token_requester"),
        F.min_by(F.struct("timestamp", "action", "expiry_timestamp"), F.when(is_removal, order)).alias("removal"),
        F.max_by("expiry_timestamp", F.when(~is_removal & F.col("expiry_timestamp").isNotNull(), order)).alias(
            "last_expiry"
        ),
    )
    removed_at = F.col("removal.timestamp")
    swept = F.col("removal.action") == SWEEP
    expiry = (
        F.when(swept, F.col("removal.expiry_timestamp"))
        .when(removed_at.isNotNull(), F.coalesce("last_expiry", removed_at))
        .otherwise(F.col("last_expiry"))
    )
    status = (
        F.when(swept, "swept")
        .when(removed_at.isNotNull(), "expired")
        .when(F.col("last_expiry") < F.lit(now_ms), "lingering")
    )
    overdue = F.greatest(F.lit(0).cast("long"), F.coalesce(removed_at, F.lit(now_ms)) - expiry)
    listed = per_token.select(
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


# --- refusals and authentication failures --------------------------------------------------------------


def denials(events: DataFrame) -> DataFrame:
    """Every ``denied`` event with ``kind``: ``authentication`` (a failed login) or ``refusal`` (an
    authenticated request a rule refused; the Kafka code is in ``error_code``), and ``attempts``: how many
    attempts the row stands for. The brute-force defence audits a burst as its first attempt plus summary
    rows carrying ``details.attempts``; every other row is one attempt."""
    counted = F.col("attempts") if "attempts" in events.columns else F.get_json_object(F.col("details"), "$.attempts")
    attempts = F.coalesce(counted.cast("long"), F.lit(1))
    return (
        events.filter(F.col("outcome") == DENIED)
        .withColumn("kind", F.when(F.col("action") == AUTHENTICATION, "authentication").otherwise("refusal"))
        .withColumn("attempts", attempts)
    )


def denials_by_principal(denied: DataFrame) -> DataFrame:
    """``kind, principal, client_address, denials, first_at, last_at`` (principal null: none claimed)."""
    return denied.groupBy("kind", "principal", "client_address").agg(
        F.sum("attempts").alias("denials"),
        F.min("timestamp").alias("first_at"),
        F.max("timestamp").alias("last_at"),
    )


def refusals_by_action(denied: DataFrame) -> DataFrame:
    """``kind, action, error_code, denials``: what was refused and with which Kafka error."""
    return denied.groupBy("kind", "action", "error_code").agg(F.sum("attempts").alias("denials"))


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
) -> DataFrame:
    """Each principal's hours with denials, judged against its own other hours of the span (module
    docstring): ``principal, hour_start, hour, denials, baseline_mean, baseline_stddev, threshold,
    is_burst``. ``hour`` is ``YYYY-MM-DD HH:00`` UTC."""
    others = span_hours(span_start_ms, span_end_ms) - 1
    hourly = denied.groupBy("principal", (F.floor(F.col("timestamp") / HOUR_MS) * HOUR_MS).alias("hour_start")).agg(
        F.sum("attempts").alias("denials")
    )
    principal = Window.partitionBy("principal")
    total = F.sum("denials").over(principal) - F.col("denials")
    squares = F.sum(F.col("denials") * F.col("denials")).over(principal) - F.col("denials") * F.col("denials")
    mean = total / others if others else F.lit(0.0)
    variance = (squares / others - mean * mean) if others else F.lit(0.0)
    with_baseline = hourly.select(
        "principal",
        F.col("hour_start").cast("long").alias("hour_start"),
        "denials",
        mean.cast("double").alias("baseline_mean"),
        F.sqrt(F.greatest(variance, F.lit(0.0))).alias("baseline_stddev"),
    )
    threshold = F.col("baseline_mean") + F.lit(stddevs) * F.col("baseline_stddev")
    return with_baseline.select(
        "principal",
        "hour_start",
        F.date_format(F.timestamp_millis("hour_start"), "yyyy-MM-dd HH:00").alias("hour"),
        "denials",
        "baseline_mean",
        "baseline_stddev",
        threshold.alias("threshold"),
        ((F.col("denials") >= min_denials) & (F.col("denials") > threshold)).alias("is_burst"),
    )


# --- top-N ---------------------------------------------------------------------------------------------


def _ranked(table: DataFrame, top_n: int, *order: Column) -> DataFrame:
    top = table.orderBy(*order).limit(top_n)
    return top.withColumn("rank", F.row_number().over(Window.orderBy(*order)))


def top_owners(window: DataFrame, *, top_n: int) -> DataFrame:
    """The ``top_n`` owners by tokens issued: ``rank, owner, tokens, impersonated`` (issued by someone
    else), ``requesters`` (distinct), ``renewals`` (succeeded renewals of their tokens)."""
    issued = (
        token_creations(window)
        .groupBy("owner")
        .agg(
            F.count(F.lit(1)).alias("tokens"),
            F.count(F.when(F.col("token_requester") != F.col("owner"), 1)).alias("impersonated"),
            F.countDistinct("token_requester").alias("requesters"),
        )
    )
    renewed = (
        window.filter((F.col("action") == RENEW) & (F.col("outcome") == SUCCEEDED) & F.col("owner").isNotNull())
        .groupBy("owner")
        .agg(F.count(F.lit(1)).alias("renewals"))
    )
    table = issued.join(renewed, "owner", "full_outer").na.fill(0, ["tokens", "impersonated", "requesters", "renewals"])
    return _ranked(table, top_n, F.desc("tokens"), F.desc("renewals"), F.asc("owner")).select(
        "rank", "owner", "tokens", "impersonated", "requesters", "renewals"
    )


def top_requesters(window: DataFrame, *, top_n: int) -> DataFrame:
    """The ``top_n`` requesters by tokens issued: ``rank, token_requester, tokens, for_others`` (owner is
    someone else), ``owners`` (distinct), ``refused`` (denied create attempts)."""
    attempts = window.filter((F.col("action") == CREATE) & F.col("outcome").isin(SUCCEEDED, DENIED))
    issued = F.col("outcome") == SUCCEEDED
    table = attempts.groupBy("token_requester").agg(
        F.count(F.when(issued, 1)).alias("tokens"),
        F.count(F.when(issued & (F.col("owner") != F.col("token_requester")), 1)).alias("for_others"),
        F.countDistinct(F.when(issued, F.col("owner"))).alias("owners"),
        F.count(F.when(F.col("outcome") == DENIED, 1)).alias("refused"),
    )
    return _ranked(table, top_n, F.desc("tokens"), F.desc("refused"), F.asc("token_requester")).select(
        "rank", "token_requester", "tokens", "for_others", "owners", "refused"
    )
