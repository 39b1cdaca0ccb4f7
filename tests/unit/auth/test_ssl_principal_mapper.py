"""SslPrincipalMapper and distinguished_name give the names a Kafka broker gives.

The rule cases are Kafka's own SslPrincipalMapperTest; every other expected value was
produced by running the same input through Kafka's SslPrincipalMapper and the JDK's
X500Principal.getName() (JDK 17), so these tables are what a broker prints.
"""

from __future__ import annotations

import datetime
import functools
import re

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from app.auth.ssl_principal_mapper import (
    NoMatchingRule,
    SslPrincipalMapper,
    distinguished_name,
    principal_name_for,
)

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

# Java regex semantics that differ from Python's re: (pattern, name, does the rule apply?)
JAVA_REGEX = [
    (".*", "a\rb", False),  # "." excludes every Java line terminator, not just \n
    (".*", "a\u2028b", False),
    ("(?s).*", "a\rb", True),
    ("(?d).*", "a\rb", True),
    ("a$\\n", "a\n", True),  # $ before the final line terminator
    ("a$\\r\\n", "a\r\n", True),
    ("a$\\u2028", "a\u2028", True),
    ("\\w+", "é", False),  # \w, \d, \s, \b are ASCII-only
    ("\\W", "é", True),
    ("(?i)É", "é", False),  # case-insensitivity is ASCII-only without (?u)
    ("(?i)[a-c]+", "AbC", True),
    ("a(?i)b|c", "C", True),  # (?i) lasts to the end of the group, across |
    ("(a(?i)b)|c", "C", False),
    ("(?i:a)b", "AB", False),
    ("\\Q.*\\E", ".*", True),
    ("\\Q.*\\E", "ab", False),
    ("[\\Qa\\E-c]", "b", True),
    ("\\p{Alpha}+\\P{Alpha}", "ab1", True),
    ("[\\p{Upper}\\d]+", "A1", True),
    ("\\x41\\u0042\\0103\\x{44}\\cA", "ABCD\x01", True),
    ("\\h\\v", "\t\n", True),
    ("(a)\\1\\11", "aaa1", True),  # \11 is group 1 then "1" when there is no group 11
    ("(?<g>x)\\k<g>", "xx", True),
    ("a\\Z\\n", "a\n", True),
    ("a\\z\\n", "a\n", False),
    ("\\B", "", True),
    ("{2}x", "x", True),  # Java quantifies an empty atom here
    ("[]a]+", "]a", True),
    ("\\bab\\b", "ab", True),
]

# Valid Java regexes with no faithful Python form: rejected rather than guessed.
UNSUPPORTED_PATTERNS = [
    "[a[b]]",
    "[a&&b]",
    "\\p{L}",
    "\\pL",
    "\\G",
    "\\R",
    "\\X",
    "\\b{g}",
    "(?u)a",
    "(?x)a",
    "(?<=a|bc)x",
]

# Rejected by Java's Pattern.compile as well.
INVALID_PATTERNS = ["(", "a)", "a{x}", "a{,2}", "*a", "a**", "[a", "\\y", "\\0", "[b-a]", "\\k<n>", "(?<=\\1)(a)"]

# --- Certificate subjects (outputs from X500Principal.getName()) -------------------


def _rdn(*attributes: tuple[x509.ObjectIdentifier, str]) -> x509.RelativeDistinguishedName:
    return x509.RelativeDistinguishedName([x509.NameAttribute(oid, value) for oid, value in attributes])


def _subject(*rdns: x509.RelativeDistinguishedName) -> x509.Name:
    return x509.Name(list(rdns))


C, ORG, OU, CN = NameOID.COUNTRY_NAME, NameOID.ORGANIZATION_NAME, NameOID.ORGANIZATIONAL_UNIT_NAME, NameOID.COMMON_NAME

