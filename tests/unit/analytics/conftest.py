"""One real local Spark session (``local[2]``) shared by every analytics unit test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from app.analytics.session import build_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session("local[2]", app_name="kts-analytics-tests")
    yield session
    session.stop()
