"""ACLs as Kafka's ``AclAuthorizer`` (ZooKeeper mode) evaluates them, and what kts lets callers grant.

The authorization cases follow Kafka's ``AclAuthorizer.authorizeAction`` / ``matchingAclExists`` and the
cases of ``AclAuthorizerTest`` (deny precedence, wildcard resource, prefixed resource, single-character
names, empty name, ACL inheritance), restated for the resources kts manages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest

from app.domain.acl import (
    GRANTABLE_OPERATIONS,
    MAX_RESOURCE_NAME_LENGTH,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclAuthorizer,
    AclBinding,
    AclFilter,
    AclSnapshot,
    PatternType,
    Permission,
    ResourcePattern,
    acls_allow,
    host_key,
    super_user_grant_warnings,
    validate_binding,
)
from app.domain.authorization import CLUSTER_RESOURCE_NAME, Caller, Operation, ResourceType
from app.domain.errors import InvalidInput
from app.domain.principal import KafkaPrincipal

ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")
JOE = KafkaPrincipal.user("joe")
ADMIN = KafkaPrincipal.user("admin")
GROUP_X = KafkaPrincipal("Group", "x")
HOST = "198.51.100.1"
OTHER_HOST = "198.51.100.2"

USER = ResourceType.USER
TOKEN = ResourceType.DELEGATION_TOKEN
CLUSTER = ResourceType.CLUSTER
TOPIC = ResourceType.TOPIC


def ace(
    principal: KafkaPrincipal | str = ALICE,
    operation: str = Operation.CREATE_TOKENS,
    permission: str = Permission.ALLOW,
    host: str = WILDCARD_HOST,
) -> AccessControlEntry:
    return AccessControlEntry(str(principal), host, operation, permission)


def allow(principal: KafkaPrincipal | str = ALICE, operation: str = Operation.CREATE_TOKENS, host: str = "*"):
    return ace(principal, operation, Permission.ALLOW, host)


def deny(principal: KafkaPrincipal | str = ALICE, operation: str = Operation.CREATE_TOKENS, host: str = "*"):
    return ace(principal, operation, Permission.DENY, host)


def literal(resource_type: str, name: str) -> ResourcePattern:
    return ResourcePattern(resource_type, name, PatternType.LITERAL)


def prefixed(resource_type: str, name: str) -> ResourcePattern:
    return ResourcePattern(resource_type, name, PatternType.PREFIXED)


def snapshot(acls: Mapping[ResourcePattern, Iterable[AccessControlEntry]]) -> AclSnapshot:
    return AclSnapshot({pattern: frozenset(entries) for pattern, entries in acls.items()})


def authorized(
    acls: Mapping[ResourcePattern, Iterable[AccessControlEntry]],
    *,
    principal: KafkaPrincipal = ALICE,
    host: str = HOST,
    operation: Operation = Operation.CREATE_TOKENS,
    resource_type: ResourceType = USER,
    name: str = "User:joe",
    super_users: Iterable[KafkaPrincipal] = (),
    allow_everyone_if_no_acl_found: bool = False,
) -> bool:
    current = snapshot(acls)
    authorizer = AclAuthorizer(
        super_users, lambda: current, allow_everyone_if_no_acl_found=allow_everyone_if_no_acl_found
    )
    return authorizer.authorize(Caller(principal, host), operation, resource_type, name)


JOE_USER = literal(USER, "User:joe")


# --- super users ---------------------------------------------------------------------------------------------


def test_super_user_passes_with_no_acls_at_all() -> None:
    assert authorized({}, principal=ADMIN, super_users=[ADMIN])
    assert not authorized({}, principal=ALICE, super_users=[ADMIN])


@pytest.mark.parametrize("operation", list(Operation))
def test_super_user_passes_every_operation_despite_a_deny(operation: Operation) -> None:
    acls = {
        JOE_USER: [deny(WILDCARD_PRINCIPAL, Operation.ALL), deny(ADMIN, Operation.ALL, HOST)],
        literal(USER, WILDCARD_RESOURCE): [deny(WILDCARD_PRINCIPAL, Operation.ALL)],
    }
    assert authorized(acls, principal=ADMIN, operation=operation, super_users=[ADMIN])
    assert not authorized(acls, principal=ALICE, operation=operation, super_users=[ADMIN])


def test_super_users_are_compared_by_type_and_name() -> None:
    authorizer = AclAuthorizer([ADMIN, GROUP_X], AclSnapshot)
    assert authorizer.is_super_user(KafkaPrincipal("User", "admin"))
    assert authorizer.is_super_user(KafkaPrincipal("Group", "x"))
    assert not authorizer.is_super_user(KafkaPrincipal("Group", "admin"))
    assert not authorizer.is_super_user(KafkaPrincipal("User", "x"))
    assert not authorizer.is_super_user(KafkaPrincipal("User", "Admin"))
    assert not AclAuthorizer([], AclSnapshot).is_super_user(ADMIN)


def test_a_principal_of_another_type_with_a_super_users_name_is_not_a_super_user() -> None:
    assert not authorized({}, principal=KafkaPrincipal("Group", "admin"), super_users=[ADMIN])


# --- resource matching -----------------------------------------------------------------------------------------


def test_literal_acl_matches_exactly_its_name() -> None:
    acls = {JOE_USER: [allow()]}
    assert authorized(acls, name="User:joe")
    for other in ("User:jo", "User:joel", "user:joe", "User:Joe", "User:joe ", "*", ""):
        assert not authorized(acls, name=other), other


def test_literal_acl_is_not_a_prefix() -> None:
    assert not authorized({literal(USER, "User:jo"): [allow()]}, name="User:joe")


def test_literal_acl_matches_only_its_resource_type() -> None:
    acls = {literal(TOKEN, "User:joe"): [allow(operation=Operation.ALL)]}
    assert not authorized(acls, resource_type=USER, name="User:joe")
    assert authorized(acls, resource_type=TOKEN, name="User:joe", operation=Operation.DESCRIBE)


@pytest.mark.parametrize("name", ["User:joe", "User:bob", "Group:x", "User:*", "*", ""])
def test_literal_wildcard_resource_matches_any_name_of_its_type(name: str) -> None:
    acls = {literal(USER, WILDCARD_RESOURCE): [allow()]}
    assert authorized(acls, name=name)


def test_literal_wildcard_resource_does_not_match_other_resource_types() -> None:
    acls = {literal(USER, WILDCARD_RESOURCE): [allow(operation=Operation.ALL)]}
    assert not authorized(acls, resource_type=TOKEN, name="tok-1", operation=Operation.DESCRIBE)
    assert not authorized(acls, resource_type=CLUSTER, name=CLUSTER_RESOURCE_NAME, operation=Operation.ALTER)


def test_empty_resource_name_is_matched_by_the_wildcard_resource_only() -> None:
    # Kafka's testAuthorizeWithEmptyResourceName.
    assert not authorized({}, resource_type=TOPIC, name="", operation=Operation.READ)
    acls = {literal(TOPIC, WILDCARD_RESOURCE): [allow(operation=Operation.READ)]}
    assert authorized(acls, resource_type=TOPIC, name="", operation=Operation.READ)
    assert not authorized({prefixed(TOPIC, "a"): [allow(operation=Operation.READ)]}, resource_type=TOPIC, name="")


@pytest.mark.parametrize("name", ["User:team-a", "User:team-", "User:team-a-b", "User:team-/x"])
def test_prefixed_acl_matches_names_starting_with_the_prefix(name: str) -> None:
    assert authorized({prefixed(USER, "User:team-"): [allow()]}, name=name)


@pytest.mark.parametrize("name", ["User:team", "User:tea", "User:other-team-a", "User:Team-a", "Group:team-a", ""])
def test_prefixed_acl_does_not_match_other_names(name: str) -> None:
    assert not authorized({prefixed(USER, "User:team-"): [allow()]}, name=name)


def test_prefixed_acl_does_not_match_other_resource_types() -> None:
    acls = {prefixed(USER, "User:team-"): [allow(operation=Operation.ALL)]}
    assert not authorized(acls, resource_type=TOKEN, name="User:team-a", operation=Operation.DESCRIBE)
    assert authorized(acls, resource_type=USER, name="User:team-a", operation=Operation.DESCRIBE_TOKENS)


def test_single_character_names_and_prefixes() -> None:
    # Kafka's testSingleCharacterResourceAcls.
    acls = {literal(TOPIC, "f"): [allow(operation=Operation.READ)]}
    assert authorized(acls, resource_type=TOPIC, name="f", operation=Operation.READ)
    assert not authorized(acls, resource_type=TOPIC, name="foo", operation=Operation.READ)
    acls[prefixed(TOPIC, "_")] = [allow(operation=Operation.READ)]
    assert authorized(acls, resource_type=TOPIC, name="_foo", operation=Operation.READ)
    assert authorized(acls, resource_type=TOPIC, name="_", operation=Operation.READ)
    assert not authorized(acls, resource_type=TOPIC, name="foo_", operation=Operation.READ)


def test_prefixed_wildcard_is_not_a_wildcard() -> None:
    # Only the LITERAL "*" means every resource; a PREFIXED "*" is the prefix "*".
    acls = {prefixed(USER, WILDCARD_RESOURCE): [allow()]}
    assert not authorized(acls, name="User:joe")
    assert authorized(acls, name="*joe")


def test_allow_on_a_prefix_among_many_unrelated_deny_prefixes() -> None:
    # Kafka's testAuthorizeWithPrefixedResource: neighbouring prefixes in sort order do not get in the way.
    acls: dict[ResourcePattern, list[AccessControlEntry]] = {
        pattern: [deny(operation=Operation.ALL)]
        for pattern in (
            literal(TOKEN, "a_other"),
            prefixed(TOKEN, "a_other"),
            prefixed(TOKEN, "foo-1"),
            prefixed(TOKEN, "foo-2-zzz"),
            prefixed(TOKEN, "fooo-"),
            prefixed(TOKEN, "fo-"),
            prefixed(TOKEN, "fop-"),
            prefixed(TOKEN, "fon-"),
            prefixed(TOKEN, "z_other"),
            literal(TOKEN, "z_other"),
        )
    }
    acls[prefixed(TOKEN, "foo-")] = [allow(operation=Operation.DESCRIBE)]
    assert authorized(acls, resource_type=TOKEN, name="foo-abc", operation=Operation.DESCRIBE)
    assert not authorized(acls, resource_type=TOKEN, name="foo-1abc", operation=Operation.DESCRIBE)


# --- principal, host, operation -------------------------------------------------------------------------------


def test_principal_must_match_exactly() -> None:
    acls = {JOE_USER: [allow(ALICE)]}
    assert authorized(acls, principal=ALICE)
    assert not authorized(acls, principal=BOB)
    assert not authorized(acls, principal=KafkaPrincipal.user("Alice"))
    assert not authorized(acls, principal=KafkaPrincipal("Group", "alice"))


@pytest.mark.parametrize("principal", [ALICE, BOB, KafkaPrincipal.user("CN=a:b"), KafkaPrincipal.user("*"), GROUP_X])
def test_wildcard_principal_matches_every_caller(principal: KafkaPrincipal) -> None:
    # Kafka: acl.kafkaPrincipal == principal || acl.kafkaPrincipal == User:* -- the wildcard is on the
    # ACL side only, so User:* matches callers of any principal type (Group:x included).
    assert authorized({JOE_USER: [allow(WILDCARD_PRINCIPAL)]}, principal=principal)


def test_wildcard_principal_deny_refuses_callers_of_any_type() -> None:
    acls = {JOE_USER: [allow(GROUP_X), deny(WILDCARD_PRINCIPAL)]}
    assert not authorized(acls, principal=GROUP_X)


def test_only_user_star_is_a_wildcard_principal() -> None:
    acls = {JOE_USER: [allow("Group:*"), allow("User:al*")]}
    assert not authorized(acls, principal=GROUP_X)
    assert not authorized(acls, principal=ALICE)
    assert authorized(acls, principal=KafkaPrincipal("Group", "*"))


def test_host_must_match_exactly_or_be_the_wildcard() -> None:
    acls = {JOE_USER: [allow(host=HOST)]}
    assert authorized(acls, host=HOST)
    assert not authorized(acls, host=OTHER_HOST)
    assert not authorized(acls, host="198.51.100.10")
    wildcard = {JOE_USER: [allow(host=WILDCARD_HOST)]}
    for host in (HOST, OTHER_HOST, "::1", "*"):
        assert authorized(wildcard, host=host)


def test_a_caller_without_a_known_host_matches_only_wildcard_host_acls() -> None:
    caller = Caller(ALICE)
    assert caller.host == "*"
    assert not acls_allow(
        [allow(host=HOST)], caller.principal, caller.host, Operation.CREATE_TOKENS, allow_everyone_if_no_acl_found=False
    )
    assert acls_allow(
        [allow(host="*")], caller.principal, caller.host, Operation.CREATE_TOKENS, allow_everyone_if_no_acl_found=False
    )


def test_host_specific_allow_and_deny() -> None:
    # Kafka's testTopicAcl / testAllowAccessWithCustomPrincipal.
    acls = {JOE_USER: [allow(host=HOST), allow(host=OTHER_HOST), deny(host=HOST)]}
    assert not authorized(acls, host=HOST)
    assert authorized(acls, host=OTHER_HOST)


# Each row: textual forms of one address, as Kafka prints it, as operators write it, in other cases.
SAME_ADDRESS = [
    ("0:0:0:0:0:0:0:1", "::1"),
    ("::1", "0:0:0:0:0:0:0:1"),
    ("0:0::1", "::0:1"),
    ("2001:db8:0:0:0:0:0:a", "2001:DB8::A"),
    ("2001:0db8:0000:0000:0000:0000:0000:000a", "2001:db8::a"),
    ("FE80::1", "fe80:0:0:0:0:0:0:1"),
    ("::ffff:198.51.100.1", "198.51.100.1"),
    ("198.51.100.1", "::ffff:198.51.100.1"),
    ("0:0:0:0:0:ffff:c633:6401", "198.51.100.1"),
    ("::FFFF:C633:6401", "::ffff:198.51.100.1"),
    ("198.51.100.1", "198.51.100.1"),
    ("some-host", "some-host"),
]
DIFFERENT_ADDRESSES = [
    ("::1", "127.0.0.1"),  # loopback in both families, but not one address (nor is it for Java)
    ("::1", "::2"),
    ("::198.51.100.1", "198.51.100.1"),  # IPv4-compatible, not IPv4-mapped: Java keeps it IPv6
    ("::ffff:198.51.100.1", "198.51.100.2"),
    ("2001:db8::a", "2001:db8::a:0"),
    ("Some-Host", "some-host"),  # not an address: compared as a string
    ("198.51.100.1", "*"),
]


@pytest.mark.parametrize(("acl_host", "caller_host"), SAME_ADDRESS)
def test_hosts_are_compared_as_addresses_for_allow(acl_host: str, caller_host: str) -> None:
    assert authorized({JOE_USER: [allow(host=acl_host)]}, host=caller_host)


@pytest.mark.parametrize(("acl_host", "caller_host"), SAME_ADDRESS)
def test_hosts_are_compared_as_addresses_for_deny(acl_host: str, caller_host: str) -> None:
    acls = {JOE_USER: [allow(host=WILDCARD_HOST), deny(host=acl_host)]}
    assert not authorized(acls, host=caller_host)
    assert authorized(acls, host="203.0.113.9")  # positive control: the Deny is what refused


@pytest.mark.parametrize(("acl_host", "caller_host"), DIFFERENT_ADDRESSES)
def test_different_addresses_do_not_match_for_allow(acl_host: str, caller_host: str) -> None:
    assert not authorized({JOE_USER: [allow(host=acl_host)]}, host=caller_host)


@pytest.mark.parametrize(("acl_host", "caller_host"), DIFFERENT_ADDRESSES)
def test_different_addresses_do_not_match_for_deny(acl_host: str, caller_host: str) -> None:
    assert authorized({JOE_USER: [allow(host=WILDCARD_HOST), deny(host=acl_host)]}, host=caller_host)


def test_an_entry_parses_its_host_once_and_keeps_its_stored_text() -> None:
    entry = allow(host="0:0:0:0:0:0:0:1")
    assert entry.host == "0:0:0:0:0:0:0:1"  # written back to ZooKeeper as it was read
    assert entry.host_key == host_key("::1")
    assert entry == allow(host="0:0:0:0:0:0:0:1")
    assert entry != allow(host="::1")  # two stored entries stay two entries, as in Kafka


def test_operation_must_match_exactly() -> None:
    acls = {JOE_USER: [allow(operation=Operation.CREATE_TOKENS)]}
    assert authorized(acls, operation=Operation.CREATE_TOKENS)
    assert not authorized(acls, operation=Operation.DESCRIBE_TOKENS)
    assert not authorized(acls, operation=Operation.ALL)


@pytest.mark.parametrize("operation", list(Operation))
def test_all_matches_every_operation(operation: Operation) -> None:
    assert authorized({JOE_USER: [allow(operation=Operation.ALL)]}, operation=operation)
    assert not authorized(
        {JOE_USER: [allow(operation=Operation.ALL), deny(operation=Operation.ALL)]}, operation=operation
    )


# --- deny wins -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("deny_pattern", "deny_entry"),
    [
        pytest.param(JOE_USER, deny(), id="same-entry"),
        pytest.param(JOE_USER, deny(operation=Operation.ALL), id="deny-all-operations"),
        pytest.param(JOE_USER, deny(WILDCARD_PRINCIPAL), id="deny-user-star"),
        pytest.param(JOE_USER, deny(host=WILDCARD_HOST), id="deny-host-star"),
        pytest.param(JOE_USER, deny(host=HOST), id="deny-callers-host"),
        pytest.param(literal(USER, WILDCARD_RESOURCE), deny(), id="deny-on-wildcard-resource"),
        pytest.param(prefixed(USER, "User:j"), deny(), id="deny-on-prefix"),
        pytest.param(prefixed(USER, "User:joe"), deny(), id="deny-on-whole-name-prefix"),
        pytest.param(
            prefixed(USER, "User:"), deny(WILDCARD_PRINCIPAL, Operation.ALL, WILDCARD_HOST), id="deny-everything"
        ),
    ],
)
def test_a_matching_deny_beats_a_literal_allow(deny_pattern: ResourcePattern, deny_entry: AccessControlEntry) -> None:
    allow_only = {JOE_USER: [allow(host=HOST)]}
    assert authorized(allow_only)
    acls = {JOE_USER: [allow(host=HOST)]}
    acls.setdefault(deny_pattern, []).append(deny_entry)
    assert not authorized(acls)


@pytest.mark.parametrize(
    "allow_entry",
    [
        allow(),
        allow(operation=Operation.ALL),
        allow(WILDCARD_PRINCIPAL),
        allow(WILDCARD_PRINCIPAL, Operation.ALL),
        allow(host=HOST),
    ],
)
def test_a_specific_deny_beats_any_allow(allow_entry: AccessControlEntry) -> None:
    # Kafka's testDenyTakesPrecedence: Allow User:* All from *, Deny the caller from its host.
    for allow_pattern in (JOE_USER, literal(USER, WILDCARD_RESOURCE), prefixed(USER, "User:j")):
        acls = {allow_pattern: [allow_entry]}
        assert authorized(acls)
        acls[JOE_USER] = [*acls.get(JOE_USER, []), deny(ALICE, Operation.ALL, HOST)]
        assert not authorized(acls)


@pytest.mark.parametrize(
    ("deny_pattern", "deny_entry"),
    [
        pytest.param(JOE_USER, deny(BOB), id="other-principal"),
        pytest.param(JOE_USER, deny("Group:*"), id="group-star-is-no-wildcard"),
        pytest.param(JOE_USER, deny(host=OTHER_HOST), id="other-host"),
        pytest.param(JOE_USER, deny(operation=Operation.DESCRIBE_TOKENS), id="other-operation"),
        pytest.param(literal(USER, "User:bob"), deny(), id="other-literal-resource"),
        pytest.param(prefixed(USER, "User:b"), deny(), id="other-prefix"),
        pytest.param(prefixed(USER, "User:joel"), deny(), id="longer-prefix"),
        pytest.param(literal(TOKEN, "User:joe"), deny(operation=Operation.ALL), id="other-resource-type"),
        pytest.param(literal(TOKEN, WILDCARD_RESOURCE), deny(WILDCARD_PRINCIPAL, Operation.ALL), id="other-type-star"),
    ],
)
def test_a_deny_that_does_not_match_does_not_refuse(
    deny_pattern: ResourcePattern, deny_entry: AccessControlEntry
) -> None:
    acls = {JOE_USER: [allow()]}
    acls.setdefault(deny_pattern, []).append(deny_entry)
    assert authorized(acls)


# --- implied operations (Kafka's testAclInheritance) ----------------------------------------------------------

_DESCRIBE_IMPLIERS = {Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}


def _allow_implies(granted: Operation, asked: Operation) -> bool:
    return (
        granted in (asked, Operation.ALL)
        or (asked is Operation.DESCRIBE and granted in _DESCRIBE_IMPLIERS)
        or (asked is Operation.DESCRIBE_CONFIGS and granted is Operation.ALTER_CONFIGS)
    )


@pytest.mark.parametrize("granted", list(Operation))
def test_implications_of_allow(granted: Operation) -> None:
    acls = {literal(CLUSTER, CLUSTER_RESOURCE_NAME): [allow(operation=granted)]}
    for asked in Operation:
        result = authorized(acls, resource_type=CLUSTER, name=CLUSTER_RESOURCE_NAME, operation=asked)
        assert result is _allow_implies(granted, asked), f"Allow {granted} -> {asked}"


@pytest.mark.parametrize("denied", list(Operation))
def test_implications_of_deny(denied: Operation) -> None:
    # A Deny refuses exactly its operation (every one for All): Deny Alter does not refuse Describe.
    acls = {literal(CLUSTER, CLUSTER_RESOURCE_NAME): [deny(operation=denied), allow(operation=Operation.ALL)]}
    for asked in Operation:
        result = authorized(acls, resource_type=CLUSTER, name=CLUSTER_RESOURCE_NAME, operation=asked)
        assert result is not (denied in (asked, Operation.ALL)), f"Deny {denied} -> {asked}"


@pytest.mark.parametrize("granted", sorted(_DESCRIBE_IMPLIERS))
def test_describe_is_implied_by_read_write_delete_alter(granted: Operation) -> None:
    acls = {literal(TOKEN, "tok-1"): [allow(operation=granted)]}
    assert authorized(acls, resource_type=TOKEN, name="tok-1", operation=Operation.DESCRIBE)
    assert not authorized(acls, resource_type=TOKEN, name="tok-1", operation=Operation.DESCRIBE_CONFIGS)


def test_describe_configs_is_implied_by_alter_configs_only() -> None:
    acls = {literal(CLUSTER, CLUSTER_RESOURCE_NAME): [allow(operation=Operation.ALTER_CONFIGS)]}
    kwargs = {"resource_type": CLUSTER, "name": CLUSTER_RESOURCE_NAME}
    assert authorized(acls, operation=Operation.DESCRIBE_CONFIGS, **kwargs)
    assert not authorized(acls, operation=Operation.DESCRIBE, **kwargs)
    assert not authorized(acls, operation=Operation.ALTER, **kwargs)


def test_nothing_implies_describe_tokens_or_create_tokens() -> None:
    for granted in (Operation.DESCRIBE, Operation.READ, Operation.ALTER, Operation.CREATE_TOKENS):
        acls = {JOE_USER: [allow(operation=granted)]}
        assert not authorized(acls, operation=Operation.DESCRIBE_TOKENS), granted
    for granted in (Operation.DESCRIBE_TOKENS, Operation.WRITE, Operation.CREATE, Operation.ALTER):
        acls = {JOE_USER: [allow(operation=granted)]}
        assert not authorized(acls, operation=Operation.CREATE_TOKENS), granted


def test_deny_alter_does_not_deny_an_implied_describe() -> None:
    acls = {literal(TOKEN, "tok-1"): [allow(operation=Operation.DESCRIBE), deny(operation=Operation.ALTER)]}
    assert authorized(acls, resource_type=TOKEN, name="tok-1", operation=Operation.DESCRIBE)
    assert not authorized(acls, resource_type=TOKEN, name="tok-1", operation=Operation.ALTER)


def test_deny_alter_does_not_deny_describe_implied_by_allow_alter() -> None:
    acls = {literal(TOKEN, "tok-1"): [allow(operation=Operation.ALTER), deny(operation=Operation.ALTER, host=HOST)]}
    assert authorized(acls, resource_type=TOKEN, name="tok-1", operation=Operation.DESCRIBE)


def test_deny_describe_refuses_a_describe_implied_by_another_allow() -> None:
    acls = {literal(TOKEN, "tok-1"): [allow(operation=Operation.READ), deny(operation=Operation.DESCRIBE)]}
    assert not authorized(acls, resource_type=TOKEN, name="tok-1", operation=Operation.DESCRIBE)
    assert authorized(acls, resource_type=TOKEN, name="tok-1", operation=Operation.READ)


def test_an_implying_allow_must_match_principal_and_host() -> None:
    acls = {literal(TOKEN, "tok-1"): [allow(BOB, Operation.READ), allow(operation=Operation.READ, host=OTHER_HOST)]}
    assert not authorized(acls, resource_type=TOKEN, name="tok-1", operation=Operation.DESCRIBE)


# --- no ACL found ---------------------------------------------------------------------------------------------


def test_no_acl_at_all_is_allowed_only_with_allow_everyone_if_no_acl_found() -> None:
    assert not authorized({})
    assert authorized({}, allow_everyone_if_no_acl_found=True)


def test_acls_on_other_resources_do_not_count_as_found() -> None:
    acls = {
        literal(USER, "User:bob"): [deny(WILDCARD_PRINCIPAL, Operation.ALL)],
        literal(USER, "User:jo"): [allow(BOB)],
        prefixed(USER, "User:joel"): [allow(BOB)],
        prefixed(USER, "Group:"): [allow(BOB)],
        prefixed(USER, "User:x"): [allow(BOB)],
        literal(TOKEN, "User:joe"): [allow(BOB)],
        literal(TOKEN, WILDCARD_RESOURCE): [allow(BOB)],
        prefixed(TOKEN, "User:"): [allow(BOB)],
        literal(CLUSTER, CLUSTER_RESOURCE_NAME): [allow(BOB)],
    }
    assert authorized(acls, allow_everyone_if_no_acl_found=True)
    assert not authorized(acls, allow_everyone_if_no_acl_found=False)


@pytest.mark.parametrize(
    "pattern",
    [JOE_USER, literal(USER, WILDCARD_RESOURCE), prefixed(USER, "User:"), prefixed(USER, "User:joe")],
    ids=["literal", "wildcard", "short-prefix", "whole-name-prefix"],
)
def test_acls_on_the_resource_for_someone_else_refuse_even_with_allow_everyone(pattern: ResourcePattern) -> None:
    for entry in (allow(BOB), deny(BOB), allow(ALICE, host=OTHER_HOST), allow(ALICE, Operation.DESCRIBE_TOKENS)):
        acls = {pattern: [entry]}
        assert not authorized(acls, allow_everyone_if_no_acl_found=True), entry
        assert authorized(acls, principal=ADMIN, super_users=[ADMIN], allow_everyone_if_no_acl_found=True)


def test_acls_allow_with_no_entries_follows_the_flag() -> None:
    assert acls_allow([], ALICE, HOST, Operation.DESCRIBE, allow_everyone_if_no_acl_found=True)
    assert not acls_allow([], ALICE, HOST, Operation.DESCRIBE, allow_everyone_if_no_acl_found=False)
    assert acls_allow(iter(()), ALICE, HOST, Operation.DESCRIBE, allow_everyone_if_no_acl_found=True)


def test_acls_allow_with_entries_ignores_the_flag() -> None:
    entries = [allow(BOB, Operation.DESCRIBE)]
    for flag in (True, False):
        assert not acls_allow(entries, ALICE, HOST, Operation.DESCRIBE, allow_everyone_if_no_acl_found=flag)
        assert acls_allow(entries, BOB, HOST, Operation.DESCRIBE, allow_everyone_if_no_acl_found=flag)


def test_acls_allow_accepts_a_generator() -> None:
    entries = (entry for entry in [deny(BOB), allow(ALICE)])
    assert acls_allow(entries, ALICE, HOST, Operation.CREATE_TOKENS, allow_everyone_if_no_acl_found=False)


# --- the kts stories ------------------------------------------------------------------------------------------


def test_create_tokens_on_user_joe() -> None:
    # kafka-acls.sh --allow-principal User:alice --operation CreateTokens --user-principal User:joe
    acls = {JOE_USER: [allow(ALICE, Operation.CREATE_TOKENS)]}
    assert authorized(acls, principal=ALICE, operation=Operation.CREATE_TOKENS, name="User:joe")
    assert not authorized(acls, principal=ALICE, operation=Operation.CREATE_TOKENS, name="User:bob")
    assert not authorized(acls, principal=ALICE, operation=Operation.DESCRIBE_TOKENS, name="User:joe")
    assert not authorized(acls, principal=BOB, operation=Operation.CREATE_TOKENS, name="User:joe")
    assert not authorized(acls, principal=JOE, operation=Operation.CREATE_TOKENS, name="User:joe")
    assert not authorized(
        acls, principal=ALICE, operation=Operation.CREATE_TOKENS, resource_type=TOKEN, name="User:joe"
    )


def test_describe_tokens_on_user_joe() -> None:
    acls = {JOE_USER: [allow(ALICE, Operation.DESCRIBE_TOKENS)]}
    assert authorized(acls, principal=ALICE, operation=Operation.DESCRIBE_TOKENS, name="User:joe")
    assert not authorized(acls, principal=ALICE, operation=Operation.CREATE_TOKENS, name="User:joe")
    assert not authorized(acls, principal=ALICE, operation=Operation.DESCRIBE_TOKENS, name="User:bob")
    assert not authorized(acls, principal=BOB, operation=Operation.DESCRIBE_TOKENS, name="User:joe")


def test_describe_on_a_delegation_token() -> None:
    acls = {literal(TOKEN, "tok-1"): [allow(ALICE, Operation.DESCRIBE)]}
    assert authorized(acls, operation=Operation.DESCRIBE, resource_type=TOKEN, name="tok-1")
    assert not authorized(acls, operation=Operation.DESCRIBE, resource_type=TOKEN, name="tok-2")
    assert not authorized(acls, operation=Operation.DESCRIBE, resource_type=TOKEN, name="tok-10")
    assert not authorized(acls, principal=BOB, operation=Operation.DESCRIBE, resource_type=TOKEN, name="tok-1")
    every_token = {literal(TOKEN, WILDCARD_RESOURCE): [allow(ALICE, Operation.DESCRIBE)]}
    for token_id in ("tok-1", "tok-2", "Xa1b2"):
        assert authorized(every_token, operation=Operation.DESCRIBE, resource_type=TOKEN, name=token_id)


def test_authorizer_reads_the_current_snapshot_on_every_call() -> None:
    holder = [AclSnapshot()]
    authorizer = AclAuthorizer([], lambda: holder[0])
    caller = Caller(ALICE, HOST)
    assert not authorizer.authorize(caller, Operation.CREATE_TOKENS, USER, "User:joe")
    holder[0] = holder[0].replace(JOE_USER, [allow()])
    assert authorizer.authorize(caller, Operation.CREATE_TOKENS, USER, "User:joe")
    holder[0] = holder[0].replace(JOE_USER, [allow(), deny(host=HOST)])
    assert not authorizer.authorize(caller, Operation.CREATE_TOKENS, USER, "User:joe")
    holder[0] = holder[0].replace(JOE_USER, [])
    assert not authorizer.authorize(caller, Operation.CREATE_TOKENS, USER, "User:joe")


def test_authorizer_defaults_to_deny_when_no_acl_is_found() -> None:
    assert not AclAuthorizer([], AclSnapshot).authorize(Caller(ALICE, HOST), Operation.DESCRIBE, TOKEN, "tok-1")
    permissive = AclAuthorizer([], AclSnapshot, allow_everyone_if_no_acl_found=True)
    assert permissive.authorize(Caller(ALICE, HOST), Operation.DESCRIBE, TOKEN, "tok-1")


# --- AclSnapshot ----------------------------------------------------------------------------------------------


def test_matching_collects_literal_wildcard_and_every_matching_prefix() -> None:
    entries = {
        JOE_USER: allow(operation=Operation.CREATE_TOKENS),
        literal(USER, WILDCARD_RESOURCE): allow(BOB),
        prefixed(USER, "U"): allow("User:p1"),
        prefixed(USER, "User:"): allow("User:p2"),
        prefixed(USER, "User:joe"): allow("User:p3"),
        prefixed(USER, "User:joel"): allow("User:no1"),
        prefixed(USER, "User:b"): allow("User:no2"),
        literal(USER, "User:jo"): allow("User:no3"),
        literal(USER, "User:joel"): allow("User:no4"),
        literal(TOKEN, "User:joe"): allow("User:no5"),
        literal(TOKEN, WILDCARD_RESOURCE): allow("User:no6"),
        prefixed(TOKEN, "User:"): allow("User:no7"),
        prefixed(USER, WILDCARD_RESOURCE): allow("User:no8"),
    }
    current = snapshot({pattern: [entry] for pattern, entry in entries.items()})
    found = current.matching(USER, "User:joe")
    assert sorted(found) == sorted(
        [entries[JOE_USER], entries[literal(USER, WILDCARD_RESOURCE)]]
        + [entries[prefixed(USER, p)] for p in ("U", "User:", "User:joe")]
    )


def test_matching_accepts_resource_type_as_plain_string() -> None:
    current = snapshot({JOE_USER: [allow()], prefixed(USER, "User:"): [allow(BOB)]})
    assert sorted(current.matching("User", "User:joe")) == sorted([allow(), allow(BOB)])


def test_matching_on_an_empty_snapshot_is_empty() -> None:
    assert AclSnapshot().matching(USER, "User:joe") == []
    assert AclSnapshot(None).matching(TOKEN, "*") == []


def test_replace_is_copy_on_write() -> None:
    old = snapshot({JOE_USER: [allow()], prefixed(USER, "User:"): [allow(BOB)]})
    new = old.replace(JOE_USER, [deny()])
    assert new is not old
    assert old.entries(JOE_USER) == frozenset({allow()})
    assert new.entries(JOE_USER) == frozenset({deny()})
    assert sorted(old.matching(USER, "User:joe")) == sorted([allow(), allow(BOB)])
    assert len(old) == 2

    newer = new.replace(prefixed(USER, "User:j"), [allow(JOE)])
    assert new.entries(prefixed(USER, "User:j")) == frozenset()
    assert allow(JOE) not in new.matching(USER, "User:joe")
    assert allow(JOE) in newer.matching(USER, "User:joe")
    assert (len(old), len(new), len(newer)) == (2, 2, 3)


def test_replace_replaces_rather_than_merges() -> None:
    old = snapshot({JOE_USER: [allow(), allow(BOB)]})
    assert old.replace(JOE_USER, [deny(JOE)]).entries(JOE_USER) == frozenset({deny(JOE)})


def test_replace_with_no_entries_drops_the_pattern() -> None:
    old = snapshot({JOE_USER: [allow()], prefixed(USER, "User:"): [allow(BOB)]})
    new = old.replace(JOE_USER, []).replace(prefixed(USER, "User:"), iter(()))
    assert len(new) == 0
    assert new.bindings() == []
    assert new.matching(USER, "User:joe") == []
    assert new.entries(JOE_USER) == frozenset()
    # Dropped, not kept empty: no ACL is found, so allow.everyone.if.no.acl.found applies again.
    assert AclAuthorizer([], lambda: new, allow_everyone_if_no_acl_found=True).authorize(
        Caller(ALICE, HOST), Operation.CREATE_TOKENS, USER, "User:joe"
    )
    assert len(old) == 2


def test_replace_accepts_any_iterable_and_deduplicates() -> None:
    new = AclSnapshot().replace(JOE_USER, (e for e in [allow(), allow(), deny(BOB)]))
    assert new.entries(JOE_USER) == frozenset({allow(), deny(BOB)})
    assert len(new) == 2


def test_constructor_drops_empty_entries() -> None:
    current = AclSnapshot(
        {JOE_USER: frozenset(), prefixed(USER, "User:"): frozenset(), literal(TOKEN, "t"): frozenset()}
    )
    assert len(current) == 0
    assert current.bindings() == []
    assert current.matching(USER, "User:joe") == []
    assert AclAuthorizer([], lambda: current, allow_everyone_if_no_acl_found=True).authorize(
        Caller(ALICE, HOST), Operation.CREATE_TOKENS, USER, "User:joe"
    )


def test_snapshot_does_not_follow_later_changes_to_the_mapping_it_was_built_from() -> None:
    source = {JOE_USER: frozenset({allow()})}
    current = AclSnapshot(source)
    source[literal(USER, "User:bob")] = frozenset({allow(BOB)})
    del source[JOE_USER]
    assert current.entries(JOE_USER) == frozenset({allow()})
    assert current.entries(literal(USER, "User:bob")) == frozenset()


def test_entries_distinguish_literal_prefixed_and_type() -> None:
    current = snapshot({JOE_USER: [allow()], prefixed(USER, "User:joe"): [allow(BOB)]})
    assert current.entries(JOE_USER) == frozenset({allow()})
    assert current.entries(prefixed(USER, "User:joe")) == frozenset({allow(BOB)})
    assert current.entries(literal(TOKEN, "User:joe")) == frozenset()
    assert current.entries(literal(USER, "User:bob")) == frozenset()
    assert isinstance(current.entries(literal(USER, "nothing")), frozenset)


def test_bindings_are_every_entry_sorted() -> None:
    current = snapshot(
        {
            prefixed(USER, "User:t"): [allow(BOB)],
            literal(USER, "User:joe"): [deny(BOB), allow(ALICE, Operation.DESCRIBE_TOKENS), allow(ALICE)],
            literal(CLUSTER, CLUSTER_RESOURCE_NAME): [allow(ADMIN, Operation.ALTER)],
            literal(TOKEN, "tok-1"): [allow(BOB, Operation.DESCRIBE)],
            literal(USER, "User:t"): [allow(JOE)],
        }
    )
    assert current.bindings() == [
        AclBinding(literal(CLUSTER, CLUSTER_RESOURCE_NAME), allow(ADMIN, Operation.ALTER)),
        AclBinding(literal(TOKEN, "tok-1"), allow(BOB, Operation.DESCRIBE)),
        AclBinding(JOE_USER, allow(ALICE)),
        AclBinding(JOE_USER, allow(ALICE, Operation.DESCRIBE_TOKENS)),
        AclBinding(JOE_USER, deny(BOB)),
        AclBinding(literal(USER, "User:t"), allow(JOE)),
        AclBinding(prefixed(USER, "User:t"), allow(BOB)),
    ]
    assert current.bindings() == sorted(current.bindings())


def test_len_counts_entries_across_patterns() -> None:
    assert len(AclSnapshot()) == 0
    current = snapshot({JOE_USER: [allow(), deny(BOB)], prefixed(USER, "User:"): [allow(JOE)]})
    assert len(current) == 3
    assert len(current.bindings()) == 3


# --- validate_binding -----------------------------------------------------------------------------------------


def binding(
    resource_type: str = "User",
    name: str = "User:joe",
    pattern_type: PatternType = PatternType.LITERAL,
    principal: str = "User:alice",
    host: str = "*",
    operation: str = "CreateTokens",
    permission: str = "Allow",
) -> AclBinding:
    return AclBinding(
        ResourcePattern(resource_type, name, pattern_type), AccessControlEntry(principal, host, operation, permission)
    )


@pytest.mark.parametrize(
    "accepted",
    [
        binding(),
        binding(operation="DescribeTokens"),
        binding(operation="All", permission="Deny"),
        binding(name="*"),
        binding(name="User:team-", pattern_type=PatternType.PREFIXED),
        binding(name="User:", pattern_type=PatternType.PREFIXED),
        binding(name="*", pattern_type=PatternType.PREFIXED, operation="DescribeTokens"),
        binding(name="User:CN=joe,OU=eng,O=Acme:Corp"),
        binding(name="User:用户"),
        binding(name="Group:ops"),
        binding(principal="User:*"),
        binding(principal="Group:ops"),
        binding(principal="User:CN=a:b"),
        binding(host="198.51.100.1"),
        binding(host="::1"),
        binding(host="2001:db8::1"),
        binding(host="192.0.2.7"),
        binding("DelegationToken", "tok-1", operation="Describe"),
        binding("DelegationToken", "*", operation="All", permission="Deny"),
        binding("DelegationToken", "tok-", PatternType.PREFIXED, operation="Describe"),
        binding("DelegationToken", "x" * MAX_RESOURCE_NAME_LENGTH, operation="Describe"),
        binding("Cluster", "kafka-cluster", operation="Alter"),
        binding("Cluster", "kafka-cluster", operation="Describe"),
        binding("Cluster", "kafka-cluster", operation="All", principal="User:*", host="198.51.100.77"),
    ],
    ids=repr,
)
def test_validate_binding_accepts(accepted: AclBinding) -> None:
    validate_binding(accepted)


def test_every_grantable_operation_is_accepted() -> None:
    names = {USER: "User:joe", TOKEN: "tok-1", CLUSTER: CLUSTER_RESOURCE_NAME}
    assert set(GRANTABLE_OPERATIONS) == set(names)
    for resource_type, operations in GRANTABLE_OPERATIONS.items():
        for operation in operations:
            for permission in Permission:
                name = names[resource_type]
                validate_binding(binding(resource_type, name, operation=operation, permission=permission))


@pytest.mark.parametrize(
    ("refused", "message"),
    [
        pytest.param(binding(resource_type="Widget"), "Unknown resource type 'Widget'", id="unknown-type"),
        pytest.param(binding(resource_type="user"), "Unknown resource type 'user'", id="lowercase-type"),
        pytest.param(binding(resource_type=""), "Unknown resource type", id="empty-type"),
        pytest.param(binding(resource_type="Any"), "Unknown resource type", id="any-type"),
        pytest.param(binding("Topic", "orders", operation="Read"), "not Topic", id="topic"),
        pytest.param(binding("Group", "readers", operation="Read"), "not Group", id="group"),
        pytest.param(binding("TransactionalId", "tx", operation="Write"), "not TransactionalId", id="txn-id"),
        pytest.param(binding(operation="Fly"), "Unknown operation 'Fly'", id="unknown-operation"),
        pytest.param(binding(operation="createtokens"), "Unknown operation", id="lowercase-operation"),
        pytest.param(binding(operation="CREATE_TOKENS"), "Unknown operation", id="java-name-operation"),
        pytest.param(binding(operation=""), "Unknown operation", id="empty-operation"),
        pytest.param(
            binding("Cluster", "kafka-cluster", operation="CreateTokens"),
            "CreateTokens makes no sense on Cluster",
            id="create-tokens-on-cluster",
        ),
        pytest.param(binding(operation="Alter"), "Alter makes no sense on User", id="alter-on-user"),
        pytest.param(binding(operation="Describe"), "Describe makes no sense on User", id="describe-on-user"),
        pytest.param(binding(operation="Read"), "Read makes no sense on User", id="read-on-user"),
        pytest.param(
            binding("DelegationToken", "tok-1", operation="DescribeTokens"),
            "DescribeTokens makes no sense on DelegationToken",
            id="describe-tokens-on-token",
        ),
        pytest.param(binding("DelegationToken", "tok-1", operation="Alter"), "makes no sense", id="alter-on-token"),
        pytest.param(
            binding("Cluster", "kafka-cluster", operation="ClusterAction"), "makes no sense", id="cluster-action"
        ),
        pytest.param(binding(permission="allow"), "Allow or Deny", id="lowercase-permission"),
        pytest.param(binding(permission="Maybe"), "Allow or Deny", id="bad-permission"),
        pytest.param(binding(permission="ALLOW"), "Allow or Deny", id="uppercase-permission"),
        pytest.param(binding(permission=""), "Allow or Deny", id="empty-permission"),
        pytest.param(binding("DelegationToken", "", operation="Describe"), "non-empty", id="empty-name"),
        pytest.param(binding("DelegationToken", "a/b", operation="Describe"), "'/'", id="slash"),
        pytest.param(binding("DelegationToken", "/", operation="Describe"), "'/'", id="only-slash"),
        pytest.param(binding("DelegationToken", "tok\n", operation="Describe"), "control", id="newline"),
        pytest.param(binding("DelegationToken", "t\x00k", operation="Describe"), "control", id="nul"),
        pytest.param(binding("DelegationToken", "t\x1fk", operation="Describe"), "control", id="unit-separator"),
        pytest.param(binding("DelegationToken", "t\x7fk", operation="Describe"), "control", id="delete"),
        pytest.param(binding("DelegationToken", "t\tk", operation="Describe"), "control", id="tab"),
        pytest.param(binding(name="User:a/b"), "'/'", id="slash-in-user-name"),
        pytest.param(
            binding("DelegationToken", "x" * (MAX_RESOURCE_NAME_LENGTH + 1), operation="Describe"),
            "too long",
            id="too-long",
        ),
        pytest.param(binding("Cluster", "my-cluster", operation="Alter"), "kafka-cluster", id="other-cluster"),
        pytest.param(binding("Cluster", "*", operation="Alter"), "kafka-cluster", id="wildcard-cluster"),
        pytest.param(
            binding("Cluster", "kafka-cluster", PatternType.PREFIXED, operation="Alter"),
            "LITERAL",
            id="prefixed-cluster",
        ),
        pytest.param(
            binding("Cluster", "kafka-", PatternType.PREFIXED, operation="Alter"), "kafka-cluster", id="prefix-cluster"
        ),
        pytest.param(binding(principal="alice"), "The ACL principal is not a principal", id="principal-no-type"),
        pytest.param(binding(principal="User:"), "The ACL principal is not a principal", id="principal-no-name"),
        pytest.param(binding(principal=":alice"), "The ACL principal is not a principal", id="principal-empty-type"),
        pytest.param(binding(principal=""), "The ACL principal is not a principal", id="principal-empty"),
        pytest.param(binding(principal="*"), "The ACL principal is not a principal", id="principal-star"),
        pytest.param(binding(principal="User:a\nb"), "The ACL principal is not a principal", id="principal-control"),
        pytest.param(binding(principal="Us er:a"), "The ACL principal is not a principal", id="principal-bad-type"),
        pytest.param(binding(host="localhost"), "host must be * or an IP address", id="hostname"),
        pytest.param(binding(host="broker.example.com"), "host must be * or an IP address", id="fqdn"),
        pytest.param(binding(host="198.51.100.256"), "host must be * or an IP address", id="bad-ipv4"),
        pytest.param(binding(host="198.51.100.0/8"), "host must be * or an IP address", id="cidr"),
        pytest.param(binding(host=""), "host must be * or an IP address", id="empty-host"),
        pytest.param(binding(host="**"), "host must be * or an IP address", id="double-star"),
        pytest.param(binding(host=" 198.51.100.1"), "host must be * or an IP address", id="padded-host"),
        pytest.param(binding(name="joe"), "A User resource name is not a principal", id="user-name-no-type"),
        pytest.param(binding(name="User:"), "A User resource name is not a principal", id="user-name-no-name"),
        pytest.param(binding(name=":joe"), "A User resource name is not a principal", id="user-name-empty-type"),
        pytest.param(
            binding(name="team-", pattern_type=PatternType.PREFIXED), "principal type", id="user-prefix-no-type"
        ),
    ],
)
def test_validate_binding_refuses(refused: AclBinding, message: str) -> None:
    with pytest.raises(InvalidInput) as excinfo:
        validate_binding(refused)
    assert message in excinfo.value.message
    assert excinfo.value.message.endswith(".")
    assert str(excinfo.value) == excinfo.value.message


def test_refusal_of_an_ungrantable_type_names_the_types_kts_manages() -> None:
    with pytest.raises(InvalidInput) as excinfo:
        validate_binding(binding("Topic", "orders", operation="Read"))
    for kind in ("Cluster", "DelegationToken", "User"):
        assert kind in excinfo.value.message


def test_refusal_of_an_ungrantable_operation_names_the_usable_ones() -> None:
    with pytest.raises(InvalidInput) as excinfo:
        validate_binding(binding(operation="Alter"))
    for operation in ("All", "CreateTokens", "DescribeTokens"):
        assert operation in excinfo.value.message
    with pytest.raises(InvalidInput) as excinfo:
        validate_binding(binding("Cluster", "kafka-cluster", operation="CreateTokens"))
    for operation in ("All", "Alter", "Describe"):
        assert operation in excinfo.value.message


def test_user_resource_name_is_checked_as_a_principal_only_when_literal() -> None:
    # PREFIXED names are principal prefixes, which need not be whole principals.
    validate_binding(binding(name="User:", pattern_type=PatternType.PREFIXED))
    validate_binding(binding(name="Group:", pattern_type=PatternType.PREFIXED))
    with pytest.raises(InvalidInput):
        validate_binding(binding(name="User:", pattern_type=PatternType.LITERAL))


def test_user_resource_name_too_long_for_a_principal_is_refused() -> None:
    with pytest.raises(InvalidInput, match="not a principal"):
        validate_binding(binding(name="User:" + "x" * (MAX_RESOURCE_NAME_LENGTH - 5)))


@pytest.mark.parametrize(
    "name",
    ["tok\x85", "tok\x9f", ".", "..", "tok\U0001f600", "tok\ue000", "tok\ufff0", "tok\uffff"],
    ids=["c1-nel", "c1-apc", "dot", "dotdot", "emoji", "private-use", "specials", "noncharacter"],
)
def test_validate_binding_refuses_names_zookeeper_cannot_store(name: str) -> None:
    refused = False
    try:
        validate_binding(binding("DelegationToken", name, operation="Describe"))
    except InvalidInput:
        refused = True
    assert refused, f"{name!r} was accepted but cannot be a znode name"


# --- AclFilter ------------------------------------------------------------------------------------------------

SAMPLE = AclBinding(
    prefixed(USER, "User:team-"), AccessControlEntry("User:alice", "198.51.100.1", "CreateTokens", "Deny")
)
_FIELDS = ("resource_type", "name", "pattern_type", "principal", "host", "operation", "permission")


def test_empty_filter_is_empty_and_matches_everything() -> None:
    empty = AclFilter()
    assert empty.is_empty
    assert empty.matches(SAMPLE)
    assert empty.matches(binding())
    assert empty.matches_pattern(SAMPLE.pattern)


@pytest.mark.parametrize(
    ("field", "right", "wrong"),
    [
        ("resource_type", "User", "DelegationToken"),
        ("name", "User:team-", "User:team-a"),
        ("pattern_type", PatternType.PREFIXED, PatternType.LITERAL),
        ("principal", "User:alice", "User:*"),
        ("host", "198.51.100.1", "*"),
        ("operation", "CreateTokens", "All"),
        ("permission", "Deny", "Allow"),
    ],
)
def test_filter_field_matches_exact_value_only(field: str, right: object, wrong: object) -> None:
    assert not AclFilter(**{field: right}).is_empty
    assert AclFilter(**{field: right}).matches(SAMPLE)
    assert not AclFilter(**{field: wrong}).matches(SAMPLE)
    # Every other field set to the sample's value does not rescue a mismatch on this one.
    everything: dict[str, object] = {
        "resource_type": "User",
        "name": "User:team-",
        "pattern_type": PatternType.PREFIXED,
        "principal": "User:alice",
        "host": "198.51.100.1",
        "operation": "CreateTokens",
        "permission": "Deny",
    }
    assert set(everything) == set(_FIELDS)
    assert AclFilter(**everything).matches(SAMPLE)
    assert not AclFilter(**{**everything, field: wrong}).matches(SAMPLE)


def test_filter_does_not_treat_wildcards_or_prefixes_specially() -> None:
    assert not AclFilter(name="User:team-a").matches(SAMPLE)
    assert not AclFilter(name="User:team").matches(SAMPLE)
    assert not AclFilter(name="*").matches(SAMPLE)
    assert not AclFilter(principal="User:*").matches(SAMPLE)
    assert not AclFilter(host="*").matches(SAMPLE)
    assert not AclFilter(operation="All").matches(SAMPLE)
    assert not AclFilter(resource_type="user").matches(SAMPLE)


def test_filter_values_do_not_match_wildcards_stored_in_bindings() -> None:
    stored = AclBinding(literal(USER, WILDCARD_RESOURCE), AccessControlEntry("User:*", "*", "All", "Allow"))
    assert AclFilter().matches(stored)
    assert not AclFilter(name="User:joe").matches(stored)
    assert not AclFilter(principal="User:alice").matches(stored)
    assert not AclFilter(host="198.51.100.1").matches(stored)
    assert not AclFilter(operation="CreateTokens").matches(stored)
    assert AclFilter(name="*", principal="User:*", host="*", operation="All").matches(stored)


def test_filter_matches_pattern_looks_only_at_the_pattern_fields() -> None:
    by_entry = AclFilter(principal="User:nobody", host="1.2.3.4", operation="Read", permission="Allow")
    assert by_entry.matches_pattern(SAMPLE.pattern)
    assert not by_entry.matches(SAMPLE)
    assert AclFilter(resource_type="User", pattern_type=PatternType.PREFIXED).matches_pattern(SAMPLE.pattern)
    assert not AclFilter(pattern_type=PatternType.LITERAL).matches_pattern(SAMPLE.pattern)
    assert not AclFilter(resource_type="Cluster").matches_pattern(SAMPLE.pattern)
    assert not AclFilter(name="User:team").matches_pattern(SAMPLE.pattern)


def test_filter_accepts_enum_or_string_values() -> None:
    assert AclFilter(resource_type=ResourceType.USER, operation=Operation.CREATE_TOKENS).matches(SAMPLE)
    assert AclFilter(permission=Permission.DENY).matches(SAMPLE)
    assert AclFilter(pattern_type="PREFIXED").matches(SAMPLE)  # type: ignore[arg-type]


def test_filter_selects_bindings_of_a_snapshot() -> None:
    current = snapshot({JOE_USER: [allow(), deny(BOB)], prefixed(USER, "User:"): [allow(BOB)]})
    by_bob = AclFilter(principal="User:bob")
    assert [b for b in current.bindings() if by_bob.matches(b)] == [
        AclBinding(prefixed(USER, "User:"), allow(BOB)),
        AclBinding(JOE_USER, deny(BOB)),
    ]
    literal_allow = AclFilter(pattern_type=PatternType.LITERAL, permission="Allow")
    assert [b for b in current.bindings() if literal_allow.matches(b)] == [AclBinding(JOE_USER, allow())]


# --- warnings on ACLs that let someone create tokens for a super user --------------------------------------

SUPERS = [ADMIN, KafkaPrincipal.user("ops")]


def grant_warnings(pattern: ResourcePattern, entry: AccessControlEntry, *, lenient: bool = False) -> list[str]:
    return super_user_grant_warnings(AclBinding(pattern, entry), SUPERS, tokens_for_super_users=lenient)


@pytest.mark.parametrize(
    ("pattern", "warned"),
    [
        (literal(USER, "*"), ["User:admin", "User:ops"]),
        (literal(USER, "User:admin"), ["User:admin"]),
        (prefixed(USER, "User:"), ["User:admin", "User:ops"]),
        (prefixed(USER, "User:ad"), ["User:admin"]),
        (prefixed(USER, "User:admin"), ["User:admin"]),
        (literal(USER, "User:joe"), []),
        (literal(USER, "User:admin2"), []),
        (literal(USER, "User:ad"), []),  # a literal is not a prefix
        (prefixed(USER, "User:admin2"), []),
        (prefixed(USER, "*"), []),  # a prefixed * is no wildcard
        (literal(TOKEN, "*"), []),
        (literal(CLUSTER, CLUSTER_RESOURCE_NAME), []),
    ],
)
@pytest.mark.parametrize("operation", [Operation.CREATE_TOKENS, Operation.ALL])
def test_a_grant_of_tokens_over_a_super_user_is_warned_about(
    pattern: ResourcePattern, warned: list[str], operation: Operation
) -> None:
    warnings = grant_warnings(pattern, allow("User:nimbus", operation))
    assert len(warnings) == len(warned)
    for sentence, name in zip(warnings, warned, strict=True):
        assert sentence.startswith(f"This ACL lets User:nimbus create delegation tokens for the super user {name},")
        assert "token.create.for.super.users=false" in sentence


@pytest.mark.parametrize(
    "entry",
    [
        deny("User:nimbus", Operation.CREATE_TOKENS),
        deny("User:nimbus", Operation.ALL),
        allow("User:nimbus", Operation.DESCRIBE_TOKENS),
        allow(ADMIN, Operation.CREATE_TOKENS),  # a super user could already
    ],
)
def test_other_entries_are_not_warned_about(entry: AccessControlEntry) -> None:
    assert grant_warnings(literal(USER, "*"), entry) == []


def test_the_warning_says_kts_issues_such_tokens_when_allowed_to() -> None:
    (warning,) = grant_warnings(literal(USER, "User:admin"), allow("User:nimbus"), lenient=True)
    assert warning == (
        "This ACL lets User:nimbus create delegation tokens for the super user User:admin, which authenticate as "
        "User:admin: kts issues them (token.create.for.super.users=true), and Kafka brokers do too."
    )


def test_no_super_users_no_warnings() -> None:
    assert super_user_grant_warnings(AclBinding(literal(USER, "*"), allow()), [], tokens_for_super_users=False) == []


# --- may_authorize_some: may a listing skip asking about every token? --------------------------------------


def _may_some(
    acls: Mapping[ResourcePattern, Iterable[AccessControlEntry]],
    operation: Operation = Operation.DESCRIBE_TOKENS,
    resource_type: ResourceType = USER,
    principal: KafkaPrincipal = ALICE,
    **options: bool,
) -> bool:
    current = snapshot(acls)
    authorizer = AclAuthorizer([ADMIN], lambda: current, **options)
    return authorizer.may_authorize_some(Caller(principal, HOST), operation, resource_type)


def test_may_authorize_some_is_false_only_without_any_allow_that_could_apply() -> None:
    assert not _may_some({})
    assert _may_some({}, principal=ADMIN)  # super users see everything
    assert _may_some({}, allow_everyone_if_no_acl_found=True)  # a resource without ACLs is granted
    assert _may_some({JOE_USER: [allow(ALICE, Operation.DESCRIBE_TOKENS)]})
    assert _may_some({prefixed(USER, "User:j"): [allow("User:*", Operation.DESCRIBE_TOKENS)]})
    assert _may_some({JOE_USER: [allow(ALICE, Operation.ALL)]})
    assert not _may_some({JOE_USER: [allow(BOB, Operation.DESCRIBE_TOKENS)]})  # another principal's
    assert not _may_some({JOE_USER: [deny(ALICE, Operation.DESCRIBE_TOKENS)]})  # a Deny grants nothing
    assert not _may_some({JOE_USER: [allow(ALICE, Operation.CREATE_TOKENS)]})  # another operation
    assert not _may_some({literal(TOPIC, "t"): [allow(ALICE, Operation.DESCRIBE_TOKENS)]})  # another type


def test_may_authorize_some_follows_the_operations_that_imply_describe() -> None:
    token = literal(TOKEN, "tok-1")
    for implying in (Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER):
        assert _may_some({token: [allow(ALICE, implying)]}, Operation.DESCRIBE, TOKEN)
    assert not _may_some({token: [allow(ALICE, Operation.CREATE)]}, Operation.DESCRIBE, TOKEN)
