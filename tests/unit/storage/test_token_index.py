"""The compact token index (app/storage/token_index.py): versions kept apart, the HMAC index keyed by the HMAC's
first 60 bits with the whole HMAC checked, a second token sharing those bits still found, and the entries of
dropped tokens (left in place, with no HMAC computed) never answering and removed in bulk."""

from __future__ import annotations

import pytest

from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_secret import TokenSecret
from app.service.ports import LoadedToken, StoredToken
from app.storage import token_index
from app.storage.token_index import TokenIndex

SECRET = TokenSecret("index-secret")
ALICE, BOB = KafkaPrincipal.user("alice"), KafkaPrincipal.user("bob")


def _token(token_id: str, owner: KafkaPrincipal = ALICE, renewers: tuple[KafkaPrincipal, ...] = ()) -> TokenInformation:
    return TokenInformation(token_id, owner, owner, renewers, 1_000, 5_000, 9_000)


def test_a_token_reads_back_with_its_version_whichever_path_reads_it() -> None:
    index = TokenIndex(SECRET)
    index.load(
        [StoredToken(_token("IndexTokenAAAAAAAAAAAA"), 0), StoredToken(_token("IndexTokenBBBBBBBBBBBB", BOB), 7)]
    )

    assert index.get("IndexTokenBBBBBBBBBBBB") == StoredToken(_token("IndexTokenBBBBBBBBBBBB", BOB), 7)
    assert index.get("IndexTokenAAAAAAAAAAAA") == StoredToken(_token("IndexTokenAAAAAAAAAAAA"), 0)
    assert sorted(stored.version for stored in index.tokens()) == [0, 7]
    assert [stored.version for stored in index.after(None, 10)] == [0, 7]
    assert index.related_to([BOB]) == [StoredToken(_token("IndexTokenBBBBBBBBBBBB", BOB), 7)]
    assert index.related_tokens([BOB]) == [_token("IndexTokenBBBBBBBBBBBB", BOB)]

    index.replace(StoredToken(_token("IndexTokenBBBBBBBBBBBB", BOB), 8))
    index.replace(StoredToken(_token("IndexTokenAAAAAAAAAAAA"), 1))
    assert [stored.version for stored in index.after(None, 10)] == [1, 8]
    index.drop("IndexTokenBBBBBBBBBBBB")
    assert index.get("IndexTokenBBBBBBBBBBBB") is None and index.related_to([BOB]) == []


def _pairs(tokens: list[StoredToken]) -> list[LoadedToken]:
    """A batch as a load is given it: each token's state and version."""
    return [(stored.token, stored.version) for stored in tokens]


def _answers(index: TokenIndex, tokens: list[StoredToken]) -> object:
    principals = {principal for stored in tokens for principal in (stored.token.owner, *stored.token.renewers)}
    principals |= {stored.token.token_requester for stored in tokens}
    return (
        len(index),
        sorted(index.ids()),
        index.after(None, len(tokens)),
        {stored.token.token_id: index.get(stored.token.token_id) for stored in tokens},
        {stored.token.token_id: index.find_by_hmac(SECRET.hmac(stored.token.token_id)) for stored in tokens},
        {principal: sorted(map(str, index.related_to([principal]))) for principal in principals},
        {principal: sorted(map(str, index.related_tokens([principal]))) for principal in principals},
        {principal: index.requested_count(principal) for principal in principals},
        [index.expired_count(now) for now in (0, 4_999, 5_000, 5_001, 9_001)],
    )


def test_loading_in_bulk_builds_what_adding_each_token_builds() -> None:
    carol = KafkaPrincipal.user("carol")
    tokens = [
        StoredToken(TokenInformation(f"IndexToken{n:012d}", owner, requester, renewers, 1_000, expiry, 9_000), n % 3)
        for n, (owner, requester, renewers, expiry) in enumerate(
            [
                (ALICE, ALICE, (), 5_000),
                (ALICE, BOB, (BOB, carol), 4_000),
                (BOB, BOB, (ALICE,), 9_500),
                (carol, ALICE, (), 5_000),
                (BOB, carol, (carol, carol), 1_000),
            ]
            * 4
        )
    ]
    loaded, added = TokenIndex(SECRET), TokenIndex(SECRET)
    loaded.put(StoredToken(_token("IndexTokenStaleAAAAAAA"), 5))  # forgotten by the load
    loaded.load(tokens)
    for stored in tokens:
        added.put(stored)

    assert _answers(loaded, tokens) == _answers(added, tokens)
    assert loaded.get("IndexTokenStaleAAAAAAA") is None


