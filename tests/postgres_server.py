"""A real PostgreSQL 15 server for tests: initdb in a temporary directory owned by ``postgres``, pg_ctl on
a free loopback port (initdb refuses to run as root, so the server runs as the postgres user)."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

from app.cli.server.embedded_zookeeper import free_port

BIN = Path("/usr/lib/postgresql/15/bin")


def installed() -> bool:
    return (BIN / "initdb").is_file()


class PostgresServer:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.data = directory / "data"

    def _as_postgres(self, *command: str) -> None:
        line = " ".join(command)
        if os.geteuid() == 0:
            subprocess.run(["su", "postgres", "-s", "/bin/sh", "-c", line], check=True, capture_output=True)
        else:
            subprocess.run(["/bin/sh", "-c", line], check=True, capture_output=True)

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres", "postgres")
            os.chmod(self.directory, 0o755)
            for parent in self.directory.parents:  # postgres must be able to reach its directory
                if parent == Path("/"):
                    break
                os.chmod(parent, os.stat(parent).st_mode | 0o011)
        if not self.data.exists():
            self._as_postgres(f"{BIN}/initdb", "-D", str(self.data), "-A", "trust", "--no-sync", "-U", "postgres")
        options = f"-k {self.directory} -p {self.port} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._as_postgres(
            f"{BIN}/pg_ctl",
            "-D",
            str(self.data),
            "-o",
            f"'{options}'",
            "-l",
            str(self.directory / "server.log"),
            "-w",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        if (self.data / "postmaster.pid").exists():
            self._as_postgres(f"{BIN}/pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A fresh database, so every test starts from an empty audit trail."""
        import psycopg

        name = f"kts_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)
