"""``kts sidecar``: its options, and the process around the renewal loop (logging, signals, the client).

Cheap to import: the loop, the HTTP client and the file writer are imported when the command runs.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from app.cli.client.arguments import add_connection_options, milliseconds, principal
from app.cli.sidecar.schedule import DEFAULT_GRACE_MS
from app.cli.sidecar.token_file import (
    SASL_MECHANISMS,
    SECURITY_PROTOCOLS,
    ClientFileFormat,
    TokenCredentials,
    TokenFile,
)

if TYPE_CHECKING:
    from app.cli.client.command_config import CommandConfig

log = logging.getLogger("kts.sidecar")
DEFAULT_CHECK_LOGIN_TIMEOUT_MS = 60_000


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "sidecar",
        help="keep a Kafka client's delegation token file fresh (create, renew, replace)",
        description="Create a delegation token, write it for a Kafka client, and keep it renewed and replaced.",
    )
    parser.add_argument("--output-file", type=Path, required=True, metavar="PATH", help="the file to keep (mode 0600)")
    parser.add_argument(
        "--format",
        choices=[file_format.value for file_format in ClientFileFormat],
        default=ClientFileFormat.PROPERTIES.value,
        help="properties (Kafka client settings), jaas (a KafkaClient section) or json (default: properties)",
    )
    parser.add_argument(
        "--owner-principal", type=principal, metavar="PRINCIPAL", help="tokens for this user (needs CreateTokens)"
    )
    parser.add_argument(
        "--renewer-principal", action="append", type=principal, default=[], metavar="PRINCIPAL", help="repeatable"
    )
    parser.add_argument(
        "--max-life-time-period", type=milliseconds, default=-1, metavar="MS", help="-1: the server's (default)"
    )
    parser.add_argument(
        "--security-protocol", choices=SECURITY_PROTOCOLS, default="SASL_SSL", help="properties format, --check-login"
    )
    parser.add_argument(
        "--sasl-mechanism", choices=SASL_MECHANISMS, default="SCRAM-SHA-512", help="properties format, --check-login"
    )
    parser.add_argument(
        "--jwt-file",
        type=Path,
        metavar="PATH",
        help="log in with the workload JWT in this file (a projected service-account token), read again when it "
        "changes; --command-config then holds no login (only ssl.* settings)",
    )
    parser.add_argument(
        "--check-login",
        metavar="BOOTSTRAP_SERVERS",
        help="before writing a new token, log in with it to these brokers (host:port,...) as the Kafka client will "
        "(--security-protocol, --sasl-mechanism; TLS trust from the --command-config ssl.* keys) until one accepts "
        "it, so that a workload never starts with a token the brokers do not know yet",
    )
    parser.add_argument(
        "--check-login-timeout",
        type=milliseconds,
        default=DEFAULT_CHECK_LOGIN_TIMEOUT_MS,
        metavar="MS",
        help="how long --check-login waits for a broker to accept a token, then fails "
        f"(default: {DEFAULT_CHECK_LOGIN_TIMEOUT_MS})",
    )
    parser.add_argument("--expire-on-exit", action="store_true", help="expire the token when stopped")
    parser.add_argument(
        "--replace-grace-period",
        type=milliseconds,
        default=DEFAULT_GRACE_MS,
        metavar="MS",
        help=f"how long a replaced token stays valid (default: {DEFAULT_GRACE_MS})",
    )
    add_connection_options(parser)
    parser.set_defaults(handler=run, usage=parser)


def run(args: argparse.Namespace) -> int:
    if not args.output_file.parent.is_dir():
        args.usage.error(f"--output-file: directory {args.output_file.parent} does not exist")
    if args.replace_grace_period < 0:
        args.usage.error("--replace-grace-period must not be negative")
    if args.jwt_file is not None and not args.jwt_file.is_file():
        args.usage.error(f"--jwt-file: {args.jwt_file} is not a readable file")
    if args.check_login_timeout <= 0:
        args.usage.error("--check-login-timeout must be positive")
    from app.cli.client.connection import load_config, open_client
    from app.cli.client.jwt_file import JwtFileAuth
    from app.cli.sidecar.loop import LoopOptions, RenewalLoop, Stopped

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s kts sidecar: %(message)s", stream=sys.stderr
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per action, ours
    logging.getLogger("httpcore").setLevel(logging.WARNING)
    token_file = TokenFile(
        args.output_file,
        ClientFileFormat(args.format),
        security_protocol=args.security_protocol,
        sasl_mechanism=args.sasl_mechanism,
    )
    options = LoopOptions(
        owner=args.owner_principal,
        renewers=tuple(dict.fromkeys(args.renewer_principal)),
        max_lifetime_ms=args.max_life_time_period,
        expire_on_exit=args.expire_on_exit,
        grace_ms=args.replace_grace_period,
    )
    stop = threading.Event()

    def request_stop(signum: int, _: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}

    def pause(seconds: float) -> None:
        if stop.wait(seconds):
            raise Stopped

    try:
        config = load_config(args)
        publish: Callable[[TokenCredentials], None] = token_file.publish
        if args.check_login:
            publish = _checked_publish(args, config, publish, pause)
        jwt_auth = None if args.jwt_file is None else JwtFileAuth(args.jwt_file)
        self_principal = config.user_principal
        if jwt_auth is not None:
            if config.credential is not None:
                args.usage.error("--jwt-file: the --command-config file must not hold a login as well")
            subject = jwt_auth.subject()
            self_principal = f"User:{subject}" if subject else None
        with open_client(args, config, auth=jwt_auth) as client:
            log.info(
                "starting: server %s, file %s (%s)%s",
                client.server,
                token_file.path,
                token_file.file_format,
                f", tokens for {options.owner}" if options.owner else "",
            )
            if jwt_auth is not None:
                log.info("logging in with the JWT in %s, read again whenever it changes", jwt_auth.path)
            if args.check_login:
                log.info("publishing a new token only once a broker (%s) accepts it", args.check_login)
            loop = RenewalLoop(client, publish, options, stop=stop, self_principal=self_principal)
            return loop.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _checked_publish(
    args: argparse.Namespace,
    config: CommandConfig,
    publish: Callable[[TokenCredentials], None],
    pause: Callable[[float], None],
) -> Callable[[TokenCredentials], None]:
    """``publish`` behind --check-login: the brokers, and how the file's client logs in to them."""
    from app.cli.client.kafka_login import BrokerLogin
    from app.cli.sidecar.broker_check import BrokerLoginCheck, checked

    servers = tuple(server.strip() for server in args.check_login.split(",") if server.strip())
    try:
        target = BrokerLogin(
            servers,
            args.security_protocol,
            args.sasl_mechanism,
            config.ssl_context() if args.security_protocol == "SASL_SSL" else None,
        )
    except ValueError as exc:
        args.usage.error(f"--check-login: {exc}")
    return checked(BrokerLoginCheck(target, args.check_login_timeout / 1000, sleep=pause), publish)
