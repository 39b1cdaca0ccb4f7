"""BasicAuthenticator: PBKDF2 runs once per credential and password within the cache lifetime, no more."""

from __future__ import annotations

import pytest

from app.auth import basic
from app.auth.basic import BasicAuthenticator
from app.domain.credentials import Mechanism, ScramCredential
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
    return BasicAuthenticator(store, clock, cache_ttl_ms=60_000, cache_size=2), store, clock


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
    assert len(pbkdf2_calls) == 2
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
