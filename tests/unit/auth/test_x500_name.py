"""distinguished_name prints a certificate subject as the JDK does.

Every expected value was produced by running the same certificate through the JDK's
X500Principal.getName() (JDK 17), so this table is what a broker prints.
"""

from __future__ import annotations

import datetime
import functools

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from app.auth.x500_name import distinguished_name, principal_name_for
from app.domain.ssl_principal_mapper import SslPrincipalMapper

C, ORG, OU, CN = NameOID.COUNTRY_NAME, NameOID.ORGANIZATION_NAME, NameOID.ORGANIZATIONAL_UNIT_NAME, NameOID.COMMON_NAME


def rdn(*attributes: tuple[x509.ObjectIdentifier, str]) -> x509.RelativeDistinguishedName:
    return x509.RelativeDistinguishedName([x509.NameAttribute(oid, value) for oid, value in attributes])


def subject_of(*rdns: x509.RelativeDistinguishedName) -> x509.Name:
    return x509.Name(list(rdns))


@functools.cache
def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def certificate_der(subject: x509.Name) -> bytes:
    """A DER certificate for ``subject`` (also used by the mapper's tests)."""
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


# (subject in X.509 order, most significant first; what the JDK prints)
SUBJECTS = [
    (
        subject_of(rdn((C, "US")), rdn((ORG, "acme")), rdn((OU, "eng")), rdn((CN, "alice"))),
        "CN=alice,OU=eng,O=acme,C=US",
    ),
    (subject_of(rdn((ORG, "acme")), rdn((CN, 'Smith, John "JJ" + co'))), 'CN=Smith\\, John \\"JJ\\" \\+ co,O=acme'),
    (subject_of(rdn((CN, "a\\b<c>d;e=f#g"))), "CN=a\\\\b\\<c\\>d\\;e\\=f\\#g"),
    (subject_of(rdn((CN, "#lead"))), "CN=\\#lead"),
    (subject_of(rdn((CN, " both "))), "CN=\\ both\\ "),
    (subject_of(rdn((CN, "ok 'chars' (-./:?@_*&!%)"))), "CN=ok 'chars' (-./:?@_*&!%)"),
    (subject_of(rdn((CN, "héllo wörld €"))), "CN=héllo wörld €"),
    # multi-valued RDN: values joined with "+", in their DER (sorted) order
    (subject_of(rdn((ORG, "acme")), rdn((CN, "bob"), (NameOID.USER_ID, "b123"))), "CN=bob+UID=b123,O=acme"),
    (subject_of(rdn((OU, "z"), (CN, "y"))), "CN=y+OU=z"),
    # emailAddress has no RFC 2253 keyword: dotted OID and the DER value in hex
    (
        subject_of(rdn((ORG, "acme")), rdn((CN, "alice")), rdn((NameOID.EMAIL_ADDRESS, "alice@example.com"))),
        "1.2.840.113549.1.9.1=#1611616c696365406578616d706c652e636f6d,CN=alice,O=acme",
    ),
    (
        subject_of(
            rdn((NameOID.DOMAIN_COMPONENT, "com")),
            rdn((NameOID.DOMAIN_COMPONENT, "example")),
            rdn((NameOID.STATE_OR_PROVINCE_NAME, "CA")),
            rdn((NameOID.LOCALITY_NAME, "SF")),
            rdn((NameOID.STREET_ADDRESS, "1 Main St")),
            rdn((NameOID.SERIAL_NUMBER, "42")),
            rdn((NameOID.TITLE, "t")),
        ),
        "2.5.4.12=#0c0174,2.5.4.5=#13023432,STREET=1 Main St,L=SF,ST=CA,DC=example,DC=com",
    ),
    (subject_of(rdn((CN, "nul\x00here"))), "CN=nul\\00here"),
    (subject_of(), ""),
]


@pytest.mark.parametrize(("subject", "expected"), SUBJECTS)
def test_distinguished_name_is_printed_like_x500principal(subject: x509.Name, expected: str) -> None:
    assert distinguished_name(certificate_der(subject)) == expected


def test_distinguished_name_rejects_non_certificates() -> None:
    with pytest.raises(ValueError):
        distinguished_name(b"not a certificate")


def test_principal_name_for_certificate() -> None:
    der = certificate_der(subject_of(rdn((C, "US")), rdn((ORG, "acme")), rdn((OU, "ServiceUsers")), rdn((CN, "Svc-1"))))
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT")
    assert principal_name_for(der, mapper) == "svc-1"
    assert principal_name_for(der, SslPrincipalMapper.from_rules("DEFAULT")) == "CN=Svc-1,OU=ServiceUsers,O=acme,C=US"
