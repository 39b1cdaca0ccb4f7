"""``kts dev``'s super user: its name, where its password comes from, and the banner's line about it (both
stacks: kts writes it to ZooKeeper, or it is formatted into a KRaft broker's storage)."""

from __future__ import annotations

import os
import secrets
from enum import Enum
from pathlib import Path

from rich.console import Console

from app.domain.credentials import MIN_ITERATIONS, Mechanism
from app.domain.scram import derive, password_matches
from app.settings import Settings, load_settings
from app.storage.zk.assembly import zk_connection
from app.storage.zk.user_store import ZkUserStore

ADMIN_USER = "admin"
ADMIN_PASSWORD_ENV = "KTS_ADMIN_PASSWORD"


class AdminPassword(Enum):
    """What start-up did to the admin's password, so the banner says exactly that."""

    GENERATED = "generated"  # none existed and KTS_ADMIN_PASSWORD is unset: a new one, printed once
    SET = "set"  # none existed: KTS_ADMIN_PASSWORD's
    RESET = "reset"  # the admin had another one: replaced by KTS_ADMIN_PASSWORD's
    SAME = "same"  # the admin's password already is KTS_ADMIN_PASSWORD's: nothing written
    KEPT = "kept"  # KTS_ADMIN_PASSWORD is unset and the admin has a password: left alone


def known_password(done: AdminPassword, generated: str | None) -> str | None:
    """The admin's password when start-up knows it (for the admin's client properties), else None."""
    if done is AdminPassword.GENERATED:
        return generated
    if done is AdminPassword.KEPT:
        return None
    return os.environ.get(ADMIN_PASSWORD_ENV)


def banner_password_line(done: AdminPassword, generated: str | None) -> str:
    """The banner's line about the admin's password: true whatever the data dir and the environment held."""
    if done is AdminPassword.GENERATED:
        return f"  super user: {ADMIN_USER}  password: [bold]{generated}[/bold]  (shown only now)"
    if done is AdminPassword.SET:
        return f"  super user: {ADMIN_USER}  password: {ADMIN_PASSWORD_ENV}'s (set now)"
    if done is AdminPassword.RESET:
        return f"  super user: {ADMIN_USER}  password: {ADMIN_PASSWORD_ENV}'s (it replaced the one {ADMIN_USER} had)"
    if done is AdminPassword.SAME:
        return f"  super user: {ADMIN_USER}  password: {ADMIN_PASSWORD_ENV}'s (unchanged)"
    return f"  super user: {ADMIN_USER}  password: unchanged, not shown again (set {ADMIN_PASSWORD_ENV} to reset it)"


def ensure_zookeeper_admin(settings: Settings) -> tuple[AdminPassword, str | None]:
    """Give the admin its credentials; returns what was done, and the password when it was generated."""
    outcome: list[tuple[AdminPassword, str | None]] = []

    def give(users: ZkUserStore) -> None:
        existing = users.credentials(ADMIN_USER)
        password = os.environ.get(ADMIN_PASSWORD_ENV)
        if not password:
            if existing:
                outcome.append((AdminPassword.KEPT, None))
                return
            password = secrets.token_urlsafe(18)
            outcome.append((AdminPassword.GENERATED, password))
        elif set(existing) == set(Mechanism) and all(
            password_matches(mechanism, credential, password) for mechanism, credential in existing.items()
        ):
            outcome.append((AdminPassword.SAME, None))
            return
        else:
            outcome.append((AdminPassword.RESET if existing else AdminPassword.SET, None))
        for mechanism in Mechanism:
            users.put_credential(ADMIN_USER, mechanism, derive(mechanism, password, MIN_ITERATIONS))

    zk = zk_connection(settings)
    # check(): connect, run, disconnect, with kazoo's own log lines held back (logging is not configured yet,
    # and "Connection dropped" on stderr before the banner reads like a failure).
    zk.check(then=lambda: give(ZkUserStore(zk)))
    return outcome[0]


def with_admin(base: Settings, config_file: Path | None, overrides: dict[str, object]) -> Settings:
    """The settings with the stack's admin among kts's super users."""
    super_users = ";".join(filter(None, (base.super_users, f"User:{ADMIN_USER}")))
    return load_settings(config_file, **overrides, super_users=super_users)


def print_banner(console: Console, lines: list[str]) -> None:
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)  # copied as it is: no wrapping
