"""Every token of a replica's cache with the indexes its read paths need, whichever backend feeds it (the
ZooKeeper watch cache, app/storage/zk/token_cache.py; the Kafka-protocol cache fed by DescribeDelegationToken,
app/storage/kafka/token_cache.py).

Indexes: by HMAC (renew and expire name tokens by HMAC); by owner, by renewer and by requester (describe with an
owner filter or for a caller who sees only the tokens they hold, and the quota counts); and every token id in
order (a listing pages by token id, so a page costs its own length, not a sort of every token). Two counts serve
the fair shares and the sweep's schedule: tokens per requester, and every token's end (the earlier of its expiry
and maximum) in order, so "how many have expired" is a bisection.

Compact, because a replica holds every token of the cluster (100k tokens fit a replica's memory budget only so):
the cache keeps each token's ``TokenInformation`` (principals shared between tokens, app/storage/zk/znodes) and,
apart, the few versions that are not 0 (most tokens are never changed), and builds the ``StoredToken`` a reader
asks for; the HMAC index is keyed by the HMAC's first 60 bits (one small integer rather than 32 bytes), the
match checked on the whole HMAC; and the token ids of each principal are a dict's keys, half a set's memory.

The sorted indexes (ids in order, ends) are built lazily: a load (start-up's) leaves them to the first listing page
or expired count, which neither readiness nor lookups by id wait for. The HMAC index is built lazily too. A load
leaves it to the first lookup by HMAC (``index_hmacs``): only
renewals and expiries by HMAC need it, and start-up would otherwise wait for 100k HMAC-SHA512s (the cache computes
them outside its lock, app/storage/indexed_token_cache.py). A token leaves the HMAC index lazily too: its entry stays
until the entries of dropped tokens are as many as the live tokens, and then they all go at once (a lookup that
finds a dropped token's entry answers none). Dropping a token would otherwise compute its HMAC again to find its
entry: a fifth of the CPU an expiry sweep of 100k tokens took on the sweeping replica, and more than every other
index's update together.

Not thread-safe: the caches hold their lock around writes and multi-key reads (single-key reads are dict lookups).
"""

from __future__ import annotations

import hmac
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable
from itertools import islice

from sortedcontainers import SortedList

from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey, QuotaKind, counts_against
from app.domain.token_secret import TokenSecret
from app.service.ports import LoadedToken, StoredToken

# Entries of dropped tokens the HMAC index keeps at least before they go (a small index is not rebuilt per drop).
MIN_STALE_HMACS = 1024


class _PrincipalIndex:
    """Token ids by one principal field of their tokens."""

    def __init__(self, field: Callable[[TokenInformation], Iterable[KafkaPrincipal]]) -> None:
        self._field = field
        # A dict's keys rather than a set: insertion-ordered dicts take about half a set's memory per id. Filled by
        # ``add``, or directly by TokenIndex.load_batches.
        self.ids: defaultdict[KafkaPrincipal, dict[str, None]] = defaultdict(dict)

    def get(self, principal: KafkaPrincipal) -> Collection[str]:
        return self.ids.get(principal, {}).keys()

    def add(self, token: TokenInformation) -> None:
        for principal in self._field(token):
            self.ids[principal][token.token_id] = None

    def remove(self, token: TokenInformation) -> None:
        for principal in self._field(token):
            ids = self.ids.get(principal)
            if ids is not None:
                ids.pop(token.token_id, None)
                if not ids:
                    del self.ids[principal]

    def clear(self) -> None:
        self.ids.clear()


