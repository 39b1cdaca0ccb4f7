"""The login guard with the account lockout, over in-memory ports: many guesses arriving at once get at most the
replica's share checked (one check per account at a time, each counted before the next); parallel logins with
the same password share one verdict; a password the verified-password cache holds skips the queue but lets no
guess past the count; a wait is bounded; an exempt address exempts super users' accounts alone from the lock, and
throttles their guesses per (account, address) all the same; a lock that could not be shared says so, in its audit
event and in the unlock's answer."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from app.domain.acl import AclAuthorizer
from app.domain.audit import Action, AuditEvent, Outcome
from app.domain.authorization import Caller
from app.domain.errors import AccountLocked, NotAuthenticated, StoreUnavailable, TooManyAttempts
from app.domain.lockout import AccountLockout, ExemptAddresses, LockoutPolicy, account_key
from app.domain.principal import KafkaPrincipal
from app.domain.throttle import FailureThrottle, ThrottlePolicy
from app.service.attempts import AttemptGuard, PasswordLogin
from app.service.audit import Auditor
from app.service.lockout import AccountLocks, Unlocked
from tests.unit.fakes import FakeAclStore, FakeAclView, FakeAuditLog, FakeClock, FakeIntentStore, FakeLockoutStore

ALICE = "User:alice"
ADMIN = "User:admin"
PASSWORD = "alice-pw"
MAX_FAILURES = 10  # the throttle's per-(account, address) limit (auth.failures.max)
THRESHOLD = 10
DURATION = 900_000
LOOPBACK = "127.0.0.1"


class Setup:
    def __init__(self, *, replicas: int = 2, wait_s: float = 30.0) -> None:
        self.clock = FakeClock()
        self.log = FakeAuditLog()
        self.store = FakeLockoutStore(self.clock, replicas=replicas)
        auditor = Auditor(self.log, FakeIntentStore())
        self.rule = AccountLockout(LockoutPolicy(THRESHOLD, 900_000, DURATION, 1_000), self.clock)
        self.locks = AccountLocks(
            self.rule,
            self.store,
            auditor=auditor,
            authorizer=AclAuthorizer([KafkaPrincipal.user("admin")], FakeAclView(FakeAclStore()).snapshot),
            exempt=ExemptAddresses.parse("127.0.0.1,::1"),
        )
        throttle = FailureThrottle(ThrottlePolicy(MAX_FAILURES, 1_000, 60_000, 1_000), self.clock)
        self.guard = AttemptGuard(throttle, auditor, Action.AUTHENTICATION, lockout=self.locks, wait_s=wait_s)
        self.checks: list[str] = []
        self.running = 0
        self.most_running = 0
        self.verified: set[str] = set()  # the verified-password cache: passwords a check accepted
        self.recalled = 0
        self._lock = threading.Lock()

    def check(self, password: str, hold: threading.Event | None = None) -> Callable[[], str]:
        def run() -> str:
            with self._lock:
                self.checks.append(password)
                self.running += 1
                self.most_running = max(self.most_running, self.running)
            try:
                if hold is not None:
                    assert hold.wait(30)
                if password != PASSWORD:
                    raise NotAuthenticated("Invalid user name or password.")
                with self._lock:
                    self.verified.add(password)
                return "in"
            finally:
                with self._lock:
                    self.running -= 1

        return run

    def recall(self, password: str) -> Callable[[], str | None]:
        """As the verified-password cache: answers a password a check accepted, checks none."""

        def run() -> str | None:
            with self._lock:
                if password not in self.verified:
                    return None
                self.recalled += 1
                return "in"

        return run

    def login(self, address: str, password: str, hold: threading.Event | None = None, *, account: str = ALICE) -> str:
        return self.guard.attempt(
            address,
            account,
            lambda reason: _denied(reason),
            self.check(password, hold),
            password=PasswordLogin(account, password),
            recall=self.recall(password),
        )

    def events(self, action: Action) -> list[AuditEvent]:
        return [event for event in self.log.events() if event.action is action]


def _denied(reason: str) -> AuditEvent:
    return AuditEvent(Action.AUTHENTICATION, Outcome.DENIED, principal=ALICE, details={"reason": reason})


def together(attempts: list[Callable[[], object]], first_check_waits_for: threading.Event) -> list[object]:
    """Run the attempts in threads at once; the first check holds until every thread has started."""
    results: list[object] = [None] * len(attempts)
    started = threading.Semaphore(0)

    def run(n: int) -> None:
        started.release()
        try:
            results[n] = attempts[n]()
        except Exception as exc:  # the answer, as the HTTP layer would map it
            results[n] = exc

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(attempts))]
    for thread in threads:
        thread.start()
    for _ in threads:
        assert started.acquire(timeout=30)
    first_check_waits_for.set()
    for thread in threads:
        thread.join(30)
    return results


def test_guesses_arriving_at_once_get_the_share_checked_one_at_a_time() -> None:
    setup = Setup(replicas=2)
    hold = threading.Event()
    attempts = [lambda n=n: setup.login(f"192.0.2.{n % 250 + 1}", f"guess-{n}", hold) for n in range(100)]
    results = together(attempts, hold)
    share = LockoutPolicy(THRESHOLD).share(2)
    assert len(setup.checks) == share  # then the account is locked: no further guess is checked
    assert setup.most_running == 1
    assert sum(isinstance(r, NotAuthenticated) for r in results) == share
    assert sum(isinstance(r, AccountLocked) for r in results) == 100 - share
    print(f"guesses sent: 100, checked on this replica: {len(setup.checks)}, its share: {share}")
    (lock,) = setup.events(Action.ACCOUNT_LOCK)
    assert lock.details == {
        "failures": share,
        "threshold": THRESHOLD,
        "replicas": 2,
        "durationMs": DURATION,
        "shared": True,
    }


def test_the_right_password_among_guesses_is_refused_once_the_share_is_checked() -> None:
    setup = Setup(replicas=2)
    for n in range(5):
        with pytest.raises(NotAuthenticated):
            setup.login(f"192.0.2.{n + 1}", f"guess-{n}")
    with pytest.raises(AccountLocked):
        setup.login("198.51.100.7", PASSWORD)
    assert len(setup.checks) == 5


def test_parallel_logins_with_one_password_share_a_verdict() -> None:
    """A service's parallel logins all pass; the same wrong password sent at once is counted once."""
    setup = Setup(replicas=1)
    hold = threading.Event()
    results = together([lambda: setup.login("198.51.100.7", PASSWORD, hold) for _ in range(30)], hold)
    assert results == ["in"] * 30

    setup.checks.clear()
    hold = threading.Event()
    results = together([lambda: setup.login("198.51.100.7", "typo", hold) for _ in range(30)], hold)
    assert all(isinstance(r, NotAuthenticated) for r in results)
    assert setup.checks.count("typo") < THRESHOLD  # most reused the first verdict
    assert setup.locks.wait_ms(account_key(ALICE)) == 0  # not locked by one typo sent thirty times
    assert setup.events(Action.ACCOUNT_LOCK) == []


