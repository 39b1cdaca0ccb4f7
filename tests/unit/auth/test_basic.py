"""BasicAuthenticator: PBKDF2 runs once per credential and password within the cache lifetime, no more; and
a refused login costs the same PBKDF2 work whether or not the user exists; ``recall`` (the cache alone) checks no
password, remembers nothing, and stops answering as soon as the credential changes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import pytest

from app.auth import basic
from app.auth.basic import BasicAuthenticator, StoredKeyCredentials, Verdict
from app.domain import scram
from app.domain.credentials import MAX_ITERATIONS, MIN_ITERATIONS, Mechanism, ScramCredential
from app.domain.scram import derive
from tests.unit.fakes import FakeClock, FakeUserStore

Setup = tuple[BasicAuthenticator, FakeUserStore, FakeClock]


@pytest.fixture
def pbkdf2_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = basic.password_matches

    def counting(mechanism: Mechanism, credential: ScramCredential, password: str) -> bool:
        calls.append(mechanism.value)
        return real(mechanism, credential, password)

    monkeypatch.setattr(basic, "password_matches", counting)
    return calls


@pytest.fixture
def setup() -> Setup:
    store, clock = FakeUserStore(), FakeClock()
    store.put_credential("alice", Mechanism.SCRAM_SHA_512, derive(Mechanism.SCRAM_SHA_512, "pw", 4096))
    return BasicAuthenticator(StoredKeyCredentials(store), clock, cache_ttl_ms=60_000, cache_size=2), store, clock


def test_verified_password_is_not_rehashed_within_the_ttl(setup: Setup, pbkdf2_calls: list[str]) -> None:
    authenticator, _, clock = setup
    assert authenticator.authenticate("alice", "pw")
    clock.now += 59_999
    assert authenticator.authenticate("alice", "pw")
    assert len(pbkdf2_calls) == 1


def test_cache_entries_expire(setup: Setup, pbkdf2_calls: list[str]) -> None:
    authenticator, _, clock = setup
    authenticator.authenticate("alice", "pw")
    clock.now += 60_000
    assert authenticator.authenticate("alice", "pw")
    assert len(pbkdf2_calls) == 2


def test_wrong_passwords_are_never_cached(setup: Setup, pbkdf2_calls: list[str]) -> None:
    authenticator, _, _ = setup
    assert not authenticator.authenticate("alice", "wrong")
    assert not authenticator.authenticate("alice", "wrong")
    assert pbkdf2_calls == ["SCRAM-SHA-512", "SCRAM-SHA-256"] * 2  # her one credential, then a dummy
    authenticator.authenticate("alice", "pw")
    assert not authenticator.authenticate("alice", "pW")


def test_changed_credential_invalidates_the_cache(setup: Setup) -> None:
    authenticator, store, _ = setup
    assert authenticator.authenticate("alice", "pw")
    store.put_credential("alice", Mechanism.SCRAM_SHA_512, derive(Mechanism.SCRAM_SHA_512, "new", 4096))
    assert not authenticator.authenticate("alice", "pw")
    assert authenticator.authenticate("alice", "new")


def test_deleted_user_is_refused_at_once(setup: Setup) -> None:
    authenticator, store, _ = setup
    assert authenticator.authenticate("alice", "pw")
    store.delete_credential("alice", Mechanism.SCRAM_SHA_512)
    assert not authenticator.authenticate("alice", "pw")


def test_cache_is_bounded(setup: Setup, pbkdf2_calls: list[str]) -> None:
    authenticator, store, _ = setup
    for name in ("bob", "carol"):
        store.put_credential(name, Mechanism.SCRAM_SHA_256, derive(Mechanism.SCRAM_SHA_256, name, 4096))
    for name, password in (("alice", "pw"), ("bob", "bob"), ("carol", "carol")):
        authenticator.authenticate(name, password)
    authenticator.authenticate("alice", "pw")  # evicted by the size bound of 2: hashed again
    assert len(pbkdf2_calls) == 4


def test_cache_holds_no_password_material(setup: Setup) -> None:
    authenticator, _, _ = setup
    authenticator.authenticate("alice", "pw")
    assert all(b"pw" not in key for key in authenticator._verified)  # keyed hashes only


def test_unknown_user_is_refused(setup: Setup) -> None:
    authenticator, _, _ = setup
    assert not authenticator.authenticate("nobody", "pw")


# --- recall: the login guard's fast path asks the cache alone ----------------------------------------------


def test_recall_checks_no_password_and_remembers_nothing(setup: Setup, pbkdf2_calls: list[str]) -> None:
    """An attacker's guesses through recall: no derivation (no work to spend), no entry (no memory to fill), and
    no answer but "not known", which sends the login to the counted check."""
    authenticator, _, _ = setup
    assert not authenticator.recall("alice", "pw")  # right, but not checked yet: not known
    for n in range(50):
        assert not authenticator.recall("alice", f"guess-{n}")
        assert not authenticator.recall(f"nobody-{n}", "pw")
    assert pbkdf2_calls == []
    assert len(authenticator._verified) == 0
    assert authenticator.authenticate("alice", "pw")
    assert authenticator.recall("alice", "pw")
    assert not authenticator.recall("alice", "pW")
    assert not authenticator.recall("Alice", "pw")
    assert len(authenticator._verified) == 1


def test_recall_stops_at_once_when_the_password_changes_or_goes(setup: Setup) -> None:
    authenticator, store, clock = setup
    assert authenticator.authenticate("alice", "pw")
    store.put_credential("alice", Mechanism.SCRAM_SHA_512, derive(Mechanism.SCRAM_SHA_512, "new", 4096))
    assert not authenticator.recall("alice", "pw")
    assert authenticator.authenticate("alice", "new")
    assert authenticator.recall("alice", "new")
    store.delete_credential("alice", Mechanism.SCRAM_SHA_512)
    assert not authenticator.recall("alice", "new")
    store.put_credential("alice", Mechanism.SCRAM_SHA_512, derive(Mechanism.SCRAM_SHA_512, "again", 4096))
    assert authenticator.authenticate("alice", "again")
    clock.now += 60_000
    assert not authenticator.recall("alice", "again")  # ended with its entry


class _Fingerprints:
    """A credential source whose fingerprints the test chooses (and counts the reads of); accepts ``accepted``
    alone."""

    def __init__(self, fingerprints: dict[str, bytes], accepted: tuple[str, str]) -> None:
        self._fingerprints = fingerprints
        self._accepted = accepted
        self.reads = 0

    def fingerprint(self, user_name: str) -> bytes:
        self.reads += 1
        return self._fingerprints.get(user_name, b"")

    def verify(self, user_name: str, password: str) -> Verdict:
        return Verdict.ACCEPTED if (user_name, password) == self._accepted else Verdict.REFUSED


def test_a_guess_is_not_recalled_without_reading_the_user_store() -> None:
    """No store read for a password never accepted: a guess (at a name no user has, too) costs what it did before
    recall, and its duration tells nothing more about whether the user exists."""
    source = _Fingerprints({"alice": b"F"}, accepted=("alice", "pw"))
    authenticator = BasicAuthenticator(source, FakeClock())
    assert not authenticator.recall("alice", "guess")
    assert not authenticator.recall("nobody", "pw")
    assert source.reads == 0
    assert authenticator.authenticate("alice", "pw")
    reads = source.reads
    assert authenticator.recall("alice", "pw")
    assert source.reads == reads + 1  # known: its credential is read, to see it is still the one accepted


def test_no_other_name_and_password_share_a_cache_entry() -> None:
    """A name and a password joined by a NUL byte alone would make ("alice", "x\0y") and ("alice\0x", "y") one
    message: the second's password, wrong, would be recalled as right."""
    source = _Fingerprints({"alice": b"F", "alice\x00x": b"F"}, accepted=("alice", "x\x00y"))
    authenticator = BasicAuthenticator(source, FakeClock())
    assert authenticator.authenticate("alice", "x\x00y")
    assert authenticator.recall("alice", "x\x00y")
    assert not authenticator.recall("alice\x00x", "y")
    assert authenticator.check("alice\x00x", "y") is Verdict.REFUSED


