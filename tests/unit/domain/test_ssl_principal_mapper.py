"""SslPrincipalMapper gives the names a Kafka broker gives.

The rule cases are Kafka's own SslPrincipalMapperTest; every other expected value was
produced by running the same input through Kafka's SslPrincipalMapper (JDK 17), so
these tables are what a broker prints.
"""

from __future__ import annotations

import re

import pytest

from app.domain.ssl_principal_mapper import NoMatchingRule, SslPrincipalMapper

# --- Kafka's SslPrincipalMapperTest -------------------------------------------------

VALID_RULES = [
    "DEFAULT",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
    "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
    "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
    "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
]

INVALID_RULES = [
    "default",
    "DEFAUL",
    "DEFAULT/L",
    "DEFAULT/U",
    "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
    "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
]

KAFKA_RULES = ", ".join(
    [
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
        "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
        "DEFAULT",
    ]
)

KAFKA_MAPPINGS = [
    ("CN=Duke,OU=ServiceUsers,O=Org,C=US", "duke"),
    ("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme"),
    ("cn=duke,ou=sme,dc=mycp,dc=com", "DUKE@SME"),
    ("cN=duke,OU=JavaSoft,O=Sun Microsystems", "DUKE"),
    ("OU=JavaSoft,O=Sun Microsystems,C=US", "OU=JavaSoft,O=Sun Microsystems,C=US"),
]

# (what Kafka's toString() shows, the configured text)
RULES_SPLITTING = [
    ("[]", ""),
    ("[DEFAULT]", "DEFAULT"),
    ("[RULE:/]", "RULE://"),
    ("[RULE:/.*]", "RULE:/.*/"),
    ("[RULE:/.*/L]", "RULE:/.*/L"),
    ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
    ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "),
    ("[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "),
    ("[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "),
    ("[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]", "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  "),
    # empty rules are ignored
    ("[]", ",   , , ,      , , ,   "),
    ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
    ("[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "),
    ("[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"),
    # escape sequences
    ("[RULE:\\/\\\\\\(\\)\\n\\t/\\/\\/]", "RULE:\\/\\\\\\(\\)\\n\\t/\\/\\//"),
    ("[RULE:\\**\\/+/*/L, RULE:\\/*\\**/**]", "RULE:\\**\\/+/*/L,RULE:\\/*\\**/**/"),
    # rules rule
    (
        "[RULE:,RULE:,/,RULE:,\\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]",
        "RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT",
    ),
    # a comma may end a line (the layout of Kafka's documentation)
    ("[RULE:a/b, RULE:c/d/L, DEFAULT]", "RULE:a/b/,\nRULE:c/d/L,\r\n  DEFAULT\n"),
]

# --- Rule application beyond Kafka's test (outputs from Kafka's mapper) ------------

# (rules, distinguished name, Kafka's principal name)
MAPPINGS = [
    # Kafka's testCommaWithWhitespace
    ("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT", "CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz", "Tkac\\, Adam"),
    # L, U and neither
    ("RULE:^CN=([^,]+),.*$/$1/", "CN=Duke,OU=x", "Duke"),
    ("RULE:^CN=([^,]+),.*$/$1/L", "CN=Duke,OU=x", "duke"),
    ("RULE:^CN=([^,]+),.*$/$1/U", "CN=Duke,OU=x", "DUKE"),
    # \/ puts a slash in the pattern and in the replacement
    ("RULE:^CN=([^,]+),OU=a\\/b.*$/$1\\/ab/", "CN=joe,OU=a/b,O=c", "joe/ab"),
    # the first rule that applies wins; DEFAULT keeps the name
    ("RULE:^CN=a,.*$/first/,RULE:^CN=.*$/second/,DEFAULT", "CN=a,O=x", "first"),
    ("RULE:^CN=a,.*$/first/,RULE:^CN=.*$/second/,DEFAULT", "CN=b,O=x", "second"),
    ("RULE:^CN=a,.*$/first/,RULE:^CN=.*$/second/,DEFAULT", "O=x", "O=x"),
    # the pattern must match the whole name
    ("RULE:CN=([a-z]+)/$1/,DEFAULT", "CN=abc,O=x", "CN=abc,O=x"),
    # Java replacement syntax: \$ is a dollar, ${name} a named group, $0 the match
    ("RULE:(?<n>a)(b)/${n}$2$21\\$1$0/", "ab", "abb1$1ab"),
    # $n naming a group the pattern lacks: Kafka keeps it literally
    ("RULE:CN=(.*)/$5-$1/", "CN=x", "$5-x"),
    ("RULE:CN=([a-z]+)/$10/", "CN=abc", "abc0"),
    ("RULE:(((((((((((a)))))))))))/$11$12$111/", "a", "aa2a1"),
    # String.replaceAll replaces every match find() sees, not only the full match
    ("RULE:.*/x/", "abc", "xx"),
    ("RULE:(.*)/$5-$1/", "abc", "$5-abc$5-"),
    ("RULE:(a|ab)/[$1]/", "ab", "[a]b"),
    ("RULE:(a*)(b*)/<$2$1>/", "ab", "<ba><>"),
    ("RULE:^CN=([^,]+).*$/$1/L", "CN=Alice\\, Smith,O=x", "alice\\"),
    # Java's case mapping: ß upper-cases to SS, final sigma lower-cases to ς
    ("RULE:(?i)cn=(.*)/$1/U", "CN=straße", "STRASSE"),
    ("RULE:cn=(.*)/$1/L", "cn=ΟΔΟΣ", "οδος"),
]

