"""Print a certificate subject exactly as Java's ``X500Principal.getName()`` does.

Kafka names an mTLS client after its certificate subject in the form the JDK prints
(RFC 2253, most specific RDN first, e.g. ``CN=alice,OU=eng,O=acme,C=US``) and applies
the principal mapping rules to that string, so it must match the JDK's to the
character.

``cryptography``'s ``Name.rfc4514_string()`` is close but not the same.  The JDK

* escapes ``=`` and ``#`` anywhere in a value, and carriage returns as well as
  spaces at either end of it;
* prints only CN, C, L, ST, STREET, O, OU, DC and UID by keyword; every other type
  is its dotted OID and the value's DER encoding in hex (emailAddress becomes
  ``1.2.840.113549.1.9.1=#<hex of the DER value>``, not the address as text);
* decodes every text string type as UTF-8 (JDK 17), so a BMPString comes out
  garbled, as on the broker, and hex-encodes UniversalString, VisibleString and
  NumericString values.

So the subject is read from the certificate's own DER bytes and formatted like the
JDK, keeping the values of a multi-valued RDN in encoded order, joined with ``+``.

Known difference: names are printed as JDK 17 prints them.  Newer JDKs (seen on
JDK 25) decode BMPString, T61String and IA5String values by their own character
sets, so a value of those types holding non-ASCII bytes prints differently there;
UTF8String and PrintableString values, which nearly all certificates use, print the
same on every JDK.
"""

from __future__ import annotations

import re
from typing import Final

from asn1crypto import parser as asn1_parser
from asn1crypto import x509 as asn1_x509
from cryptography import x509

from app.domain.ssl_principal_mapper import SslPrincipalMapper

__all__ = ["distinguished_name", "principal_name_for"]

# The only attribute types the JDK prints by keyword in RFC 2253 form; every other
# type is printed as its dotted OID with the value's DER encoding in hex.
_RFC2253_KEYWORDS: Final = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.9": "STREET",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "0.9.2342.19200300.100.1.1": "UID",
    "0.9.2342.19200300.100.1.25": "DC",
}
# UTF8String, PrintableString, T61String, IA5String, GeneralString, BMPString: the tags
# the JDK prints as text (JDK 17 decodes all of them as UTF-8, even BMPString).
_TEXT_TAGS: Final = frozenset({0x0C, 0x13, 0x14, 0x16, 0x1B, 0x1E})
_JDK_ESCAPED: Final = frozenset(',=+<>#;"\\')
# An encoded UTF-16 surrogate, whole or cut short: the JDK's UTF-8 decoder turns it
# into one U+FFFD where Python's gives one per byte; a lone invalid byte gets one in both.
_ENCODED_SURROGATE: Final = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]?")


def _format_value(tag: int, encoded: bytes, content: bytes, keyword: str) -> str:
    """The JDK's ``AVA.toRFC2253String`` value part."""
    if keyword[0] in "0123456789" or tag not in _TEXT_TAGS:
        return "#" + encoded.hex()
    escaped: list[str] = []
    for ch in _ENCODED_SURROGATE.sub(b"\xff", content).decode("utf-8", errors="replace"):
        if ch in _JDK_ESCAPED:
            escaped.append("\\" + ch)
        elif ch == "\x00":
            escaped.append("\\00")
        else:
            escaped.append(ch)
    text = "".join(escaped)
    # Leading and trailing spaces and carriage returns are escaped too.
    lead = len(text) - len(text.lstrip(" \r"))
    trail = len(text.rstrip(" \r"))
    return "".join("\\" + ch if i < lead or i >= trail else ch for i, ch in enumerate(text))


def _format_attribute(attribute: asn1_x509.NameTypeAndValue) -> str:
    oid = attribute["type"].dotted
    keyword = _RFC2253_KEYWORDS.get(oid, oid)
    # The value exactly as encoded: asn1crypto decodes values only when asked, and the JDK prints the bytes.
    encoded = attribute["value"].dump()
    identifier, contents = encoded[0], asn1_parser.parse(encoded)[4]
    return f"{keyword}={_format_value(identifier, encoded, contents, keyword)}"


def distinguished_name(certificate_der: bytes) -> str:
    """The certificate subject as Java's ``X500Principal.getName()`` prints it.

    This is the string Kafka feeds to the principal mapping rules.  Raises ValueError
    if the bytes are not a DER X.509 certificate that the ``cryptography`` package
    accepts (it is stricter than the JDK about some malformed encodings).
    """
    # cryptography decides what is a certificate (it is the strict parser); asn1crypto then gives the
    # subject's values as encoded, which cryptography does not.
    x509.load_der_x509_certificate(certificate_der)
    try:
        subject = asn1_x509.Certificate.load(certificate_der)["tbs_certificate"]["subject"]
        rdns = ["+".join(_format_attribute(attribute) for attribute in rdn) for rdn in subject.chosen]
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError("malformed certificate subject") from exc
    return ",".join(reversed(rdns))


def principal_name_for(certificate_der: bytes, mapper: SslPrincipalMapper) -> str:
    """The Kafka principal name (without ``User:``) a broker would give this client certificate."""
    return mapper.name(distinguished_name(certificate_der))