class TokenIndex:
    def __init__(self, secret: TokenSecret) -> None:
        self._secret = secret
        self._tokens: dict[str, TokenInformation] = {}
        self._versions: dict[str, int] = {}  # only the versions that are not 0
        self._by_hmac: dict[int, str] = {}  # by the HMAC's first 60 bits (``_hmac_key``)
        self._hmac_collisions: dict[bytes, str] = {}  # by the whole HMAC, should two share their first 60 bits
        self._stale_hmacs = 0  # entries of dropped tokens still in the two above (at most: a token may come back)
        # False after a load until every token is indexed by HMAC (``index_hmacs``, or the first ``find_by_hmac``).
        self._hmacs_indexed = True
        self._by_owner = _PrincipalIndex(lambda token: (token.owner,))
        self._by_renewer = _PrincipalIndex(lambda token: token.renewers)
        # Only tokens requested for another owner: the owner index holds the rest (and memory is per token).
        self._by_requester = _PrincipalIndex(
            lambda token: (token.token_requester,) if token.token_requester != token.owner else ()
        )
        self._indexes = (self._by_owner, self._by_renewer, self._by_requester)
        # The sorted indexes: every token id, and every token's end (min of expiry and max, repeated as need be).
        # None after a load until the first listing or expired count needs them (``_ids_in_order``, ``_sorted_ends``):
        # sorting 100k ids and ends was some 50 ms of start-up, which neither readiness nor a lookup by id needs.
        self._ordered: SortedList[str] | None = SortedList()
        self._ends: SortedList[int] | None = SortedList()
        self._requested: Counter[KafkaPrincipal] = Counter()  # tokens per requester

    def __len__(self) -> int:
        return len(self._tokens)

    def __contains__(self, token_id: str) -> bool:
        return token_id in self._tokens

    def get(self, token_id: str) -> StoredToken | None:
        token = self._tokens.get(token_id)
        return None if token is None else StoredToken(token, self._versions.get(token_id, 0))

    @property
    def hmacs_indexed(self) -> bool:
        """Whether every token is indexed by HMAC (else the next ``find_by_hmac`` indexes them, which writes)."""
        return self._hmacs_indexed

    def index_hmacs(self, computed: dict[str, bytes] | None = None) -> None:
        """Index every token by HMAC, if a load left that undone; ``computed``: HMACs already computed (outside the
        cache's lock) for some of them, the rest are computed here."""
        if self._hmacs_indexed:
            return
        computed = computed or {}
        missing = [token_id for token_id in self._tokens if token_id not in computed]
        macs = [*((token_id, mac) for token_id, mac in computed.items() if token_id in self._tokens)]
        macs += zip(missing, self._secret.hmacs(missing), strict=True)
        by_hmac, collisions = self._by_hmac, self._hmac_collisions
        for token_id, mac in macs:
            if by_hmac.setdefault(_hmac_key(mac), token_id) != token_id:
                collisions[mac] = token_id
        self._hmacs_indexed = True

    def find_by_hmac(self, mac: bytes) -> str | None:
        self.index_hmacs()
        tokens = self._tokens
        found = self._hmac_collisions.get(mac)
        if found is not None:
            return found if found in tokens else None  # a dropped token's entry (``drop``)
        found = self._by_hmac.get(_hmac_key(mac))
        if found is None or found not in tokens or not hmac.compare_digest(self._secret.hmac(found), mac):
            return None
        return found

    def tokens(self) -> list[StoredToken]:
        return [self._stored(token) for token in self._tokens.values()]

    def ids(self) -> list[str]:
        return list(self._tokens)

    def related_to(self, principals: Iterable[KafkaPrincipal]) -> list[StoredToken]:
        """Tokens that any of ``principals`` owns, renews or requested."""
        return [self._stored(token) for token in self.related_tokens(principals)]

    def related_tokens(self, principals: Iterable[KafkaPrincipal]) -> list[TokenInformation]:
        """``related_to``'s tokens, without their versions."""
        ids = set().union(*(index.get(principal) for principal in principals for index in self._indexes))
        tokens = self._tokens
        return [tokens[token_id] for token_id in ids]

    def after(self, token_id: str | None, count: int) -> list[StoredToken]:
        """Up to ``count`` tokens in token id order, from the first whose id is greater than ``token_id``."""
        ids = self._ids_in_order().irange(minimum=token_id, inclusive=(False, True))
        return [self._stored(self._tokens[found]) for found in islice(ids, count)]

    def live_count(self, key: QuotaKey, now_ms: int) -> int:
        """Tokens counted against ``key``'s quota at ``now_ms``: expired ones never count, swept or not."""
        index = self._by_owner if key.kind is QuotaKind.OWNER else self._by_requester
        return sum(counts_against(key, self._tokens[token_id], now_ms) for token_id in index.get(key.principal))

    def requested_count(self, principal: KafkaPrincipal) -> int:
        """Tokens ``principal`` requested (for itself or others), expired ones included."""
        return self._requested.get(principal, 0)

    def expired_count(self, now_ms: int) -> int:
        """Tokens past their expiry or maximum (``TokenInformation.is_expired``): those whose end is before now."""
        return int(self._sorted_ends().bisect_left(now_ms))

    def _ids_in_order(self) -> SortedList[str]:
        if self._ordered is None:
            self._ordered = SortedList(self._tokens)
        return self._ordered

    def _sorted_ends(self) -> SortedList[int]:
        if self._ends is None:
            self._ends = SortedList(map(_end, self._tokens.values()))
        return self._ends

    def put(self, stored: StoredToken) -> None:
        """Add a token."""
        token_id = stored.token.token_id
        if self._hmacs_indexed:
            mac = self._secret.hmac(token_id)
            if self._by_hmac.setdefault(_hmac_key(mac), token_id) != token_id:
                self._hmac_collisions[mac] = token_id
        self._add(stored)

    def replace(self, stored: StoredToken) -> None:
        """A token's new state: its HMAC entry (the same token id's) stays as it is."""
        old = self._tokens.get(stored.token.token_id)
        if old is None:
            self.put(stored)
            return
        self._remove(old)
        self._add(stored)

    def drop(self, token_id: str) -> None:
        old = self._tokens.get(token_id)
        if old is None:
            return
        self._remove(old)
        if not self._hmacs_indexed:
            return
        # Its HMAC entry stays (see the module's docstring): ``find_by_hmac`` answers none for it.
        self._stale_hmacs += 1
        if self._stale_hmacs > max(MIN_STALE_HMACS, len(self._tokens)):
            self._purge_hmacs()

    def drop_many(self, token_ids: Iterable[str]) -> None:
        """``drop`` for each of ``token_ids``, in one loop (the sweep drops its batches so)."""
        tokens, versions, requested = self._tokens, self._versions, self._requested
        ordered, ends, indexes = self._ordered, self._ends, self._indexes  # None: built later from what is left
        dropped = 0
        for token_id in token_ids:
            old = tokens.pop(token_id, None)
            if old is None:
                continue
            dropped += 1
            versions.pop(token_id, None)
            if ordered is not None:
                ordered.discard(token_id)
            if ends is not None:
                ends.discard(_end(old))
            requester = old.token_requester
            requested[requester] -= 1
            if requested[requester] <= 0:
                del requested[requester]
            for index in indexes:
                index.remove(old)
        if not self._hmacs_indexed:
            return
        self._stale_hmacs += dropped
        if self._stale_hmacs > max(MIN_STALE_HMACS, len(tokens)):
            self._purge_hmacs()

    def _add(self, stored: StoredToken) -> None:
        """Every index but the HMAC's."""
        token = stored.token
        token_id = token.token_id
        self._tokens[token_id] = token
        if stored.version:
            self._versions[token_id] = stored.version
        if self._ordered is not None:
            self._ordered.add(token_id)
        if self._ends is not None:
            self._ends.add(_end(token))
        self._requested[token.token_requester] += 1
        for index in self._indexes:
            index.add(token)

    def _remove(self, old: TokenInformation) -> None:
        """Every index but the HMAC's."""
        token_id = old.token_id
        del self._tokens[token_id]
        self._versions.pop(token_id, None)
        if self._ordered is not None:
            self._ordered.discard(token_id)
        if self._ends is not None:
            self._ends.discard(_end(old))  # one of the equal ends: which one does not matter to a count
        requester = old.token_requester
        self._requested[requester] -= 1
        if self._requested[requester] <= 0:
            del self._requested[requester]
        for index in self._indexes:
            index.remove(old)

    def load(self, loaded: Iterable[StoredToken]) -> None:
        """Replace everything with ``loaded``: what ``put`` does for each token, done in one loop with one sort of the
        ids and of the ends, and the HMAC index left to ``index_hmacs`` (start-up)."""
        self.load_batches((((stored.token, stored.version) for stored in loaded),))

    def load_batches(self, batches: Iterable[Iterable[LoadedToken]]) -> int:
        """``load`` of every batch's tokens (each a token's state and version), each indexed as it comes: a batch
        given as its reads arrive (start-up's, app/storage/zk/token_store.py) is indexed while the next ones are
        read, not after the last. The sorted indexes are sorted once, when first needed. Returns how many tokens
        were loaded."""
        self._tokens.clear()
        self._versions.clear()
        self._by_hmac.clear()
        self._hmac_collisions.clear()
        self._stale_hmacs = 0
        self._ordered = self._ends = None  # sorted when first needed
        self._requested.clear()
        for index in self._indexes:
            index.clear()
        tokens, versions = self._tokens, self._versions
        # Every index but the sorted ones and the HMAC's, a token at a time in one loop: what each index's ``add``
        # does (owners; renewers; requesters other than the owner), written out for start-up's 100k tokens.
        by_owner, by_renewer, by_requester = self._by_owner.ids, self._by_renewer.ids, self._by_requester.ids
        # The tokens per requester are counted from the owner and requester indexes once every token is in (a
        # count per token was two principal hashes each): an owner requested its tokens but those another principal
        # requested for it, counted here.
        requested_by_others: dict[KafkaPrincipal, int] = {}
        self._hmacs_indexed = False  # by ``index_hmacs``, or the first lookup by HMAC
        # Each owner's ids found by the identity of its principal object, with the object (so that its identity is not
        # another's while this holds it): the tokens of a load share their principals (app/storage/zk/znodes), and a
        # principal hashes in Python, an identity in C (some 10 ms of 100k tokens).
        owned: dict[int, tuple[KafkaPrincipal, dict[str, None]]] = {}
        for batch in batches:
            for token, version in batch:
                token_id = token.token_id
                if token_id in tokens:  # given twice (no listing does): the later state stands, as after ``replace``
                    old = tokens[token_id]
                    if old.token_requester != old.owner:
                        requested_by_others[old.owner] -= 1
                    self.drop(token_id)
                    owned.clear()  # the drop may have removed an owner's ids
                tokens[token_id] = token
                if version:
                    versions[token_id] = version
                owner, requester = token.owner, token.token_requester
                found = owned.get(id(owner))
                if found is None:
                    found = owned[id(owner)] = (owner, by_owner[owner])
                found[1][token_id] = None
                for renewer in token.renewers:
                    by_renewer[renewer][token_id] = None
                if requester is not owner and requester != owner:
                    by_requester[requester][token_id] = None
                    requested_by_others[owner] = requested_by_others.get(owner, 0) + 1
        requested = self._requested
        requested.clear()  # what the drops of tokens given twice left there
        for owner, ids in by_owner.items():
            if own := len(ids) - requested_by_others.get(owner, 0):
                requested[owner] = own
        for requester, ids in by_requester.items():
            requested[requester] += len(ids)
        return len(tokens)

    def _purge_hmacs(self) -> None:
        """Remove the HMAC entries of dropped tokens, as new dicts (a dict never shrinks as entries go), swapped
        in whole for the lookups that read without the lock. As many live entries are kept as stale ones go, so
        each drop pays for about one entry copied."""
        tokens = self._tokens
        self._by_hmac = {key: token_id for key, token_id in self._by_hmac.items() if token_id in tokens}
        self._hmac_collisions = {mac: token_id for mac, token_id in self._hmac_collisions.items() if token_id in tokens}
        self._stale_hmacs = 0

    def _stored(self, token: TokenInformation) -> StoredToken:
        return StoredToken(token, self._versions.get(token.token_id, 0))


def _hmac_key(mac: bytes) -> int:
    """The HMAC's first 60 bits: an integer of two 30-bit digits, the smallest that makes sharing one unlikely
    (two of 100k tokens do with a chance of about 1 in 10^8; ``_hmac_collisions`` keeps such a second one)."""
    return int.from_bytes(mac[:8], "big") >> 4


def _end(token: TokenInformation) -> int:
    """The instant after which the token is expired (``is_expired``: strictly past it)."""
    return min(token.expiry_timestamp, token.max_timestamp)
