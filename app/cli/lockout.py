"""``kts lockout release NAME`` and ``kts lockout list``: the operators' way in while an account is locked, run
where the server's own configuration is (a shell in the pod, or on the host). They read the same properties file
(``--config``) and ``KTS_*`` environment as ``kts serve`` and go straight to the store the replicas share their
locks in and to the audit database (app/service/break_glass.py): no HTTP login, so nothing a client sends can
refuse or jam them. A release is audited as ``lockout.release`` with the operating-system user who ran it.

Exit codes as every command's (app/cli/main.py): 0 done, 1 a store could not be reached, 2 bad usage or
configuration.
"""

from __future__ import annotations

import argparse
import datetime
import getpass
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.domain.lockout import LockInForce

UNNAMED = "(name not recorded)"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "lockout",
        help="release or list account locks, from where the server's configuration is (break glass)",
        description=(
            "Release or list the accounts locked after too many failed logins, straight in the cluster's store and "
            "the audit database, with the configuration of kts serve (--config and the KTS_* environment): no "
            "HTTP login needed. Run it in the pod (kubectl exec) or on the host."
        ),
    )
    actions = parser.add_subparsers(dest="lockout_action", required=True)
    release = actions.add_parser(
        "release", help="unlock an account on every replica (audited as lockout.release with your OS user)"
    )
    release.add_argument("name", help="the user name, as it logs in (admin for User:admin)")
    listing = actions.add_parser("list", help="the locked accounts and until when")
    for each in (release, listing):
        each.add_argument("--config", type=Path, metavar="FILE", help="the properties file of kts serve")
    release.set_defaults(handler=run_release, usage=release)
    listing.set_defaults(handler=run_list, usage=listing)


def run_release(args: argparse.Namespace) -> int:
    from app.backends import with_break_glass
    from app.settings import load_settings

    if not args.name:
        args.usage.error("the user name must not be empty")
    settings = load_settings(args.config)
    operator = _operator()
    released = with_break_glass(settings, lambda locks: locks.release(args.name, operator=operator))
    state = "was locked" if released.was_locked else "had no shared lock"
    print(f"released {_shown(released.account)} on every replica ({state}); audited as lockout.release")
    return 0


def run_list(args: argparse.Namespace) -> int:
    from app.backends import with_break_glass
    from app.settings import load_settings

    found = with_break_glass(load_settings(args.config), lambda locks: locks.locks())
    if not found:
        print("no account is locked")
    for lock in found:
        print(_line(lock))
    return 0


def _line(lock: LockInForce) -> str:
    now = datetime.datetime.now(datetime.UTC)
    until = (now + datetime.timedelta(milliseconds=lock.remaining_ms)).isoformat(timespec="seconds")
    name = UNNAMED + f" key {lock.key}" if lock.account is None else _shown(lock.account)
    return f"{name}\tuntil {until.replace('+00:00', 'Z')} ({-(-lock.remaining_ms // 1000)} s)"


def _shown(account: str) -> str:
    """An account name as typed by anyone: control characters escaped, never sent to the terminal raw."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in account)


def _operator() -> str:
    """The operating-system user running the command (the audit's who, since no HTTP login names one)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for the uid (a container's arbitrary user)
        return f"uid {os.getuid()}"
