"""Debian's ZooKeeper Java client (the library brokers use, default jute.maxbuffer) listing a znode's
children, as ``zkCli.sh ls`` does: the judge of whether brokers can still list a child list."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from app.cli.server.embedded_zookeeper import JAVA_DIR

CLIENT_JARS = ("zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar", "commons-cli.jar")
MAIN_CLASS = "org.apache.zookeeper.ZooKeeperMain"


@dataclass(frozen=True)
class JavaListing:
    listed: bool  # the client printed the children
    output: str

    @property
    def connection_lost(self) -> bool:
        return "ConnectionLoss" in self.output


def java_ls(connect: str, path: str, *, with_stat: bool = True) -> JavaListing:
    """``ls -s`` or ``ls`` through the Java client: ZooKeeperMain 3.8 sends getChildren2 (the children with the
    parent's Stat, as brokers do) for both; ``-s`` also prints the Stat. ``connect`` may carry a chroot."""
    classpath = ":".join(str(JAVA_DIR / jar) for jar in CLIENT_JARS)
    flags = ["-s"] if with_stat else []
    jvm = ["java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", classpath]  # a short-lived JVM starts faster
    command = [*jvm, MAIN_CLASS, "-server", connect, "ls", *flags, path]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    output = done.stdout + done.stderr
    # A listing prints the children as "[name, name, ...]"; a failed one prints "KeeperErrorCode = ...".
    listed = done.returncode == 0 and "KeeperErrorCode" not in output and "\n[" in output
    return JavaListing(listed, output)
