"""``kts cluster prepare-migration``: run before the KRaft controller is started, where the server's configuration is
(``--config`` and the ``KTS_*`` environment, as ``kts serve`` reads them), it makes the principal of
``admin.sasl.jaas.config`` (kts's login on bootstrap.servers) a renewer of every live token of the ZooKeeper-mode
cluster, so that kts on bootstrap.servers renews and expires them after the switch (app/service/migration_prep.py).
Each change goes through kts's normal write path: with its change notification, audited as ``token.renewer.add``
with the operating-system user who ran it, refused once a KRaft controller has claimed the cluster.

Exit codes as every command's (app/cli/main.py): 0 done, 1 the cluster refused or could not be reached, 2 bad usage
or configuration.
"""

from __future__ import annotations

import argparse
import sys

from app.cli.lockout import _operator


def run(args: argparse.Namespace) -> int:
    from app.backends import with_cluster_writes
    from app.domain.errors import KtsError
    from app.settings import load_settings

    settings = load_settings(args.config)
    if settings.backend != "zookeeper":
        args.usage.error(
            "prepare-migration runs with kts's ZooKeeper-mode configuration (zookeeper.connect), before the migration"
        )
    try:
        principal = settings.kafka_login_principal
    except ValueError as exc:
        args.usage.error(str(exc))
    if principal is None:
        args.usage.error("set admin.sasl.jaas.config (kts's login on bootstrap.servers after the switch) first")
        return 2  # not reached: error() exits
    operator = _operator()
    renewer = principal
    try:
        done = with_cluster_writes(settings, lambda prep: prep.add_renewer(renewer, operator=operator))
    except KtsError as exc:
        print(f"kts: {exc.message}", file=sys.stderr)
        return 1
    print(
        f"{done.principal} added to the renewers of {done.added} live tokens ({done.already} had it already, "
        f"{done.gone} expired or deleted meanwhile); audited as token.renewer.add"
    )
    return 0
