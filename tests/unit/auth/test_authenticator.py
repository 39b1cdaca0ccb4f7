"""The Authenticator over in-memory ports: which caller each kind of credential becomes, the refusal each
failure answers with, what the audit trail records of it (never the secret), and the throttle in front."""

from __future__ import annotations

import base64
import json
import ssl

import pytest

from app.auth.authenticator import Authenticator
from app.auth.basic import BasicAuthenticator, StoredKeyCredentials
from app.auth.jwks import JwksKeys
from app.auth.own_identity import OwnIdentity
from app.auth.workload_jwt import JwtAuthenticator, JwtPolicy
from app.domain.audit import Action, AuditEvent, Outcome
from app.domain.authorization import Caller, SuperUsersOnly
from app.domain.credentials import Mechanism
from app.domain.errors import AccountLocked, NotAuthenticated, TooManyAttempts
from app.domain.lockout import AccountLockout, LockoutPolicy
from app.domain.principal import KafkaPrincipal
from app.domain.scram import derive
from app.domain.ssl_principal_mapper import SslPrincipalMapper
from app.domain.throttle import FailureThrottle, ThrottlePolicy
from app.domain.token import TokenInformation
from app.domain.token_rules import TokenPolicy
from app.domain.token_secret import TokenSecret, encode_hmac
from app.service.attempts import AttemptGuard
from app.service.audit import Auditor
from app.service.lockout import AccountLocks
from app.service.ports import StoredToken
from app.service.tokens import TokenService
from tests.jwt_material import AUDIENCE, ISSUER, SPARK, JwtKey, jwks
from tests.unit.auth.test_x500_name import CN, OU, certificate_der, rdn, subject_of
from tests.unit.fakes import (
    NOW,
    FakeAuditLog,
    FakeClock,
    FakeIntentStore,
    FakeLockoutStore,
    FakeTokenStore,
    FakeTokenView,
    FakeUserStore,
)

ALICE = KafkaPrincipal.user("alice")
KTS = KafkaPrincipal.user("kts")  # kts's own principal toward the cluster, in the tests of OwnIdentity
SECRET = TokenSecret("unit-test-secret")
HOST = "192.0.2.7"
CERTIFICATE = ssl.DER_cert_to_PEM_cert(certificate_der(subject_of(rdn((OU, "Services")), rdn((CN, "svc-1")))))


class Setup:
    def __init__(
        self,
        *,
        client_auth: str = "none",
        rules: str = "DEFAULT",
        max_failures: int = 0,
        own: OwnIdentity | None = None,
        lockout: bool = False,
    ) -> None:
        """``lockout``: the guard holds the account lockout (with ``max_failures``), whose logins the
        verified-password cache may answer (``recall``)."""
        self.clock = FakeClock()
        self.users = FakeUserStore()
        for name in ("alice", KTS.name):
            credential = derive(Mechanism.SCRAM_SHA_256, f"{name}-pw", 4096)
            self.users.put_credential(name, Mechanism.SCRAM_SHA_256, credential)
        store = FakeTokenStore()
        for token_id, owner in (("AliceToken", ALICE), ("KtsToken", KTS)):
            token = TokenInformation(token_id, owner, owner, (), NOW, NOW + 60_000, NOW + 120_000)
            store.tokens[token_id] = StoredToken(token, 0)
        self.log = FakeAuditLog()
        auditor = Auditor(self.log, FakeIntentStore())
        tokens = TokenService(
            store,
            FakeTokenView(store.tokens.values()),
            secret=SECRET,
            policy=TokenPolicy(max_lifetime_ms=120_000, default_renew_ms=60_000),
            authorizer=SuperUsersOnly([]),
            clock=self.clock,
            auditor=auditor,
        )
        guard = None
        if max_failures:
            throttle = FailureThrottle(ThrottlePolicy(max_failures=max_failures, window_ms=60_000), self.clock)
            locks = None
            if lockout:
                rule = AccountLockout(LockoutPolicy(max_failures), self.clock)
                locks = AccountLocks(rule, FakeLockoutStore(self.clock), auditor=auditor, authorizer=SuperUsersOnly([]))
            guard = AttemptGuard(throttle, auditor, Action.AUTHENTICATION, lockout=locks)
        self.basic = BasicAuthenticator(StoredKeyCredentials(self.users), self.clock)
        self.authenticator = Authenticator(
            self.basic,
            tokens,
            client_auth=client_auth,
            mapper=SslPrincipalMapper.from_rules(rules),
            auditor=auditor,
            guard=guard,
            own=own,
        )

    def authenticate(self, header: str | None, certificate: str | None = None) -> Caller:
        return self.authenticator.authenticate(header, HOST, certificate)

    def refusal(self, header: str | None, certificate: str | None = None) -> tuple[str, AuditEvent]:
        with pytest.raises(NotAuthenticated) as refused:
            self.authenticate(header, certificate)
        return refused.value.message, self.log.events()[-1]


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def bearer(token_id: str, mac: bytes) -> str:
    return f"Bearer {token_id}:{encode_hmac(mac)}"