def test_a_wait_for_another_check_is_bounded() -> None:
    setup = Setup(replicas=1, wait_s=0.05)
    hold = threading.Event()
    first = threading.Thread(target=lambda: setup.login("198.51.100.7", PASSWORD, hold))
    first.start()
    while not setup.checks:  # the first check is running (and held)
        threading.Event().wait(0.01)
    with pytest.raises(TooManyAttempts) as refused:
        setup.login("192.0.2.9", "guess")
    assert not isinstance(refused.value, AccountLocked)
    assert refused.value.retry_after_s == 1
    hold.set()
    first.join(30)
    assert setup.checks == [PASSWORD]


def test_victim_logins_between_guesses_do_not_save_the_attacker() -> None:
    setup = Setup(replicas=1)
    checked = 0
    victim_in = 0
    for round_ in range(10):
        try:
            victim_in += setup.login("198.51.100.7", PASSWORD) == "in"
        except AccountLocked:
            pass
        for n in range(4):
            try:
                setup.login(f"192.0.2.{round_ * 4 + n + 1}", f"guess-{round_}-{n}")
                checked += 1
            except NotAuthenticated:
                checked += 1
            except AccountLocked:
                pass
    assert checked == THRESHOLD
    assert victim_in == 3  # until the attacker's tenth failure locked the account
    assert len(setup.events(Action.ACCOUNT_LOCK)) == 1


