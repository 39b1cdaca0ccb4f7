"""What a refused HTTP Basic login costs, for a user who exists and for one who does not. Prints JSON.

    python -m bench.login_timing [--rounds 200]

The check runs in process against an in-memory user store (no ZooKeeper, no HTTP), so the figures are the
PBKDF2 work of app/auth/basic.py alone. The two kinds of login alternate, so drift on a shared machine
affects both alike; ``unknown_over_known`` near 1 means the duration does not tell whether a user exists.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from app.auth.basic import BasicAuthenticator, StoredKeyCredentials
from app.domain.clock import SystemClock
from app.domain.credentials import MIN_ITERATIONS, Mechanism, ScramCredential
from app.domain.scram import derive


class _Users:
    def __init__(self, users: dict[str, dict[Mechanism, ScramCredential]]) -> None:
        self._users = users

    def credentials(self, user_name: str) -> dict[Mechanism, ScramCredential]:
        return dict(self._users.get(user_name, {}))


def _ms(authenticator: BasicAuthenticator, user: str) -> float:
    started = time.perf_counter()
    if authenticator.authenticate(user, "a-wrong-password"):
        raise SystemExit("a wrong password was accepted")
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=200)
    rounds = parser.parse_args().rounds
    credential = derive(Mechanism.SCRAM_SHA_512, "the-password", MIN_ITERATIONS)
    authenticator = BasicAuthenticator(
        StoredKeyCredentials(_Users({"alice": {Mechanism.SCRAM_SHA_512: credential}})), SystemClock()
    )
    known: list[float] = []
    unknown: list[float] = []
    for _ in range(rounds):
        known.append(_ms(authenticator, "alice"))
        unknown.append(_ms(authenticator, "nobody"))
    known_ms, unknown_ms = statistics.median(known), statistics.median(unknown)
    print(
        json.dumps(
            {
                "rounds": rounds,
                "known_user_wrong_password_ms_p50": round(known_ms, 3),
                "unknown_user_ms_p50": round(unknown_ms, 3),
                "unknown_over_known": round(unknown_ms / known_ms, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