# --- no user enumeration by timing: the work itself is compared, never a duration ---------------------------

Derivation = tuple[str, int, int, int]  # hash, iterations, salt length, password length


@pytest.fixture
def derivations(monkeypatch: pytest.MonkeyPatch) -> list[Derivation]:
    """Every PBKDF2 computation, at the call that does the work (hashlib, as app/domain/scram.py uses it)."""
    done: list[Derivation] = []
    real: Callable[..., bytes] = hashlib.pbkdf2_hmac

    def recording(hash_name: str, password: bytes, salt: bytes, iterations: int) -> bytes:
        done.append((hash_name, iterations, len(salt), len(password)))
        return real(hash_name, password, salt, iterations)

    monkeypatch.setattr(scram.hashlib, "pbkdf2_hmac", recording)
    return done


def _store() -> FakeUserStore:
    store = FakeUserStore()
    sha512 = derive(Mechanism.SCRAM_SHA_512, "the-real-password", MIN_ITERATIONS)
    sha256 = derive(Mechanism.SCRAM_SHA_256, "the-real-password", MIN_ITERATIONS)
    store.put_credential("both", Mechanism.SCRAM_SHA_512, sha512)
    store.put_credential("both", Mechanism.SCRAM_SHA_256, sha256)
    store.put_credential("sha512-only", Mechanism.SCRAM_SHA_512, sha512)
    store.put_credential("sha256-only", Mechanism.SCRAM_SHA_256, sha256)
    for name, iterations in (("too-few", MIN_ITERATIONS - 1), ("too-many", MAX_ITERATIONS * 1000)):
        tampered = ScramCredential(b"s" * 32, b"k" * 64, b"k" * 64, iterations)
        store.put_credential(name, Mechanism.SCRAM_SHA_512, tampered)
    store.put_credential("emptied", Mechanism.SCRAM_SHA_512, sha512)
    store.delete_credential("emptied", Mechanism.SCRAM_SHA_512)
    return store


