"""The per-account lockout's rule on a fake clock: checks are counted before they run, so however many arrive
at once each replica checks at most its share of the threshold; a success forgives only its own address's
failures, and so does a login the verified-password cache answered, which settles no reservation; a replica's own
lock stands until the lock is shared; keys are hashes of whole names; a full table evicts the lowest counts first;
exempt addresses parse as addresses and networks."""

from __future__ import annotations

import pytest

from app.domain.lockout import AccountLockout, ExemptAddresses, LockoutPolicy, account_key
from tests.unit.fakes import FakeClock

ALICE = account_key("User:alice")
WINDOW = 60_000
DURATION = 900_000
ATTACKER = "192.0.2.66"
HOME = "198.51.100.7"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def make(clock: FakeClock, threshold: int = 10, max_keys: int = 100) -> AccountLockout:
    return AccountLockout(LockoutPolicy(threshold, WINDOW, DURATION, max_keys=max_keys), clock)


def fail(lockout: AccountLockout, replicas: int = 1, address: str = ATTACKER, key: str = ALICE) -> object:
    assert lockout.begin(key, replicas) == 0
    return lockout.failed(key, "User:alice", address, replicas)


@pytest.mark.parametrize(
    ("threshold", "replicas", "share"), [(10, 1, 10), (10, 2, 5), (10, 3, 4), (1, 5, 1), (7, 0, 7)]
)
def test_the_share_is_the_threshold_divided_among_replicas(threshold: int, replicas: int, share: int) -> None:
    assert LockoutPolicy(threshold).share(replicas) == share


@pytest.mark.parametrize("threshold", [1, 2, 3, 10, 11])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
def test_checks_arriving_at_once_are_reserved_before_they_run(threshold: int, replicas: int) -> None:
    """Every attempt arrives before any verdict: each replica reserves at most its share, so fewer than
    threshold + replicas passwords are checked across the cluster."""
    clock = FakeClock()
    lockouts = [make(clock, threshold) for _ in range(replicas)]
    reserved = [sum(lockout.begin(ALICE, replicas) == 0 for _ in range(200)) for lockout in lockouts]
    assert reserved == [LockoutPolicy(threshold).share(replicas)] * replicas
    assert sum(reserved) < threshold + replicas
    for lockout, count in zip(lockouts, reserved, strict=True):
        locks = [lockout.failed(ALICE, "User:alice", f"192.0.2.{n}", replicas) for n in range(count)]
        assert locks[-1] is not None and all(lock is None for lock in locks[:-1])
        assert lockout.begin(ALICE, replicas) == DURATION  # locked now, by this replica itself


def test_reaching_the_share_locks_at_once_and_asks_to_share(clock: FakeClock) -> None:
    lockout = make(clock)
    assert [fail(lockout, 2) for _ in range(4)] == [None] * 4
    lock = fail(lockout, 2)
    assert lock is not None
    assert (lock.key, lock.account, lock.failures, lock.duration_ms, lock.locked_at_ms) == (  # type: ignore[attr-defined]
        ALICE,
        "User:alice",
        5,
        DURATION,
        clock.now,
    )
    assert lockout.own_lock_ms(ALICE) == DURATION
    assert lockout.own_lock_ms(account_key("User:bob")) == 0
    clock.advance(DURATION)
    assert lockout.own_lock_ms(ALICE) == 0
    assert lockout.begin(ALICE, 2) == 0


def test_a_shared_lock_replaces_the_replicas_own(clock: FakeClock) -> None:
    lockout = make(clock, threshold=1)
    assert fail(lockout) is not None
    lockout.shared(ALICE)
    assert lockout.own_lock_ms(ALICE) == 0  # the store decides now


def test_a_window_without_failures_resets_the_count(clock: FakeClock) -> None:
    lockout = make(clock, threshold=3)
    fail(lockout)
    fail(lockout)
    clock.advance(WINDOW)
    assert lockout.failures(ALICE) == 0
    assert fail(lockout) is None
    assert fail(lockout) is None
    assert fail(lockout) is not None


def test_a_success_forgives_only_its_own_addresses_failures(clock: FakeClock) -> None:
    """The victim logging in between an attacker's guesses does not reset the attacker's count."""
    lockout = make(clock, threshold=5)
    fail(lockout, address=HOME)  # the user's own typo
    for _ in range(3):
        fail(lockout, address=ATTACKER)
    assert lockout.begin(ALICE, 1) == 0
    lockout.succeeded(ALICE, HOME)
    assert lockout.failures(ALICE) == 3
    assert fail(lockout, address=ATTACKER) is None
    assert fail(lockout, address=ATTACKER) is not None  # the attacker's fifth: locked