def test_loading_batch_by_batch_builds_what_loading_at_once_builds() -> None:
    tokens = [
        StoredToken(_token(f"IndexToken{n:012d}", (ALICE, BOB)[n % 2], (BOB,) if n % 3 else ()), n % 2)
        for n in range(10)
    ]
    at_once, batched = TokenIndex(SECRET), TokenIndex(SECRET)
    at_once.load(tokens)
    batched.put(StoredToken(_token("IndexTokenStaleAAAAAAA"), 5))  # forgotten by the load

    assert batched.load_batches(map(_pairs, [tokens[:4], [], tokens[4:7], tokens[7:]])) == len(tokens)
    assert _answers(batched, tokens) == _answers(at_once, tokens)
    assert batched.get("IndexTokenStaleAAAAAAA") is None


def test_a_token_given_twice_to_a_load_ends_in_its_later_state() -> None:
    first, second = _token("IndexTokenTwiceAAAAAAA"), _token("IndexTokenTwiceAAAAAAA", BOB, (ALICE,))
    other = StoredToken(_token("IndexTokenOtherAAAAAAA"), 0)
    for batches in (
        [[StoredToken(first, 3), other], [StoredToken(second, 0)]],
        [[StoredToken(first, 3), other, StoredToken(second, 0)]],
    ):
        index = TokenIndex(SECRET)
        assert index.load_batches(map(_pairs, batches)) == 2
        expected = TokenIndex(SECRET)
        expected.put(other)
        expected.put(StoredToken(second, 0))
        assert _answers(index, [other, StoredToken(second, 0)]) == _answers(expected, [other, StoredToken(second, 0)])
        assert index.requested_count(ALICE) == 1 and index.requested_count(BOB) == 1


def test_an_owner_whose_only_token_a_load_replaced_is_indexed_again_by_a_later_token() -> None:
    """The load finds owners' ids by their principal objects; a token given twice drops its earlier state, and with
    it an owner's ids when that was their only token: a later token of that owner is indexed all the same."""
    carol = KafkaPrincipal.user("carol")
    replaced = TokenInformation("IndexTokenTwiceCCCCCCC", carol, carol, (), 1_000, 5_000, 9_000)
    now_bobs = TokenInformation("IndexTokenTwiceCCCCCCC", BOB, BOB, (), 1_000, 5_000, 9_000)
    later = TokenInformation("IndexTokenLaterCCCCCCC", carol, carol, (), 1_000, 5_000, 9_000)
    index = TokenIndex(SECRET)

    index.load_batches([[(replaced, 0)], [(now_bobs, 0), (later, 0)]])

    assert [stored.token for stored in index.related_to([carol])] == [later]
    assert [stored.token for stored in index.related_to([BOB])] == [now_bobs]
    assert (index.requested_count(carol), index.requested_count(BOB)) == (1, 1)


def test_a_token_requested_for_another_owner_given_twice_is_counted_in_its_later_state() -> None:
    """The tokens per requester, counted once a load is in, see only the later state of a token given twice."""
    carol = KafkaPrincipal.user("carol")
    token_id = "IndexTokenTwiceBBBBBBB"
    states = [
        TokenInformation(token_id, ALICE, BOB, (), 1_000, 5_000, 9_000),  # requested by bob for alice
        TokenInformation(token_id, ALICE, carol, (), 1_000, 5_000, 9_000),  # then by carol
        TokenInformation(token_id, carol, carol, (), 1_000, 5_000, 9_000),  # then carol's own
    ]
    others = [
        StoredToken(TokenInformation(f"IndexTokenOther{n:07d}", ALICE, BOB, (), 1_000, 5_000, 9_000), 0)
        for n in range(2)
    ]
    for last in (1, 2, 3):
        index = TokenIndex(SECRET)
        index.load_batches([_pairs(others), [(state, 0) for state in states[:last]]])
        expected = TokenIndex(SECRET)
        for stored in [*others, StoredToken(states[last - 1], 0)]:
            expected.put(stored)
        everyone = [*others, StoredToken(states[last - 1], 0)]
        assert _answers(index, everyone) == _answers(expected, everyone)
        assert {p: index.requested_count(p) for p in (ALICE, BOB, carol)} == {
            p: expected.requested_count(p) for p in (ALICE, BOB, carol)
        }