def test_a_known_password_skips_the_queue_behind_a_guess_being_checked() -> None:
    """The verified-password cache answers it (recall): it waits for no check, and no check of it runs."""
    setup = Setup(replicas=1, wait_s=0.05)  # waiting for the guess's check would be refused (429)
    assert setup.login("203.0.113.5", PASSWORD) == "in"  # checked once: known from now on
    hold = threading.Event()
    refused: list[Exception] = []

    def guessing() -> None:
        try:
            setup.login("192.0.2.9", "guess", hold)
        except NotAuthenticated as exc:
            refused.append(exc)

    guess = threading.Thread(target=guessing)
    guess.start()
    while "guess" not in setup.checks:  # the guess is being checked (and held): it has the account's turn
        threading.Event().wait(0.01)
    assert setup.login("198.51.100.7", PASSWORD) == "in"
    with pytest.raises(TooManyAttempts):  # another password still waits for the guess's verdict
        setup.login("192.0.2.10", "second guess")
    hold.set()
    guess.join(30)
    assert len(refused) == 1
    assert setup.checks == [PASSWORD, "guess"]
    assert setup.recalled == 1


def test_guesses_sent_with_the_known_password_are_still_counted_one_at_a_time() -> None:
    """The attack: a hundred guesses at once, among the victim's own logins that the cache answers. Every guess
    still waits its turn and is counted before the next runs; the share locks the account, and then the known
    password is refused too, by the lock, before the cache is asked."""
    setup = Setup(replicas=2)
    assert setup.login("203.0.113.5", PASSWORD) == "in"
    setup.checks.clear()
    hold = threading.Event()
    guesses = [lambda n=n: setup.login(f"192.0.2.{n % 250 + 1}", f"guess-{n}", hold) for n in range(100)]
    victim = [lambda: setup.login("198.51.100.7", PASSWORD) for _ in range(20)]
    results = together([x for pair in zip(guesses[:20], victim, strict=True) for x in pair] + guesses[20:], hold)
    share = LockoutPolicy(THRESHOLD).share(2)
    assert all(password.startswith("guess-") for password in setup.checks)
    assert len(setup.checks) == share  # the known password checked nothing, let no guess past the count
    assert setup.most_running == 1
    assert sum(isinstance(r, NotAuthenticated) for r in results) == share
    assert all(r == "in" or isinstance(r, AccountLocked) for r in results[1:40:2])  # the victim's
    recalled = setup.recalled
    with pytest.raises(AccountLocked):
        setup.login("198.51.100.7", PASSWORD)
    assert setup.recalled == recalled  # the lock answered before the cache was asked
    assert len(setup.events(Action.ACCOUNT_LOCK)) == 1


def test_a_password_the_cache_does_not_hold_takes_its_counted_turn() -> None:
    """An old password after a change (the change changes the cache's key: here, the cache forgets it) is
    checked in the gate and counted as a failure each time, up to the lock."""
    setup = Setup(replicas=1)
    assert setup.login("198.51.100.7", PASSWORD) == "in"
    setup.verified.clear()
    setup.checks.clear()
    for n in range(THRESHOLD):
        with pytest.raises(NotAuthenticated):
            setup.login(f"192.0.2.{n + 1}", "old-password")
    with pytest.raises(AccountLocked):
        setup.login("198.51.100.7", "old-password")
    assert setup.checks == ["old-password"] * THRESHOLD
    assert setup.recalled == 0


def test_a_known_password_forgives_its_own_addresss_typos_only() -> None:
    """As a checked success does (app/domain/lockout.py): the victim's services logging in from home, answered by
    the cache, do not reset the count of the attacker's guesses from elsewhere."""
    setup = Setup(replicas=1)
    assert setup.login("203.0.113.5", PASSWORD) == "in"
    for address in ("198.51.100.7", "192.0.2.66"):
        for n in range(3):
            with pytest.raises(NotAuthenticated):
                setup.login(address, f"typo-{n}")
    assert setup.login("198.51.100.7", PASSWORD) == "in"
    assert setup.recalled == 1
    assert setup.rule.failures(account_key(ALICE)) == 3


def test_an_exempt_address_locks_an_ordinary_account_as_anywhere() -> None:
    """Once, from loopback (then exempt for everyone): wrong passwords were never counted, and a locked account's
    right password got in from there."""
    setup = Setup(replicas=1)
    for n in range(THRESHOLD):
        with pytest.raises(NotAuthenticated):
            setup.login(LOOPBACK, f"guess-{n}")
    (lock,) = setup.events(Action.ACCOUNT_LOCK)
    assert lock.principal == ALICE
    for address in (LOOPBACK, "::1", "198.51.100.7"):
        with pytest.raises(AccountLocked):  # the right password too, from the exempt addresses too
            setup.login(address, PASSWORD)
    assert setup.checks == [f"guess-{n}" for n in range(THRESHOLD)]