def test_a_basic_login_is_the_user() -> None:
    setup = Setup()
    assert setup.authenticate(basic("alice", "alice-pw")) == Caller(ALICE, host=HOST)
    assert setup.log.events() == []  # successful logins are not audited


def test_a_wrong_password_is_refused_and_audited_with_the_claimed_user_only() -> None:
    message, event = Setup().refusal(basic("alice", "guess"))
    assert message == "Invalid user name or password."
    assert event == AuditEvent(
        Action.AUTHENTICATION,
        Outcome.DENIED,
        principal="User:alice",
        details={"scheme": "basic", "reason": "Invalid user name or password."},
    )
    assert "guess" not in repr(event)


def test_a_bearer_login_is_the_tokens_owner_marked_as_token_authenticated() -> None:
    caller = Setup().authenticate(bearer("AliceToken", SECRET.hmac("AliceToken")))
    assert caller == Caller(ALICE, host=HOST, token_id="AliceToken")
    assert caller.token_authenticated


def test_a_wrong_or_expired_token_is_refused_and_audited_with_its_id() -> None:
    setup = Setup()
    message, event = setup.refusal(bearer("AliceToken", SECRET.hmac("Forged")))
    assert message == "Unknown, expired or invalid delegation token."
    assert (event.token_id, event.details["scheme"]) == ("AliceToken", "bearer")
    setup.clock.advance(60_000)
    assert setup.refusal(bearer("AliceToken", SECRET.hmac("AliceToken")))[0] == message


@pytest.mark.parametrize(
    ("header", "message", "scheme"),
    [
        (None, "Authentication is required (Basic, Bearer or a TLS client certificate).", "none"),
        ("Digest abc", "Unsupported authentication scheme; use Basic or Bearer.", "digest"),
        ("Basic ???", "Malformed Basic credentials.", "basic"),
        ("Bearer AliceToken", "Bearer credentials must be <tokenId>:<base64 hmac>.", "bearer"),
    ],
)
def test_unusable_credentials_are_refused_with_a_sentence(header: str | None, message: str, scheme: str) -> None:
    refused, event = Setup().refusal(header)
    assert refused == message
    assert event.details == {"scheme": scheme, "reason": message}


def test_a_certificate_maps_to_a_user_when_client_auth_is_on() -> None:
    setup = Setup(client_auth="requested", rules="RULE:^CN=([^,]+),.*$/$1/")
    assert setup.authenticate(None, CERTIFICATE) == Caller(KafkaPrincipal.user("svc-1"), host=HOST)
    # a header wins over the certificate, as a SASL login over an SSL listener does in Kafka
    assert setup.authenticate(basic("alice", "alice-pw"), CERTIFICATE).principal == ALICE


def test_a_certificate_no_rule_maps_is_refused() -> None:
    message, event = Setup(client_auth="requested", rules="RULE:^CN=x$/x/").refusal(None, CERTIFICATE)
    assert message == "No ssl.principal.mapping.rules rule applies to the client certificate."
    assert event.details["scheme"] == "certificate"


def test_a_certificate_is_ignored_when_client_auth_is_off() -> None:
    assert Setup().refusal(None, CERTIFICATE)[0].startswith("Authentication is required")


