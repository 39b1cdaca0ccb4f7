"""A Kafka client's trust and key stores in ``--command-config`` (app/cli/client/key_stores.py): JKS and PKCS12
as Java's keytool and ``cryptography`` make them, and PEM; wrong passwords and types refused in one line."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509

from app.cli.client.command_config import parse_command_config
from app.settings import ConfigError
from tests.key_store_material import jks_keystore, jks_truststore, pkcs12_keystore, pkcs12_truststore
from tests.tls_material import CertificateAuthority

PASSWORD = "store-Passw0rd"
WRONG = "Wr0ng-Secret-9"


@dataclass(frozen=True)
class Stores:
    ca: CertificateAuthority
    client_cert: Path
    client_key: Path
    pkcs12_keystore: Path
    jks_keystore: Path
    pkcs12_truststore: Path
    jks_truststore: Path


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Stores:
    directory = tmp_path_factory.mktemp("stores")
    ca = CertificateAuthority(directory)
    client = ca.issue("client", CN="svc-spark", O="acme")
    p12 = pkcs12_keystore(directory / "client.p12", client, ca, PASSWORD)
    return Stores(
        ca=ca,
        client_cert=client.cert,
        client_key=client.key,
        pkcs12_keystore=p12,
        jks_keystore=jks_keystore(directory / "client.jks", p12, PASSWORD),
        pkcs12_truststore=pkcs12_truststore(directory / "truststore.p12", ca, PASSWORD),
        jks_truststore=jks_truststore(directory / "truststore.jks", ca, PASSWORD),
    )


def ca_in(pem: str | None, ca: CertificateAuthority) -> bool:
    assert pem is not None
    return ca.certificate in x509.load_pem_x509_certificates(pem.encode())


@pytest.mark.parametrize(("store", "store_type"), [("jks", "JKS"), ("pkcs12", "PKCS12"), ("pkcs12", ""), ("jks", "")])
def test_trust_stores(stores: Stores, store: str, store_type: str) -> None:
    """An absent type is Kafka's default, JKS; a PKCS12 file under it works, as in a Java client."""
    values = {
        "ssl.truststore.location": str(getattr(stores, f"{store}_truststore")),
        "ssl.truststore.password": PASSWORD,
    }
    if store_type:
        values["ssl.truststore.type"] = store_type
    config = parse_command_config(values)
    assert ca_in(config.trusted_pem, stores.ca)
    context = config.ssl_context()
    assert context is not None and len(context.get_ca_certs()) == 1


@pytest.mark.parametrize(("store", "store_type"), [("jks", "JKS"), ("pkcs12", "PKCS12"), ("pkcs12", "")])
def test_key_stores(stores: Stores, store: str, store_type: str) -> None:
    config = parse_command_config(
        {
            "ssl.keystore.location": str(getattr(stores, f"{store}_keystore")),
            "ssl.keystore.type": store_type,
            "ssl.keystore.password": PASSWORD,
            "ssl.key.password": PASSWORD,
        }
    )
    assert config.identity is not None
    assert config.identity.chain[0] == x509.load_pem_x509_certificate(stores.client_cert.read_bytes())
    assert PASSWORD not in repr(config)
    assert config.ssl_context() is not None  # the chain and key load into ssl