def test_a_login_answered_without_a_check_forgives_as_a_success_and_settles_no_reservation(clock: FakeClock) -> None:
    """``forgive`` (the verified-password cache knew the password): the address's typos go, the other addresses'
    failures stay, and a check reserved meanwhile, a guess under way, stays reserved: settling it here would let
    one more guess than the share be checked."""
    lockout = make(clock, threshold=3)
    fail(lockout, address=HOME)
    fail(lockout, address=ATTACKER)
    lockout.forgive(ALICE, HOME)
    assert lockout.failures(ALICE) == 1

    one_guess = make(clock, threshold=1)
    assert one_guess.begin(ALICE, 1) == 0  # the attacker's guess, being checked
    one_guess.forgive(ALICE, HOME)
    assert one_guess.begin(ALICE, 1) > 0  # the guess under way still holds the whole share
    assert one_guess.failed(ALICE, "User:alice", ATTACKER, 1) is not None
    one_guess.forgive(ALICE, HOME)  # a known password lifts no lock
    assert one_guess.begin(ALICE, 1) == DURATION


def test_forgiving_an_account_without_failures_keeps_nothing(clock: FakeClock) -> None:
    """Logins the cache answers, from any number of names and addresses, leave no state behind."""
    lockout = make(clock)
    for n in range(100):
        lockout.forgive(account_key(f"User:user-{n}"), f"192.0.2.{n + 1}")
    assert len(lockout) == 0


def test_an_ipv6_hosts_addresses_are_one(clock: FakeClock) -> None:
    lockout = make(clock, threshold=5)
    fail(lockout, address="2001:db8::1")
    assert lockout.begin(ALICE, 1) == 0
    lockout.succeeded(ALICE, "2001:db8::2")  # the same /64
    assert lockout.failures(ALICE) == 0


def test_an_abandoned_check_gives_its_reservation_back(clock: FakeClock) -> None:
    lockout = make(clock, threshold=1)
    assert lockout.begin(ALICE, 1) == 0
    assert lockout.begin(ALICE, 1) > 0  # the share is reserved
    lockout.abandoned(ALICE)
    assert lockout.begin(ALICE, 1) == 0
    assert len(lockout) == 1
    lockout.abandoned(ALICE)
    assert len(lockout) == 0  # nothing left to remember


def test_released_forgets_the_count_and_the_lock(clock: FakeClock) -> None:
    lockout = make(clock, threshold=2)
    fail(lockout)
    fail(lockout)
    assert lockout.own_lock_ms(ALICE) > 0
    lockout.released(ALICE)
    assert lockout.own_lock_ms(ALICE) == 0
    assert fail(lockout) is None


def test_names_sharing_a_long_prefix_have_keys_of_their_own() -> None:
    prefix = "User:" + "x" * 251
    keys = {account_key(prefix + suffix) for suffix in ("a", "b", "")}
    assert len(keys) == 3
    assert {len(key) for key in keys} == {40}
    assert len(account_key("User:\ud800\x00")) == 40  # any text


def test_memory_is_bounded(clock: FakeClock) -> None:
    lockout = make(clock)
    for n in range(1_000):
        fail(lockout, key=account_key(f"User:u{n}"))
    assert len(lockout) == 100


def test_a_count_near_its_share_outlives_a_spray_of_fresh_names(clock: FakeClock) -> None:
    """Evicting a count resets it: the lowest counts go first, so spraying names evicts the spray's own."""
    lockout = make(clock, threshold=5, max_keys=10)
    for _ in range(4):
        fail(lockout)
    for n in range(1_000):
        fail(lockout, key=account_key(f"User:spray-{n}"))
    assert lockout.failures(ALICE) == 4
    assert fail(lockout) is not None


def test_counts_past_their_window_are_evicted_first(clock: FakeClock) -> None:
    lockout = make(clock, threshold=5, max_keys=2)
    for _ in range(4):
        fail(lockout)
    clock.advance(WINDOW)
    bob, carol = account_key("User:bob"), account_key("User:carol")
    fail(lockout, key=bob)
    fail(lockout, key=carol)
    assert (lockout.failures(bob), lockout.failures(carol)) == (1, 1)


@pytest.mark.parametrize("field", ["threshold", "window_ms", "duration_ms", "max_keys"])
def test_the_policy_refuses_zero(field: str) -> None:
    with pytest.raises(ValueError):
        LockoutPolicy(**{field: 0})


def test_exempt_addresses_are_addresses_and_networks() -> None:
    exempt = ExemptAddresses.parse("127.0.0.1, ::1, 198.51.100.0/24")
    assert "127.0.0.1" in exempt
    assert "::1" in exempt
    assert "::ffff:127.0.0.1" in exempt  # IPv4-mapped
    assert "198.51.100.3" in exempt
    assert "127.0.0.2" not in exempt
    assert "testclient" not in exempt
    assert not ExemptAddresses.parse("")
    with pytest.raises(ValueError, match="'localhost' is not an IP address"):
        ExemptAddresses.parse("127.0.0.1,localhost")