def test_client_auth_required_refuses_a_request_without_a_certificate_whatever_it_carries() -> None:
    message, _ = Setup(client_auth="required").refusal(basic("alice", "alice-pw"))
    assert message == "This listener requires a TLS client certificate."


def test_the_guard_refuses_a_guessing_address_before_checking_the_password() -> None:
    setup = Setup(max_failures=2)
    for _ in range(2):
        setup.refusal(basic("alice", "guess"))

    with pytest.raises(TooManyAttempts):
        setup.authenticate(basic("alice", "alice-pw"))  # even the right password: it is not looked at

    (first,) = setup.log.events()  # the burst's first attempt in full; the others are counted
    assert first.details == {"scheme": "basic", "reason": "Invalid user name or password."}


def test_a_success_under_the_limit_goes_through_the_guard() -> None:
    setup = Setup(max_failures=2)
    setup.refusal(basic("alice", "guess"))
    assert setup.authenticate(basic("alice", "alice-pw")) == Caller(ALICE, host=HOST)


def test_a_known_password_is_the_same_caller_and_a_guess_is_still_counted() -> None:
    """Under the lockout the verified-password cache answers a known password (no check); a wrong one is checked
    and counted, up to the lock, which then refuses the known password too."""
    setup = Setup(max_failures=3, lockout=True)
    assert setup.authenticate(basic("alice", "alice-pw")) == Caller(ALICE, host=HOST)  # checked
    assert setup.basic.recall("alice", "alice-pw")
    assert setup.authenticate(basic("alice", "alice-pw")) == Caller(ALICE, host=HOST)  # recalled
    for n in range(3):
        assert setup.refusal(basic("alice", f"guess-{n}"))[0] == "Invalid user name or password."
    with pytest.raises(AccountLocked):
        setup.authenticate(basic("alice", "alice-pw"))


def test_a_known_password_is_refused_once_its_principal_is_ktss_own() -> None:
    """The cache knew alice's password before kts learned, once connected, that alice is its own principal: the
    login is refused all the same, the cache notwithstanding."""
    learned: list[KafkaPrincipal] = []
    setup = Setup(max_failures=3, lockout=True, own=OwnIdentity([], lambda: learned[0] if learned else None))
    assert setup.authenticate(basic("alice", "alice-pw")).principal == ALICE
    learned.append(ALICE)
    message, _ = setup.refusal(basic("alice", "alice-pw"))
    assert message.startswith("User:alice is the principal kts itself uses")


def test_a_known_password_needs_the_certificate_a_listener_requires() -> None:
    setup = Setup(client_auth="required", max_failures=3, lockout=True)
    assert setup.authenticate(basic("alice", "alice-pw"), CERTIFICATE).principal == ALICE
    assert setup.basic.recall("alice", "alice-pw")
    message, _ = setup.refusal(basic("alice", "alice-pw"))
    assert message == "This listener requires a TLS client certificate."


class JwtSetup(Setup):
    """A Setup whose authenticator also checks JWTs signed by SIGNER."""

    def __init__(self, *, max_failures: int = 0, with_jwt: bool = True, own: OwnIdentity | None = None) -> None:
        super().__init__(max_failures=max_failures, own=own)
        keys = JwksKeys(
            "file:///jwks.json", lambda: json.dumps(jwks(SIGNER)).encode(), refresh_ms=60_000, clock=self.clock
        )
        checker = JwtAuthenticator(keys, JwtPolicy(issuer=ISSUER, audiences=(AUDIENCE,)))
        self.authenticator._jwt = checker if with_jwt else None


SIGNER = JwtKey.rsa("k1")


def test_a_jwt_login_is_its_subject_as_a_full_principal() -> None:
    setup = JwtSetup()
    caller = setup.authenticate(f"Bearer {SIGNER.mint()}")
    assert caller == Caller(KafkaPrincipal.user(SPARK), host=HOST)
    assert not caller.token_authenticated
    assert setup.log.events() == []