def test_a_jks_trust_store_without_its_password_is_read_unchecked(stores: Stores) -> None:
    """As in Java, the password only checks the store's integrity."""
    config = parse_command_config({"ssl.truststore.location": str(stores.jks_truststore)})
    assert ca_in(config.trusted_pem, stores.ca)


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({"ssl.truststore.location": "jks_truststore", "ssl.truststore.password": WRONG}, "ssl.truststore.password"),
        ({"ssl.truststore.location": "pkcs12_truststore", "ssl.truststore.password": WRONG}, "ssl.truststore"),
        ({"ssl.keystore.location": "pkcs12_keystore", "ssl.keystore.password": WRONG}, "ssl.keystore"),
        ({"ssl.keystore.location": "jks_keystore", "ssl.keystore.password": WRONG}, "ssl.keystore.password"),
        (
            {"ssl.keystore.location": "jks_keystore", "ssl.keystore.password": PASSWORD, "ssl.key.password": WRONG},
            "ssl.key.password",
        ),
        ({"ssl.keystore.location": "jks_keystore"}, "ssl.keystore.password"),
        ({"ssl.truststore.location": "jks_truststore", "ssl.truststore.type": "BCFKS"}, "ssl.truststore.type"),
        ({"ssl.truststore.location": "client_key", "ssl.truststore.type": "PEM"}, "ssl.truststore.location"),
        ({"ssl.truststore.location": "client_key"}, "ssl.truststore.location"),
    ],
)
def test_bad_stores_are_one_line_naming_the_key(stores: Stores, values: dict[str, str], key: str) -> None:
    resolved = {
        name: str(getattr(stores, value, value)) if name.endswith("location") else value
        for name, value in values.items()
    }
    with pytest.raises(ConfigError) as excinfo:
        parse_command_config(resolved)
    message = str(excinfo.value)
    assert message.startswith(key) and "\n" not in message
    assert PASSWORD not in message and WRONG not in message.replace("wrong password", "")


def test_pem_stores_files_and_inline(stores: Stores, tmp_path: Path) -> None:
    combined = tmp_path / "client-keystore.pem"
    combined.write_bytes(stores.client_key.read_bytes() + stores.client_cert.read_bytes())
    from_files = parse_command_config(
        {
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(stores.ca.path),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(combined),
        }
    )
    inline = parse_command_config(
        {
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": stores.ca.path.read_text(),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": stores.client_cert.read_text(),
            "ssl.keystore.key": stores.client_key.read_text(),
        }
    )
    for config in (from_files, inline):
        assert ca_in(config.trusted_pem, stores.ca)
        assert config.identity is not None and config.ssl_context() is not None


def test_a_store_and_the_pem_key_for_the_same_thing_are_refused(stores: Stores) -> None:
    with pytest.raises(ConfigError, match=r"^ssl\.truststore\.location: give the CAs to trust once"):
        parse_command_config({"ssl.truststore.location": str(stores.jks_truststore), "ssl.cafile": str(stores.ca.path)})
    with pytest.raises(ConfigError, match=r"^ssl\.keystore\.location: give the client certificate once"):
        parse_command_config(
            {
                "ssl.keystore.location": str(stores.pkcs12_keystore),
                "ssl.keystore.password": PASSWORD,
                "ssl.certfile": str(stores.client_cert),
                "ssl.keyfile": str(stores.client_key),
            }
        )


def test_jks_without_the_jks_extra_says_how_to_get_it(stores: Stores, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jks", None)  # import jks now raises ImportError
    with pytest.raises(ConfigError, match=r"pip install 'kts-kafka\[jks\]'"):
        parse_command_config({"ssl.truststore.location": str(stores.jks_truststore)})
    # PKCS12 needs no extra.
    assert parse_command_config(
        {"ssl.truststore.location": str(stores.pkcs12_truststore), "ssl.truststore.password": PASSWORD}
    ).trusted_pem


def test_a_jks_key_opens_with_the_store_password_when_no_key_password_is_given(stores: Stores) -> None:
    config = parse_command_config(
        {"ssl.keystore.location": str(stores.jks_keystore), "ssl.keystore.password": PASSWORD}
    )
    assert config.identity is not None and config.ssl_context() is not None


def test_a_pem_key_store_ignores_the_store_password(stores: Stores, tmp_path: Path) -> None:
    """A PEM key is opened with ssl.key.password only, as Kafka does; an unencrypted one needs none."""
    combined = tmp_path / "client.pem"
    combined.write_bytes(stores.client_cert.read_bytes() + stores.client_key.read_bytes())
    config = parse_command_config(
        {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(combined), "ssl.keystore.password": PASSWORD}
    )
    assert config.identity is not None


def test_a_jks_trust_store_made_from_a_key_store_trusts_its_first_certificate(stores: Stores) -> None:
    config = parse_command_config({"ssl.truststore.location": str(stores.jks_keystore)})
    assert config.trusted_pem is not None
    trusted = x509.load_pem_x509_certificates(config.trusted_pem.encode())
    assert trusted == [x509.load_pem_x509_certificate(stores.client_cert.read_bytes())]
