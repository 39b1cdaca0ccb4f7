"""Every token of a replica's cache with the indexes its read paths need, whichever backend feeds it (the
ZooKeeper watch cache, app/storage/zk/token_cache.py; the Kafka-protocol cache fed by DescribeDelegationToken,
app/storage/kafka/token_cache.py).

Indexes: by HMAC (renew and expire name tokens by HMAC); by owner, by renewer and by requester (describe with an
owner filter or for a caller who sees only the tokens they hold, and the quota counts); and every token id in
order (a listing pages by token id, so a page costs its own length, not a sort of every token). Two counts serve
the fair shares and the sweep's schedule: tokens per requester, and every token's end (the earlier of its expiry
and maximum) in order, so "how many have expired" is a bisection.

Not thread-safe: the caches hold their lock around writes and multi-key reads (single-key reads are dict lookups).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from itertools import islice

from sortedcontainers import SortedList

from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey, QuotaKind, counts_against
from app.domain.token_secret import TokenSecret
from app.service.ports import StoredToken


class _PrincipalIndex:
    """Token ids by one principal field of their tokens."""

    def __init__(self, field: Callable[[TokenInformation], Iterable[KafkaPrincipal]]) -> None:
        self._field = field
        self._ids: defaultdict[KafkaPrincipal, set[str]] = defaultdict(set)

    def get(self, principal: KafkaPrincipal) -> set[str]:
        return self._ids.get(principal, set())

    def add(self, token: TokenInformation) -> None:
        for principal in self._field(token):
            self._ids[principal].add(token.token_id)

    def remove(self, token: TokenInformation) -> None:
        for principal in self._field(token):
            ids = self._ids.get(principal)
            if ids is not None:
                ids.discard(token.token_id)
                if not ids:
                    del self._ids[principal]

    def clear(self) -> None:
        self._ids.clear()


class TokenIndex:
    def __init__(self, secret: TokenSecret) -> None:
        self._secret = secret
        self._tokens: dict[str, StoredToken] = {}
        self._by_hmac: dict[bytes, str] = {}
        self._by_owner = _PrincipalIndex(lambda token: (token.owner,))
        self._by_renewer = _PrincipalIndex(lambda token: token.renewers)
        # Only tokens requested for another owner: the owner index holds the rest (and memory is per token).
        self._by_requester = _PrincipalIndex(
            lambda token: (token.token_requester,) if token.token_requester != token.owner else ()
        )
        self._indexes = (self._by_owner, self._by_renewer, self._by_requester)
        self._ordered: SortedList = SortedList()  # every token id
        self._ends: SortedList = SortedList()  # every token's end (min of expiry and max), repeated as need be
        self._requested: Counter[KafkaPrincipal] = Counter()  # tokens per requester

    def __len__(self) -> int:
        return len(self._tokens)

    def __contains__(self, token_id: str) -> bool:
        return token_id in self._tokens

    def get(self, token_id: str) -> StoredToken | None:
        return self._tokens.get(token_id)

    def find_by_hmac(self, mac: bytes) -> str | None:
        return self._by_hmac.get(mac)

    def tokens(self) -> list[StoredToken]:
        return list(self._tokens.values())

    def ids(self) -> list[str]:
        return list(self._tokens)

    def related_to(self, principals: Iterable[KafkaPrincipal]) -> list[StoredToken]:
        """Tokens that any of ``principals`` owns, renews or requested."""
        ids = set().union(*(index.get(principal) for principal in principals for index in self._indexes))
        return [self._tokens[token_id] for token_id in ids]

    def after(self, token_id: str | None, count: int) -> list[StoredToken]:
        """Up to ``count`` tokens in token id order, from the first whose id is greater than ``token_id``."""
        ids = self._ordered.irange(minimum=token_id, inclusive=(False, True))
        return [self._tokens[found] for found in islice(ids, count)]

    def live_count(self, key: QuotaKey, now_ms: int) -> int:
        """Tokens counted against ``key``'s quota at ``now_ms``: expired ones never count, swept or not."""
        index = self._by_owner if key.kind is QuotaKind.OWNER else self._by_requester
        return sum(counts_against(key, self._tokens[token_id].token, now_ms) for token_id in index.get(key.principal))

    def requested_count(self, principal: KafkaPrincipal) -> int:
        """Tokens ``principal`` requested (for itself or others), expired ones included."""
        return self._requested.get(principal, 0)

    def expired_count(self, now_ms: int) -> int:
        """Tokens past their expiry or maximum (``TokenInformation.is_expired``): those whose end is before now."""
        return int(self._ends.bisect_left(now_ms))

    def put(self, stored: StoredToken, *, ordered: bool = True) -> None:
        """Add a token (``ordered=False``: the caller sorts the id index once, see ``load``)."""
        token = stored.token
        self._tokens[token.token_id] = stored
        self._by_hmac[self._secret.hmac(token.token_id)] = token.token_id
        if ordered:
            self._ordered.add(token.token_id)
            self._ends.add(_end(token))
        self._requested[token.token_requester] += 1
        for index in self._indexes:
            index.add(token)

    def replace(self, stored: StoredToken) -> None:
        self.drop(stored.token.token_id)
        self.put(stored)

    def drop(self, token_id: str) -> None:
        old = self._tokens.pop(token_id, None)
        if old is None:
            return
        self._by_hmac.pop(self._secret.hmac(token_id), None)
        self._ordered.discard(token_id)
        self._ends.discard(_end(old.token))  # one of the equal ends: which one does not matter to a count
        requester = old.token.token_requester
        self._requested[requester] -= 1
        if self._requested[requester] <= 0:
            del self._requested[requester]
        for index in self._indexes:
            index.remove(old.token)

    def load(self, loaded: Iterable[StoredToken]) -> None:
        """Replace everything with ``loaded``: one sort, several times faster than an insertion each."""
        self._tokens.clear()
        self._by_hmac.clear()
        self._ordered.clear()
        self._ends.clear()
        self._requested.clear()
        for index in self._indexes:
            index.clear()
        for stored in loaded:
            self.put(stored, ordered=False)
        self._ordered.update(self._tokens)
        self._ends.update(_end(stored.token) for stored in self._tokens.values())


def _end(token: TokenInformation) -> int:
    """The instant after which the token is expired (``is_expired``: strictly past it)."""
    return min(token.expiry_timestamp, token.max_timestamp)
