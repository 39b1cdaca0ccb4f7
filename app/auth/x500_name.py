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


def _der_element(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, content start, content end) of the DER element at ``pos``."""
    if pos + 2 > len(data):
        raise ValueError("truncated DER")
    tag = data[pos]
    if tag & 0x1F == 0x1F:
        raise ValueError("unsupported DER tag")
    length = data[pos + 1]
    pos += 2
    if length & 0x80:
        size = length & 0x7F
        if size == 0 or size > 4 or pos + size > len(data):
            raise ValueError("unsupported DER length")
        length = int.from_bytes(data[pos : pos + size], "big")
        pos += size
    if pos + length > len(data):
        raise ValueError("truncated DER")
    return tag, pos, pos + length


def _der_length(length: int) -> bytes:
    if length < 0x80:
        return bytes([length])
    encoded = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(encoded)]) + encoded


def _oid_text(content: bytes) -> str:
    arcs: list[int] = []
    value = 0
    for byte in content:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    if not arcs or content[-1] & 0x80:
        raise ValueError("malformed OID")
    first = min(arcs[0] // 40, 2)
    return ".".join(str(arc) for arc in [first, arcs[0] - 40 * first, *arcs[1:]])


def _format_value(tag: int, content: bytes, keyword: str) -> str:
    """The JDK's ``AVA.toRFC2253String`` value part."""
    if keyword[0] in "0123456789" or tag not in _TEXT_TAGS:
        return "#" + (bytes([tag]) + _der_length(len(content)) + content).hex()
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


def _format_name(name_der: bytes) -> str:
    tag, start, end = _der_element(name_der, 0)
    if tag != 0x30:
        raise ValueError("subject is not a DER SEQUENCE")
    rdns: list[str] = []
    pos = start
    while pos < end:
        _, rdn_start, rdn_end = _der_element(name_der, pos)
        avas: list[str] = []
        ava_pos = rdn_start
        while ava_pos < rdn_end:
            _, ava_start, ava_end = _der_element(name_der, ava_pos)
            oid_tag, oid_start, oid_end = _der_element(name_der, ava_start)
            if oid_tag != 0x06:
                raise ValueError("attribute type is not an OID")
            value_tag, value_start, value_end = _der_element(name_der, oid_end)
            oid = _oid_text(name_der[oid_start:oid_end])
            keyword = _RFC2253_KEYWORDS.get(oid, oid)
            avas.append(f"{keyword}={_format_value(value_tag, name_der[value_start:value_end], keyword)}")
            ava_pos = ava_end
        rdns.append("+".join(avas))
        pos = rdn_end
    return ",".join(reversed(rdns))


def _subject_der(tbs: bytes) -> bytes:
    """The subject Name inside a DER TBSCertificate, exactly as encoded."""
    _, pos, _ = _der_element(tbs, 0)
    if _der_element(tbs, pos)[0] == 0xA0:  # explicit version
        pos = _der_element(tbs, pos)[2]
    for _ in range(4):  # serialNumber, signature, issuer, validity
        pos = _der_element(tbs, pos)[2]
    return tbs[pos : _der_element(tbs, pos)[2]]


def distinguished_name(certificate_der: bytes) -> str:
    """The certificate subject as Java's ``X500Principal.getName()`` prints it.

    This is the string Kafka feeds to the principal mapping rules.  Raises ValueError
    if the bytes are not a DER X.509 certificate that the ``cryptography`` package
    accepts (it is stricter than the JDK about some malformed encodings).
    """
    certificate = x509.load_der_x509_certificate(certificate_der)
    try:
        return _format_name(_subject_der(certificate.tbs_certificate_bytes))
    except IndexError as exc:
        raise ValueError("malformed certificate subject") from exc


def principal_name_for(certificate_der: bytes, mapper: SslPrincipalMapper) -> str:
    """The Kafka principal name (without ``User:``) a broker would give this client certificate."""
    return mapper.name(distinguished_name(certificate_der))
