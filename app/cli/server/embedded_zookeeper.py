"""A standalone ZooKeeper server run from the jars of Debian's ``zookeeper`` package.

Used by ``kts dev`` and by the test fixtures, so both start the very same real server.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

JAVA_DIR = Path("/usr/share/java")
CLASSPATH_JARS = ("zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
# What ``serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory`` (a ``secureClientPort``,
# TLS) needs besides CLASSPATH_JARS; Debian's libnetty-java, a dependency of the zookeeper package.
NETTY_JARS = tuple(
    f"netty-{name}.jar"
    for name in (
        "buffer",
        "codec",
        "common",
        "handler",
        "resolver",
        "transport",
        "transport-native-epoll",
        "transport-native-unix-common",
    )
)


PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask Linux to SIGTERM the server when its parent dies, even by SIGKILL, so no ZooKeeper is orphaned."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass  # not Linux: the parent's own stop() remains the only cleanup


class ZooKeeperUnavailable(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def four_letter_word(port: int, word: str = "ruok", timeout_s: float = 1.0) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(word.encode())
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def installed() -> bool:
    return shutil.which("java") is not None and (JAVA_DIR / "zookeeper.jar").is_file()


class EmbeddedZooKeeper:
    """One ZooKeeper server on a loopback port, its data in ``data_dir``."""

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        *,
        tick_ms: int = 500,
        myid: int | None = None,
        extra_config: tuple[str, ...] = (),
        jvm_options: tuple[str, ...] = (),
        extra_jars: tuple[str, ...] = (),
    ) -> None:
        """``myid`` and ``extra_config`` (``server.N=...`` lines) make this server one of an ensemble.
        ``extra_jars`` are more jars of JAVA_DIR for the classpath (NETTY_JARS for TLS)."""
        self.data_dir = data_dir
        self.port = port or free_port()
        self.tick_ms = tick_ms
        self.myid = myid
        self.extra_config = extra_config
        self.jvm_options = jvm_options
        self.extra_jars = extra_jars
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def connect_string(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30.0) -> None:
        if not installed():
            raise ZooKeeperUnavailable("ZooKeeper is not installed: apt-get install zookeeper (make deps does)")
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
        if self.myid is not None:
            (self.data_dir / "data" / "myid").write_text(f"{self.myid}\n")
        config = self.data_dir / "zoo.cfg"
        config.write_text(
            "\n".join(
                (
                    f"dataDir={self.data_dir / 'data'}",
                    f"clientPort={self.port}",
                    "clientPortAddress=127.0.0.1",
                    f"tickTime={self.tick_ms}",
                    "maxSessionTimeout=60000",
                    "admin.enableServer=false",
                    "4lw.commands.whitelist=*",
                    "initLimit=10",
                    "syncLimit=5",
                    *self.extra_config,
                    "",
                )
            )
        )
        classpath = ":".join(str(JAVA_DIR / jar) for jar in (*CLASSPATH_JARS, *self.extra_jars))
        log = (self.data_dir / "zookeeper.log").open("ab")
        self.process = subprocess.Popen(  # noqa: S603 - fixed command line, no shell
            ["java", "-Xmx256m", *self.jvm_options, "-cp", classpath, MAIN_CLASS, str(config)],  # noqa: S607
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=die_with_parent,
            umask=0o077,  # its snapshots and logs hold SCRAM verifiers: readable by this user only
        )
        log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ZooKeeperUnavailable(f"ZooKeeper exited with {self.process.returncode}; see {log.name}")
            try:
                if four_letter_word(self.port) == "imok":
                    return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise ZooKeeperUnavailable(f"ZooKeeper did not answer on port {self.port} within {timeout_s} s")

    def stop(self, timeout_s: float = 10.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, 9)
            self.process.wait()

    def __enter__(self) -> EmbeddedZooKeeper:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
