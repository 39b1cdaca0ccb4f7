"""A 3-node ZooKeeper ensemble on loopback, from the same Debian jars as the standalone fixture."""

from __future__ import annotations

import time
from pathlib import Path

from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper, four_letter_word, free_port


class ZooKeeperEnsemble:
    def __init__(self, directory: Path, size: int = 3) -> None:
        peers = [(free_port(), free_port()) for _ in range(size)]
        servers = tuple(f"server.{n + 1}=127.0.0.1:{quorum}:{election}" for n, (quorum, election) in enumerate(peers))
        self.members = [
            EmbeddedZooKeeper(directory / f"zk{n + 1}", myid=n + 1, extra_config=servers) for n in range(size)
        ]

    @property
    def connect_string(self) -> str:
        return ",".join(member.connect_string for member in self.members)

    def mode(self, index: int) -> str:
        try:
            answer = four_letter_word(self.members[index].port, "srvr")
        except OSError:
            return "down"
        for line in answer.splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return "not serving"

    def start(self, timeout_s: float = 60.0) -> None:
        for member in self.members:
            self._launch(member)
        self.wait_for_quorum(timeout_s)

    def _launch(self, member: EmbeddedZooKeeper) -> None:
        # A member answers "ruok" before the quorum forms, which is all start() waits for.
        member.start()

    def wait_for_quorum(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            modes = [self.mode(n) for n in range(len(self.members))]
            live = [mode for mode in modes if mode != "down"]
            if "leader" in live and all(mode in ("leader", "follower") for mode in live):
                return
            time.sleep(0.1)
        raise TimeoutError(f"the ensemble did not form: {[self.mode(n) for n in range(len(self.members))]}")

    def leader(self) -> int:
        for index in range(len(self.members)):
            if self.mode(index) == "leader":
                return index
        raise LookupError("no leader")

    def kill(self, index: int) -> None:
        self.members[index].kill()

    def restart(self, index: int) -> None:
        self._launch(self.members[index])

    def stop(self) -> None:
        for member in self.members:
            member.stop()