# (subject in X.509 order, most significant first; what the JDK prints)
SUBJECTS = [
    (
        _subject(_rdn((C, "US")), _rdn((ORG, "acme")), _rdn((OU, "eng")), _rdn((CN, "alice"))),
        "CN=alice,OU=eng,O=acme,C=US",
    ),
    (_subject(_rdn((ORG, "acme")), _rdn((CN, 'Smith, John "JJ" + co'))), 'CN=Smith\\, John \\"JJ\\" \\+ co,O=acme'),
    (_subject(_rdn((CN, "a\\b<c>d;e=f#g"))), "CN=a\\\\b\\<c\\>d\\;e\\=f\\#g"),
    (_subject(_rdn((CN, "#lead"))), "CN=\\#lead"),
    (_subject(_rdn((CN, " both "))), "CN=\\ both\\ "),
    (_subject(_rdn((CN, "ok 'chars' (-./:?@_*&!%)"))), "CN=ok 'chars' (-./:?@_*&!%)"),
    (_subject(_rdn((CN, "héllo wörld €"))), "CN=héllo wörld €"),
    # multi-valued RDN: values joined with "+", in their DER (sorted) order
    (_subject(_rdn((ORG, "acme")), _rdn((CN, "bob"), (NameOID.USER_ID, "b123"))), "CN=bob+UID=b123,O=acme"),
    (_subject(_rdn((OU, "z"), (CN, "y"))), "CN=y+OU=z"),
    # emailAddress has no RFC 2253 keyword: dotted OID and the DER value in hex
    (
        _subject(_rdn((ORG, "acme")), _rdn((CN, "alice")), _rdn((NameOID.EMAIL_ADDRESS, "alice@example.com"))),
        "1.2.840.113549.1.9.1=#1611616c696365406578616d706c652e636f6d,CN=alice,O=acme",
    ),
    (
        _subject(
            _rdn((NameOID.DOMAIN_COMPONENT, "com")),
            _rdn((NameOID.DOMAIN_COMPONENT, "example")),
            _rdn((NameOID.STATE_OR_PROVINCE_NAME, "CA")),
            _rdn((NameOID.LOCALITY_NAME, "SF")),
            _rdn((NameOID.STREET_ADDRESS, "1 Main St")),
            _rdn((NameOID.SERIAL_NUMBER, "42")),
            _rdn((NameOID.TITLE, "t")),
        ),
        "2.5.4.12=#0c0174,2.5.4.5=#13023432,STREET=1 Main St,L=SF,ST=CA,DC=example,DC=com",
    ),
    (_subject(_rdn((CN, "nul\x00here"))), "CN=nul\\00here"),
    (_subject(), ""),
]


@functools.cache
def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _certificate(subject: x509.Name) -> bytes:
    start = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(x509.Name([x509.NameAttribute(CN, "kts test issuer")]))
        .public_key(_key().public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=1))
        .sign(_key(), hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.DER)


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


@pytest.mark.parametrize(("pattern", "dn", "applies"), JAVA_REGEX)
def test_patterns_have_java_semantics(pattern: str, dn: str, applies: bool) -> None:
    mapper = SslPrincipalMapper.from_rules(f"RULE:{pattern}/matched/")
    if applies:
        assert "matched" in mapper.name(dn)  # replaceAll may add a second "matched"
    else:
        with pytest.raises(NoMatchingRule):
            mapper.name(dn)


@pytest.mark.parametrize("pattern", UNSUPPORTED_PATTERNS)
def test_java_constructs_without_python_equivalent_are_rejected(pattern: str) -> None:
    with pytest.raises(ValueError, match="Unsupported Java regular expression"):
        SslPrincipalMapper.from_rules(f"RULE:{pattern}/x/")


@pytest.mark.parametrize("pattern", INVALID_PATTERNS)
def test_patterns_java_rejects_are_rejected(pattern: str) -> None:
    with pytest.raises(ValueError, match=r"^Invalid rule") as error:
        SslPrincipalMapper.from_rules(f"RULE:{pattern}/x/")
    assert "\n" not in str(error.value)


def test_result_that_java_would_cut_in_half_is_refused() -> None:
    # After an empty match Java steps one UTF-16 unit, into the emoji's surrogate pair.
    mapper = SslPrincipalMapper.from_rules("RULE:[^,]*?/x/")
    with pytest.raises(ValueError, match="half of a character"):
        mapper.name("a\U0001f600")
    # An empty replacement glues the halves back together, as in Java.
    assert SslPrincipalMapper.from_rules("RULE:[^,]*?//").name("a\U0001f600") == "a\U0001f600"


@pytest.mark.parametrize(("subject", "expected"), SUBJECTS)
def test_distinguished_name_is_printed_like_x500principal(subject: x509.Name, expected: str) -> None:
    assert distinguished_name(_certificate(subject)) == expected


def test_principal_name_for_certificate() -> None:
    der = _certificate(_subject(_rdn((C, "US")), _rdn((ORG, "acme")), _rdn((OU, "ServiceUsers")), _rdn((CN, "Svc-1"))))
    mapper = SslPrincipalMapper.from_rules(KAFKA_RULES)
    assert principal_name_for(der, mapper) == "svc-1"
    assert principal_name_for(der, SslPrincipalMapper.from_rules("DEFAULT")) == "CN=Svc-1,OU=ServiceUsers,O=acme,C=US"


def test_distinguished_name_rejects_non_certificates() -> None:
    with pytest.raises(ValueError):
        distinguished_name(b"not a certificate")
