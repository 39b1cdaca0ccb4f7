"""The top-N tables of owners and requesters."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from app.analytics import transforms as t
from tests.unit.analytics.events import create, events_frame, renew, rows

T0 = 1_700_000_000_000


def window(spark: SparkSession) -> DataFrame:
    return events_frame(
        spark,
        [
            create(1, T0, "b1", "User:bob", "User:svc"),
            create(2, T0, "b2", "User:bob", "User:svc"),
            create(3, T0, "b3", "User:bob", "User:bob"),
            create(4, T0, "a1", "User:alice", "User:alice"),
            create(5, T0, "c1", "User:carol", "User:svc"),
            create(6, T0, None, "User:erin", "User:svc", outcome="denied"),
            create(7, T0, None, "User:bob", "User:mallory", outcome="denied"),
            create(8, T0, None, "User:alice", "User:mallory", outcome="denied"),
            create(9, T0, "p1", "User:bob", "User:bob", outcome="pending"),
            renew(10, T0, "a1", "User:alice", T0),
            renew(11, T0, "a1", "User:alice", T0),
            renew(12, T0, "a1", "User:alice", T0),
            renew(13, T0, "b3", "User:bob", T0),
            renew(14, T0, "d0", "User:dave", T0),  # created before the window
            renew(15, T0, "d0", "User:dave", T0),
            renew(16, T0, "b1", "User:bob", T0, outcome="denied"),
        ],
    )


def top_requesters(events: DataFrame, *, top_n: int) -> DataFrame:
    return t.top_requesters(t.issued(t.token_lifecycle(events)), t.denials(t.overview(events)), top_n=top_n)


def test_top_owners_rank_by_tokens_then_renewals_then_name(spark: SparkSession) -> None:
    found = t.top_owners(t.token_lifecycle(window(spark)), top_n=3)

    assert rows(found, "rank", "owner", "tokens", "impersonated", "requesters", "renewals") == [
        (1, "User:bob", 3, 2, 2, 1),
        (2, "User:alice", 1, 0, 1, 3),
        (3, "User:carol", 1, 1, 1, 0),
    ]
    everyone = t.top_owners(t.token_lifecycle(window(spark)), top_n=10)
    assert rows(everyone, "rank", "owner", "tokens", "renewals")[-1] == (
        4,
        "User:dave",
        0,
        2,
    )


def test_top_requesters_rank_by_tokens_then_refusals_then_name(spark: SparkSession) -> None:
    found = top_requesters(window(spark), top_n=10)

    assert rows(found, "rank", "token_requester", "tokens", "for_others", "owners", "refused") == [
        (1, "User:svc", 3, 3, 2, 1),
        (2, "User:alice", 1, 0, 1, 0),
        (3, "User:bob", 1, 0, 1, 0),
        (4, "User:mallory", 0, 0, 0, 2),
    ]
    assert rows(top_requesters(window(spark), top_n=1), "token_requester") == [("User:svc",)]
