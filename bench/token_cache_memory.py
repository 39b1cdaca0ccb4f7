"""Memory a replica's token cache takes per token (the sizing figure of docs/operations.md). Prints JSON.

    python -m bench.token_cache_memory [--tokens 100000] [--owners 1000] [--renewers 1]

Tokens are decoded from znode bytes and loaded the way a replica loads them at start-up, then the Python heap
the cache holds is measured with tracemalloc. No ZooKeeper: the cache's store is an in-memory list, which is
why this calls the cache's loading step directly rather than ``start()`` (that would follow notifications).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import tracemalloc

from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_secret import TokenSecret, new_token_id
from app.service.ports import StoredToken
from app.storage.zk.token_cache import TokenCache
from app.storage.zk.znodes import TokenZNode

ISSUED = 1_700_000_000_000


class _ListedTokens:
    """The one store method loading needs, over znode bytes decoded at the call (as reads from ZooKeeper are)."""

    def __init__(self, znodes: list[bytes]) -> None:
        self._znodes = znodes

    def list(self) -> list[StoredToken]:
        return [StoredToken(TokenZNode.decode(data), 0) for data in self._znodes]


def znodes(count: int, owners: int, renewers: int) -> list[bytes]:
    users = [KafkaPrincipal.user(f"user-{index}") for index in range(owners)]
    return [
        TokenZNode.encode(
            TokenInformation(
                token_id=new_token_id(),
                owner=users[index % owners],
                token_requester=users[index % owners],
                renewers=tuple(users[(index + offset + 1) % owners] for offset in range(renewers)),
                issue_timestamp=ISSUED,
                expiry_timestamp=ISSUED + 86_400_000,
                max_timestamp=ISSUED + 604_800_000,
            )
        )
        for index in range(count)
    ]


def measure(count: int, owners: int, renewers: int) -> dict[str, int]:
    store = _ListedTokens(znodes(count, owners, renewers))
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    cache = TokenCache(None, store, TokenSecret("bench-secret"))  # type: ignore[arg-type]
    cache._reload()  # the loading step alone: see the module docstring
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return {
        "tokens": len(cache),
        "owners": owners,
        "renewers_per_token": renewers,
        "cache_bytes": held,
        "bytes_per_token": round(held / count),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--owners", type=int, default=1000)
    parser.add_argument("--renewers", type=int, default=1)
    args = parser.parse_args()
    # The cache warns about brokers' jute.maxbuffer past about 40,000 tokens: true, and beside the point here.
    logging.getLogger("app.storage.zk.token_cache").setLevel(logging.ERROR)
    print(json.dumps(measure(args.tokens, args.owners, args.renewers), indent=2))


if __name__ == "__main__":
    main()