def test_a_super_user_from_an_exempt_address_is_not_locked_but_throttled_per_pair() -> None:
    """Once: 60 wrong passwords in a row from an exempt address were all checked (401)."""
    setup = Setup(replicas=1)
    for n in range(THRESHOLD):
        with pytest.raises(NotAuthenticated):
            setup.login(f"192.0.2.{n + 1}", f"guess-{n}", account=ADMIN)
    with pytest.raises(AccountLocked):
        setup.login("198.51.100.7", PASSWORD, account=ADMIN)
    assert setup.login(LOOPBACK, PASSWORD, account=ADMIN) == "in"  # not locked from the exempt address
    setup.checks.clear()
    answers: list[str] = []
    for n in range(60):
        try:
            setup.login(LOOPBACK, f"exempt-guess-{n}", account=ADMIN)
        except NotAuthenticated:
            answers.append("401")
        except TooManyAttempts:
            answers.append("429")
    assert answers == ["401"] * MAX_FAILURES + ["429"] * (60 - MAX_FAILURES)
    assert len(setup.checks) == MAX_FAILURES  # guesses checked from the exempt address
    assert len(setup.events(Action.ACCOUNT_LOCK)) == 1  # its failures locked nothing more
    with pytest.raises(TooManyAttempts):  # the right password waits its turn like any other from there
        setup.login(LOOPBACK, PASSWORD, account=ADMIN)
    assert setup.login("::1", PASSWORD, account=ADMIN) == "in"  # another exempt address has its own pair


@pytest.mark.parametrize(
    ("store_problem", "reason"), [("full", "limit"), ("down", "unavailable")], ids=["bound reached", "store down"]
)
def test_a_lock_that_could_not_be_shared_says_so(store_problem: str, reason: str) -> None:
    setup = Setup(replicas=1)
    if store_problem == "full":
        setup.store.full = True
    else:
        setup.store.fail_with = StoreUnavailable("ZooKeeper is away.")
    for n in range(THRESHOLD):
        with pytest.raises(NotAuthenticated):
            setup.login(f"192.0.2.{n + 1}", f"guess-{n}")
    with pytest.raises(AccountLocked):  # this replica refuses all the same
        setup.login("198.51.100.7", PASSWORD)
    (lock,) = setup.events(Action.ACCOUNT_LOCK)
    assert (lock.details["shared"], lock.details["notSharedBecause"]) == (False, reason)

    setup.store.fail_with = None
    admin = Caller(KafkaPrincipal.user("admin"))
    assert setup.locks.unlock(admin, "alice") == Unlocked(was_locked=True, not_shared=True, every_replica=True)
    assert setup.login("198.51.100.7", PASSWORD) == "in"
    assert setup.store.releases == [account_key(ALICE)]  # every replica forgets its own lock too


def test_an_unlock_that_cannot_reach_the_store_says_so() -> None:
    setup = Setup(replicas=1)
    for n in range(THRESHOLD):
        with pytest.raises(NotAuthenticated):
            setup.login(f"192.0.2.{n + 1}", f"guess-{n}")
    setup.store.fail_with = StoreUnavailable("ZooKeeper is away.")
    admin = Caller(KafkaPrincipal.user("admin"))
    assert setup.locks.unlock(admin, "alice") == Unlocked(was_locked=True, not_shared=False, every_replica=False)
    (event,) = [e for e in setup.events(Action.ACCOUNT_UNLOCK) if e.outcome is Outcome.SUCCEEDED]
    assert event.details == {"reason": "unlocked", "wasLocked": True, "notShared": False, "everyReplica": False}


def test_a_release_seen_from_another_replica_lifts_this_replicas_own_lock() -> None:
    setup = Setup(replicas=1)
    setup.store.full = True
    for n in range(THRESHOLD):
        with pytest.raises(NotAuthenticated):
            setup.login(f"192.0.2.{n + 1}", f"guess-{n}")
    for listener in setup.store.listeners:  # the store saw another replica's release
        listener(account_key(ALICE))
    assert setup.login("198.51.100.7", PASSWORD) == "in"


def test_the_leader_audits_the_ended_locks_it_deletes() -> None:
    setup = Setup(replicas=1)
    for n in range(THRESHOLD):
        with pytest.raises(NotAuthenticated):
            setup.login(f"192.0.2.{n + 1}", f"guess-{n}")
    assert setup.locks.remove_ended() == 0
    setup.clock.advance(DURATION)
    assert setup.locks.remove_ended() == 1
    (event,) = setup.events(Action.ACCOUNT_UNLOCK)
    assert event.details == {"reason": "expired", "locks": 1}