def test_a_refused_jwt_is_audited_with_its_claimed_subject_and_reason_never_the_token() -> None:
    token = JwtKey.rsa("k1").mint()  # same kid, another key
    message, event = JwtSetup().refusal(f"Bearer {token}")
    assert message == "The JWT's signature does not verify."
    assert event == AuditEvent(
        Action.AUTHENTICATION,
        Outcome.DENIED,
        principal=f"User:{SPARK}",
        details={"scheme": "bearer", "reason": message},
    )
    assert token.split(".")[2] not in repr(event)


def test_a_jwt_without_a_configured_jwks_endpoint_is_refused() -> None:
    message, _ = JwtSetup(with_jwt=False).refusal(f"Bearer {SIGNER.mint()}")
    assert message == "JWT authentication is not enabled on this service (no sasl.oauthbearer.jwks.endpoint.url)."


def test_failed_jwt_logins_are_throttled_like_passwords() -> None:
    setup = JwtSetup(max_failures=2)
    forged = JwtKey.rsa("k1")
    for _ in range(2):
        setup.refusal(f"Bearer {forged.mint()}")
    with pytest.raises(TooManyAttempts):
        setup.authenticate(f"Bearer {SIGNER.mint()}")  # the same subject from the same address: not looked at
    assert setup.authenticate(basic("alice", "alice-pw")).principal == ALICE  # another subject goes ahead


# kts's own cluster principal (app/auth/own_identity.py): no scheme ever makes a caller of it.

OWN_REFUSAL = "User:kts is the principal kts itself uses toward the Kafka cluster"


def own_identity(learned: KafkaPrincipal | None = None) -> OwnIdentity:
    return OwnIdentity([KTS], lambda: learned, source="its login to the brokers, admin.sasl.jaas.config")


def test_a_basic_login_as_kts_is_refused_before_its_password_is_looked_at() -> None:
    setup = Setup(own=own_identity())
    right, event = setup.refusal(basic("kts", "kts-pw"))
    wrong, _ = setup.refusal(basic("kts", "a guess"))
    assert right == wrong  # the answer never tells whether a guess at kts's own password was right
    assert right.startswith(OWN_REFUSAL) and "no HTTP caller may authenticate as it" in right
    assert event == AuditEvent(
        Action.AUTHENTICATION, Outcome.DENIED, principal="User:kts", details={"scheme": "basic", "reason": right}
    )
    assert setup.authenticate(basic("alice", "alice-pw")).principal == ALICE  # everyone else as before
    assert Setup().authenticate(basic("kts", "kts-pw")).principal == KTS  # what kts did before (the attack)


def test_a_delegation_token_owned_by_kts_is_refused() -> None:
    setup = Setup(own=own_identity())
    message, event = setup.refusal(bearer("KtsToken", SECRET.hmac("KtsToken")))
    assert message.startswith(OWN_REFUSAL)
    assert (event.token_id, event.details["scheme"]) == ("KtsToken", "bearer")
    assert setup.authenticate(bearer("AliceToken", SECRET.hmac("AliceToken"))).principal == ALICE


def test_a_certificate_that_maps_to_kts_is_refused() -> None:
    setup = Setup(client_auth="requested", rules="RULE:^CN=svc-1,.*$/kts/", own=own_identity())
    message, event = setup.refusal(None, CERTIFICATE)
    assert message.startswith(OWN_REFUSAL)
    assert event.details["scheme"] == "certificate"


def test_a_jwt_whose_subject_is_kts_is_refused() -> None:
    setup = JwtSetup(own=own_identity())
    message, event = setup.refusal(f"Bearer {SIGNER.mint(sub='kts')}")
    assert message.startswith(OWN_REFUSAL)
    assert (event.principal, event.details["scheme"]) == ("User:kts", "bearer")
    assert setup.authenticate(f"Bearer {SIGNER.mint()}").principal == KafkaPrincipal.user(SPARK)


def test_the_principal_the_cluster_answered_is_refused_too() -> None:
    """A certificate login to the brokers: the principal is what the brokers mapped it to, known once connected."""
    setup = Setup(own=OwnIdentity([], lambda: ALICE))
    message, _ = setup.refusal(basic("alice", "alice-pw"))
    assert message.startswith("User:alice is the principal kts itself uses")