# A known user with a wrong password, for each set of credentials a user may hold, and users kts cannot check.
REFUSED_LOGINS = ["both", "sha512-only", "sha256-only", "nobody", "emptied", "too-few", "too-many", ""]


def test_every_refused_login_derives_the_same_keys(derivations: list[Derivation]) -> None:
    authenticator = BasicAuthenticator(StoredKeyCredentials(_store()), FakeClock())
    derivations.clear()  # the dummy credentials, derived once at construction
    work: dict[str, list[Derivation]] = {}
    for user in REFUSED_LOGINS:
        assert not authenticator.authenticate(user, "a-wrong-password")
        work[user], derivations[:] = sorted(derivations), []
    expected = [("sha256", MIN_ITERATIONS, 32, 16), ("sha512", MIN_ITERATIONS, 32, 16)]
    assert work == {user: expected for user in REFUSED_LOGINS}


def test_the_dummy_credentials_are_derived_once_not_per_login(derivations: list[Derivation]) -> None:
    store = _store()
    derivations.clear()
    authenticator = BasicAuthenticator(StoredKeyCredentials(store), FakeClock())
    assert derivations == [("sha512", MIN_ITERATIONS, 32, 64), ("sha256", MIN_ITERATIONS, 32, 64)]
    derivations.clear()
    for _ in range(3):
        authenticator.authenticate("nobody", "pw")
    assert len(derivations) == 3 * 2


def test_the_dummy_credentials_look_like_the_ones_kts_writes(setup: Setup) -> None:
    authenticator, _, _ = setup
    assert set(authenticator._source._dummies) == set(Mechanism)
    for dummy in authenticator._source._dummies.values():
        assert (dummy.iterations, len(dummy.salt)) == (MIN_ITERATIONS, scram.SALT_BYTES)


def test_the_right_password_still_gets_in_with_either_mechanism(derivations: list[Derivation]) -> None:
    authenticator = BasicAuthenticator(StoredKeyCredentials(_store()), FakeClock())
    derivations.clear()
    for user in ("both", "sha512-only", "sha256-only"):
        assert authenticator.authenticate(user, "the-real-password")
    assert [hash_name for hash_name, *_ in derivations] == ["sha512", "sha512", "sha256"]  # no padding then
