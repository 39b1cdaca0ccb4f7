"""Where the report's events come from and its outputs go: exported Parquet (a local directory or a Hadoop
URI) or the audit database over JDBC, read in ``EVENT_SCHEMA``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from app.analytics.events_schema import EVENT_COLUMNS, EVENT_SCHEMA, PARQUET_SCHEMA
from app.storage.audit.tables import audit_events

Location = Path | str
"""A local directory, or a Hadoop file system URI such as ``hdfs://namenode/audit`` for cluster runs."""
ROWS_PER_JDBC_PARTITION = 1_000_000
_BOUNDS_QUERY = f"(SELECT MIN(id) AS lo, MAX(id) AS hi, COUNT(*) AS n FROM {audit_events.name}) AS bounds"  # noqa: S608


class AnalyticsError(Exception):
    """Bad input to the job (a URL it cannot read, a missing directory); the message is one line."""


@dataclass(frozen=True)
class JdbcSource:
    """A JDBC URL and its connection properties, from an ``audit.db.url``. ``repr`` hides the password."""

    url: str
    properties: dict[str, str] = field(repr=False)
    shown: str

    def __str__(self) -> str:
        return self.shown


def jdbc_source(db_url: str) -> JdbcSource:
    """``sqlite:///path`` or ``postgresql[+driver]://user:pw@host:port/db[?key=value]`` as JDBC."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(db_url)
    except ArgumentError:
        raise AnalyticsError("--db must be an SQLAlchemy URL such as sqlite:///audit.db") from None
    shown = url.render_as_string(hide_password=True)
    backend = url.get_backend_name()
    if backend == "sqlite":
        if not url.database or url.database == ":memory:":
            raise AnalyticsError(f"{shown} names no SQLite database file")
        path = Path(url.database).expanduser().resolve()
        if not path.is_file():
            raise AnalyticsError(f"the SQLite database {path} does not exist")
        return JdbcSource(f"jdbc:sqlite:{path}", {"driver": "org.sqlite.JDBC"}, shown)
    if backend == "postgresql":
        if not url.database:
            raise AnalyticsError(f"{shown} names no database")
        host = url.host or "localhost"
        host = f"[{host}]" if ":" in host else host
        properties = {"driver": "org.postgresql.Driver"}
        properties |= {key: str(value) for key, value in url.query.items() if isinstance(value, str)}
        if url.username:
            properties["user"] = url.username
        if url.password is not None:
            properties["password"] = str(url.password)
        return JdbcSource(f"jdbc:postgresql://{host}:{url.port or 5432}/{url.database}", properties, shown)
    raise AnalyticsError(f"unsupported audit database {backend!r}: use sqlite:///... or postgresql://...")


def is_uri(location: Location) -> bool:
    """A Hadoop file system URI (``hdfs://``, ``s3a://``, ``file:/``) rather than a local path."""
    return isinstance(location, str) and ":/" in location


def child(location: Location, name: str) -> str:
    """``name`` inside ``location``, as text Spark and Hadoop take."""
    return f"{str(location).rstrip('/')}/{name}" if is_uri(location) else str(Path(location) / name)


def read_events(spark: SparkSession, *, input_dir: Location | None = None, db_url: str | None = None) -> DataFrame:
    """The audit events in ``EVENT_SCHEMA``, from an exported Parquet directory (a local path or a Hadoop
    URI) or the audit database."""
    if (input_dir is None) == (db_url is None):
        raise AnalyticsError("give exactly one of an input directory and a database URL")
    if input_dir is not None:
        if not is_uri(input_dir) and not Path(input_dir).is_dir():
            raise AnalyticsError(f"the input directory {input_dir} does not exist")
        return spark.read.schema(PARQUET_SCHEMA).parquet(str(input_dir)).select(*EVENT_COLUMNS)
    assert db_url is not None
    return _read_jdbc(spark, jdbc_source(db_url))


def _read_jdbc(spark: SparkSession, source: JdbcSource) -> DataFrame:
    """The audit table, split by ``id`` ranges into parallel reads. Only its id bounds reach the driver."""
    bounds = spark.read.jdbc(source.url, _BOUNDS_QUERY, properties=source.properties).first()
    properties = {**source.properties, "fetchsize": "10000"}
    if bounds is None or bounds["n"] == 0:
        raw = spark.read.jdbc(source.url, audit_events.name, properties=properties)
    else:
        partitions = max(1, min(spark.sparkContext.defaultParallelism * 4, int(bounds["n"]) // ROWS_PER_JDBC_PARTITION))
        raw = spark.read.jdbc(
            source.url,
            audit_events.name,
            column="id",
            lowerBound=int(bounds["lo"]),
            upperBound=int(bounds["hi"]) + 1,
            numPartitions=partitions,
            properties=properties,
        )
    # Drivers map column types their own way (SQLite's INTEGER id is an int); settle on EVENT_SCHEMA.
    return raw.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in EVENT_SCHEMA.fields])
