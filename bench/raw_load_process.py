"""Start-up's raw work as a process of its own, timed from its launch as a replica's start-up is: the interpreter
starts, imports kazoo, connects, lists the token folder and reads every token with multiRead (2000 paths a
request, 2 in flight), each decoded with the standard JSON module into a dict. Prints one JSON line when done:
its tokens and its own CPU seconds (imports included). Run by bench/ceilings.py's ``raw_load``.

    python -m bench.raw_load_process ZK_CONNECT TOKEN_FOLDER
"""

from __future__ import annotations

import json
import sys
import time

from kazoo.client import KazooClient

from app.storage.zk.multi_read import read_many_async

WINDOW = 2000


def main() -> None:
    connect, folder = sys.argv[1], sys.argv[2]
    zk = KazooClient(hosts=connect)
    zk.start(30)
    try:
        paths = [f"{folder}/{name}" for name in zk.get_children(folder)]
        batches = [paths[first : first + WINDOW] for first in range(0, len(paths), WINDOW)]
        in_flight = [read_many_async(zk, batch) for batch in batches[:2]]
        decoded = 0
        for index in range(len(batches)):
            answers = in_flight.pop(0).get()
            if index + 2 < len(batches):
                in_flight.append(read_many_async(zk, batches[index + 2]))
            decoded += sum(1 for answer in answers if isinstance(json.loads(answer[0]), dict))
        print(json.dumps({"tokens": decoded, "cpu_seconds": round(time.process_time(), 3)}), flush=True)
    finally:
        zk.stop()


if __name__ == "__main__":
    main()
