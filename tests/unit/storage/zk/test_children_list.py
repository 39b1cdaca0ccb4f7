"""The children-list decoder answers exactly what kazoo's own decoder answers, for every shape of listing."""

from __future__ import annotations

import struct

import pytest
from kazoo.protocol.serialization import GetChildren, write_string

from app.storage.zk.children_list import decode_children


def _answer(names: list[str], *, lead: bytes = b"\x07" * 16, count: int | None = None) -> bytes:
    """A GetChildren answer after ``lead`` (the reply header the connection skips with ``offset``)."""
    body = bytearray(lead + struct.pack("!i", len(names) if count is None else count))
    for name in names:
        body += write_string(name)
    return bytes(body)


@pytest.mark.parametrize(
    "names",
    [
        [f"token_change_{n:010d}" for n in range(3000)],  # the usual: sequential names of one length
        [f"acl_changes_{n:010d}" for n in (7, 3, 9)],  # in the server's order, not sorted
        ["token_change_0000000001"],
        [],
        ["a", "bb", "ccc"],  # several lengths
        ["ab", "cd", "efg"],  # one length, then another
        ["\u00e9t\u00e9", "\u00e9t\u00e9"],  # not ASCII (two bytes a character)
        ["Zm9vYmFyYmF6cXV4MTIzNDU", "AAAAAAAAAAAAAAAAAAAAAA"],  # token ids
    ],
)
def test_answers_what_kazoo_answers(names: list[str]) -> None:
    answer = _answer(names)
    assert decode_children(answer, 16) == GetChildren.deserialize(answer, 16) == names


def test_an_empty_or_absent_vector_is_no_names() -> None:
    assert decode_children(_answer([], count=-1), 16) == []


def test_a_truncated_answer_is_decoded_as_kazoo_decodes_it() -> None:
    answer = _answer(["abcd", "efgh"])[:-2]  # the equal-length check fails: kazoo's loop decides
    assert decode_children(answer, 16) == GetChildren.deserialize(answer, 16)


def test_a_name_of_the_prefix_length_is_not_mistaken_for_a_record_boundary() -> None:
    # Equal lengths, so every record starts with the same four bytes; names that hold those bytes cannot exist
    # (ZooKeeper refuses NUL in names), but a record whose name looks like a length must still be cut right.
    names = ["\x01\x02\x03\x04abc", "defghij"]
    answer = _answer(names)
    assert decode_children(answer, 16) == GetChildren.deserialize(answer, 16) == names