def test_changes_between_a_load_and_the_first_listing_are_in_the_sorted_indexes_built_then() -> None:
    """A load leaves the ids in order and the ends unsorted until a listing or a count needs them: what is put,
    replaced and dropped meanwhile is in them when they are built, as if each token had been added one by one."""
    loaded_tokens = [StoredToken(_token(f"IndexTokenLazy{n:08d}", (ALICE, BOB)[n % 2]), 0) for n in range(6)]
    later = StoredToken(_token("IndexTokenLazyLaterAAA", BOB), 0)
    replaced = StoredToken(loaded_tokens[1].token.with_expiry(1_000), 2)
    loaded = TokenIndex(SECRET)
    loaded.load(loaded_tokens)
    loaded.put(later)
    loaded.replace(replaced)
    loaded.drop(loaded_tokens[2].token.token_id)
    loaded.drop_many([loaded_tokens[3].token.token_id, "IndexTokenNeverThereAA"])
    added = TokenIndex(SECRET)
    remaining = [loaded_tokens[0], replaced, loaded_tokens[4], loaded_tokens[5], later]
    for stored in remaining:
        added.put(stored)

    assert _answers(loaded, remaining) == _answers(added, remaining)


def test_dropping_in_bulk_leaves_what_dropping_each_token_leaves() -> None:
    carol = KafkaPrincipal.user("carol")
    tokens = [
        StoredToken(TokenInformation(f"IndexToken{n:012d}", owner, requester, renewers, 1_000, expiry, 9_000), n % 3)
        for n, (owner, requester, renewers, expiry) in enumerate(
            [(ALICE, ALICE, (), 5_000), (ALICE, BOB, (BOB, carol), 4_000), (BOB, carol, (carol,), 1_000)] * 4
        )
    ]
    gone = [stored.token.token_id for stored in tokens[::2]] + ["IndexTokenNeverThereAA"]
    bulk, each = TokenIndex(SECRET), TokenIndex(SECRET)
    bulk.load(tokens)
    each.load(tokens)

    bulk.drop_many(gone)
    for token_id in gone:
        each.drop(token_id)

    assert _answers(bulk, tokens) == _answers(each, tokens)
    assert len(bulk) == len(tokens) - len(tokens[::2])


def test_find_by_hmac_needs_the_whole_hmac() -> None:
    index = TokenIndex(SECRET)
    index.put(StoredToken(_token("IndexTokenAAAAAAAAAAAA"), 0))
    mac = SECRET.hmac("IndexTokenAAAAAAAAAAAA")

    assert index.find_by_hmac(mac) == "IndexTokenAAAAAAAAAAAA"
    forged = mac[:8] + bytes(len(mac) - 8)  # the same first 60 bits, the rest wrong
    assert index.find_by_hmac(forged) is None
    assert index.find_by_hmac(b"") is None
    index.drop("IndexTokenAAAAAAAAAAAA")
    assert index.find_by_hmac(mac) is None


def test_tokens_whose_hmacs_share_their_first_60_bits_are_each_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(token_index, "_hmac_key", lambda mac: 42)  # every HMAC shares its key
    index = TokenIndex(SECRET)
    ids = ["IndexTokenAAAAAAAAAAAA", "IndexTokenBBBBBBBBBBBB", "IndexTokenCCCCCCCCCCCC"]
    index.load([StoredToken(_token(token_id), 0) for token_id in ids])

    assert [index.find_by_hmac(SECRET.hmac(token_id)) for token_id in ids] == ids

    index.drop(ids[0])  # the one keyed by the shared bits: the others are still found
    assert [index.find_by_hmac(SECRET.hmac(token_id)) for token_id in ids] == [None, *ids[1:]]
    index.put(StoredToken(_token("IndexTokenDDDDDDDDDDDD"), 0))
    index.drop(ids[1])
    assert index.find_by_hmac(SECRET.hmac("IndexTokenDDDDDDDDDDDD")) == "IndexTokenDDDDDDDDDDDD"
    assert index.find_by_hmac(SECRET.hmac(ids[2])) == ids[2]
    assert index.find_by_hmac(SECRET.hmac(ids[1])) is None