# --- Tests ------------------------------------------------------------------------


@pytest.mark.parametrize("rules", VALID_RULES)
def test_valid_rules_parse(rules: str) -> None:
    SslPrincipalMapper.from_rules(rules)


@pytest.mark.parametrize("rules", INVALID_RULES)
def test_invalid_rules_raise(rules: str) -> None:
    with pytest.raises(ValueError, match=r"^Invalid rule") as error:
        SslPrincipalMapper.from_rules(rules)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("dn", "expected"), KAFKA_MAPPINGS)
def test_kafka_mapping_examples(dn: str, expected: str) -> None:
    assert SslPrincipalMapper.from_rules(KAFKA_RULES).name(dn) == expected


@pytest.mark.parametrize(("expected", "rules"), RULES_SPLITTING)
def test_rules_split_as_kafka_splits_them(expected: str, rules: str) -> None:
    assert str(SslPrincipalMapper.from_rules(rules)) == f"SslPrincipalMapper(rules = {expected})"


@pytest.mark.parametrize(("rules", "dn", "expected"), MAPPINGS)
def test_rule_application(rules: str, dn: str, expected: str) -> None:
    assert SslPrincipalMapper.from_rules(rules).name(dn) == expected


def test_kafka_documentation_example_with_rules_on_separate_lines() -> None:
    mapper = SslPrincipalMapper.from_rules(
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,\n"
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,\n"
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,\n"
        "DEFAULT"
    )
    assert mapper.name("CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown") == "serviceuser"
    assert mapper.name("CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown") == "adminuser@admin"


def test_line_break_without_comma_is_rejected_because_kafka_would_drop_the_rule() -> None:
    # Kafka reads this as just [DEFAULT]: the first rule silently disappears.
    with pytest.raises(ValueError, match=re.escape("would silently ignore `RULE:^CN=(\\w+).*$/$1/L`")):
        SslPrincipalMapper.from_rules("RULE:^CN=(\\w+).*$/$1/L\nDEFAULT")
    # With a comma in the pattern Kafka's splitter cuts the rule there and rejects it.
    with pytest.raises(ValueError, match=re.escape("Invalid rule: `RULE:^CN=(.*?)`, unmatched substring")):
        SslPrincipalMapper.from_rules("RULE:^CN=(.*?),.*$/$1/\nDEFAULT")


def test_no_matching_rule_names_the_distinguished_name() -> None:
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
    with pytest.raises(NoMatchingRule) as error:
        mapper.name("CN=mallory,OU=Guests")
    assert isinstance(error.value, ValueError)
    assert error.value.distinguished_name == "CN=mallory,OU=Guests"
    assert str(error.value) == ("No rules apply to CN=mallory,OU=Guests, rules [RULE:^CN=(.*?),OU=ServiceUsers.*$/$1]")


def test_missing_rules_mean_default_but_empty_rules_match_nothing() -> None:
    assert SslPrincipalMapper.from_rules(None).name("CN=a,O=b") == "CN=a,O=b"
    assert SslPrincipalMapper().name("CN=a,O=b") == "CN=a,O=b"
    with pytest.raises(NoMatchingRule, match="CN=a,O=b"):
        SslPrincipalMapper.from_rules("").name("CN=a,O=b")
    with pytest.raises(NoMatchingRule):
        SslPrincipalMapper.from_rules(" , ,").name("CN=a,O=b")


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ("RULE:CN=.*/$1/", "No group 1"),
        ("RULE:CN=(.*)/${nope}/", "No group with name {nope}"),
        ("RULE:CN=(.*)/$/", "group index is missing"),
        ("RULE:CN=(.*)/$x/", "Illegal group reference"),
        # Kafka escapes the second missing group one character off, so it stays a reference
        ("RULE:CN=(.*)/$5 $6/", "No group 6"),
    ],
)
def test_broken_replacement_fails_when_applied_like_kafka(rules: str, message: str) -> None:
    mapper = SslPrincipalMapper.from_rules(rules)  # Kafka accepts these rules too
    with pytest.raises(ValueError, match=message) as error:
        mapper.name("CN=x")
    assert not isinstance(error.value, NoMatchingRule)


def test_a_rule_with_a_bad_java_pattern_is_an_invalid_rule() -> None:
    with pytest.raises(ValueError, match=r"^Invalid rule"):
        SslPrincipalMapper.from_rules("RULE:[unclosed/$1/")
