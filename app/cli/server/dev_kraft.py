"""``kts dev --kraft``: the local stack on a Kafka 4.x KRaft broker (``kafka_broker/dev_kraft.py``) instead of
ZooKeeper: kts on its ``bootstrap.servers``, logged in as its own principal ``User:kts``, with the stack's
``admin`` among its super users."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from app.backends import check_cluster
from app.cli.server.dev_admin import banner_password_line, print_banner, with_admin
from app.cli.server.kafka_broker.dev_broker import banner
from app.cli.server.kafka_broker.dev_kraft import KraftDevStack, start_kraft_dev_broker
from app.cli.server.serve import serve
from app.settings import load_settings


def dev_kraft(
    data_dir: Path, config_file: Path | None, overrides: dict[str, object], kafka_port: int, console: Console
) -> int:
    secret = load_settings(config_file, **overrides, bootstrap_servers=f"127.0.0.1:{kafka_port}").secret_key
    stack: KraftDevStack | None = None
    try:
        stack = start_kraft_dev_broker(data_dir, secret, kafka_port, console.print)
        cluster = overrides | stack.kts_settings()
        settings = with_admin(load_settings(config_file, **cluster), config_file, cluster)
        check_cluster(settings)  # the secret kept in the data dir against the controller's, before the banner
        console.print(f"[bold]kts dev[/bold] on [link]{settings.http_listeners}[/link]  (data in {data_dir})")
        console.print(f"  Kafka cluster: {settings.bootstrap_servers} (KRaft; kts logs in as User:{stack.kts.name})")
        console.print(banner_password_line(stack.admin_password, stack.generated))
        print_banner(console, banner(stack.broker, settings.http_listeners, data_dir))
        return serve(settings, default_log_format="text")
    finally:
        if stack is not None:
            stack.broker.stop()