def test_principal_indexes_follow_owners_and_renewers() -> None:
    index = TokenIndex(SECRET)
    index.put(StoredToken(_token("IndexTokenAAAAAAAAAAAA", ALICE, (BOB,)), 0))
    index.put(StoredToken(_token("IndexTokenBBBBBBBBBBBB", BOB), 0))

    assert sorted(stored.token.token_id for stored in index.related_to([BOB])) == [
        "IndexTokenAAAAAAAAAAAA",
        "IndexTokenBBBBBBBBBBBB",
    ]
    index.drop("IndexTokenAAAAAAAAAAAA")
    assert [stored.token.token_id for stored in index.related_to([ALICE, BOB])] == ["IndexTokenBBBBBBBBBBBB"]


def test_a_load_leaves_the_hmac_index_to_the_first_lookup_by_hmac_which_finds_what_was_changed_meanwhile() -> None:
    tokens = [StoredToken(_token(f"IndexTokenLazy{n:08d}"), 0) for n in range(6)]
    index = TokenIndex(SECRET)
    index.load(tokens)
    assert not index.hmacs_indexed  # start-up computes no HMAC

    index.drop(tokens[0].token.token_id)  # changes before the first lookup by HMAC
    index.put(StoredToken(_token("IndexTokenLazyAddedAAAA"), 0))
    index.replace(StoredToken(_token(tokens[1].token.token_id, BOB), 2))

    assert index.find_by_hmac(SECRET.hmac(tokens[0].token.token_id)) is None
    assert index.hmacs_indexed
    for token_id in ["IndexTokenLazyAddedAAAA", *(stored.token.token_id for stored in tokens[1:])]:
        assert index.find_by_hmac(SECRET.hmac(token_id)) == token_id
    index.drop("IndexTokenLazyAddedAAAA")  # and once indexed, kept as tokens come and go
    assert index.find_by_hmac(SECRET.hmac("IndexTokenLazyAddedAAAA")) is None


def test_a_dropped_token_is_never_found_by_hmac_and_its_entry_goes_in_bulk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(token_index, "MIN_STALE_HMACS", 10)
    ids = [f"IndexToken{n:012d}" for n in range(100)]
    index = TokenIndex(SECRET)
    index.load([StoredToken(_token(token_id), 0) for token_id in ids])
    index.index_hmacs()
    hmacs = {token_id: SECRET.hmac(token_id) for token_id in ids}
    computed = []
    monkeypatch.setattr(TokenSecret, "hmac", lambda _, token_id: computed.append(token_id) or hmacs[token_id])

    for token_id in ids[:60]:
        index.drop(token_id)

    assert computed == []  # a drop computes no HMAC
    assert [index.find_by_hmac(hmacs[token_id]) for token_id in ids[:60]] == [None] * 60
    assert [index.find_by_hmac(hmacs[token_id]) for token_id in ids[60:]] == ids[60:]
    # More dropped entries than live tokens were removed at once; fewer than that wait for the next time.
    assert len(index._by_hmac) <= 2 * len(index) + 1

    index.put(StoredToken(_token(ids[0]), 3))  # a token seen again (a reload after a lost session)
    index.replace(StoredToken(_token(ids[61]), 4))  # a renew: the same HMAC entry
    assert index.find_by_hmac(hmacs[ids[0]]) == ids[0]
    assert index.find_by_hmac(hmacs[ids[61]]) == ids[61]
    assert index.get(ids[61]) == StoredToken(_token(ids[61]), 4)

    for token_id in [ids[0], *ids[60:]]:
        index.drop(token_id)
    assert len(index) == 0 and len(index._by_hmac) <= token_index.MIN_STALE_HMACS + 1
    assert all(index.find_by_hmac(mac) is None for mac in hmacs.values())
