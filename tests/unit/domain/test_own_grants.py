"""The preflight of kts's own grants: which of the needed grants a cluster's ACLs lack, and the commands."""

from __future__ import annotations

from app.domain.acl import AccessControlEntry, PatternType, ResourcePattern
from app.domain.own_grants import NEEDED, grant_commands, missing_grants, missing_grants_message

KTS = "User:kts"
CLUSTER = ResourcePattern("Cluster", "kafka-cluster")
USERS = ResourcePattern("User", "*")


def allow(principal: str, operation: str) -> AccessControlEntry:
    return AccessControlEntry(principal, "*", operation, "Allow")


def names(acls: dict[ResourcePattern, frozenset[AccessControlEntry]]) -> list[str]:
    return [str(grant) for grant in missing_grants(acls, KTS)]


def test_the_documented_grants_leave_nothing_missing() -> None:
    acls = {
        USERS: frozenset({allow(KTS, "CreateTokens"), allow(KTS, "DescribeTokens")}),
        CLUSTER: frozenset({allow(KTS, "Alter"), allow(KTS, "Describe")}),
    }
    assert names(acls) == []


def test_each_missing_grant_is_named() -> None:
    acls = {CLUSTER: frozenset({allow(KTS, "Describe")})}
    assert names(acls) == ["CreateTokens on User", "DescribeTokens on User", "Alter on Cluster"]


def test_all_alter_and_the_other_ways_count() -> None:
    acls = {
        ResourcePattern("User", "app-", PatternType.PREFIXED): frozenset({allow(KTS, "All")}),
        ResourcePattern("DelegationToken", "*"): frozenset({allow(KTS, "Describe")}),
        CLUSTER: frozenset({allow(KTS, "Alter")}),  # Alter implies Describe
    }
    assert names(acls) == []


def test_grants_of_others_and_denials_do_not_count() -> None:
    acls = {
        USERS: frozenset({allow("User:other", "CreateTokens"), AccessControlEntry(KTS, "*", "DescribeTokens", "Deny")}),
        CLUSTER: frozenset({allow(KTS, "Describe"), allow("User:other", "Alter")}),
    }
    assert names(acls) == ["CreateTokens on User", "DescribeTokens on User", "Alter on Cluster"]


def test_acls_read_without_describe_on_the_cluster_mean_a_super_user() -> None:
    assert names({}) == []
    assert names({USERS: frozenset({allow(KTS, "CreateTokens")})}) == []


def test_the_line_names_every_grant_and_the_commands_that_add_them() -> None:
    line = missing_grants_message(list(NEEDED), KTS, "127.0.0.1:9092", unread=True)
    assert "\n" not in line
    assert line.startswith(
        "kts's principal User:kts lacks grants on the cluster at 127.0.0.1:9092: CreateTokens on User,"
    )
    assert grant_commands(list(NEEDED), KTS, "127.0.0.1:9092") == [
        "kafka-acls.sh --bootstrap-server 127.0.0.1:9092 --command-config admin.properties --add --allow-principal "
        "User:kts --operation CreateTokens --operation DescribeTokens --user-principal '*'",
        "kafka-acls.sh --bootstrap-server 127.0.0.1:9092 --command-config admin.properties --add --allow-principal "
        "User:kts --operation Alter --operation Describe --cluster",
    ]
    assert " && ".join(grant_commands(list(NEEDED), KTS, "127.0.0.1:9092")) in line
