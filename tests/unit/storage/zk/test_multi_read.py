"""The multiRead wire format: what is sent, and answers that are not multiRead answers."""

from __future__ import annotations

import struct

import pytest
from kazoo.exceptions import NoNodeError
from kazoo.protocol.serialization import GetData, MultiHeader

from app.storage.zk.multi_read import MULTI_READ_OPCODE, MultiReadNotSupported, _MultiRead, _MultiReadVersions

_STAT = struct.pack("!qqqqiiiqiiq", 1, 2, 3, 4, 7, 0, 0, 0, 5, 0, 9)


def _header(op_type: int, done: bool, err: int) -> bytes:
    return struct.pack("!iBi", op_type, 1 if done else 0, err)


def test_request_is_get_data_operations_behind_multi_headers_then_a_done_header() -> None:
    request = _MultiRead(("/a", "/bc"))
    assert request.type == MULTI_READ_OPCODE == 22
    expected = (
        _header(4, False, -1) + struct.pack("!i", 2) + b"/a" + b"\x00"
        + _header(4, False, -1) + struct.pack("!i", 3) + b"/bc" + b"\x00"
        + _header(-1, True, -1)
    )  # fmt: skip
    assert bytes(request.serialize()) == expected


def test_request_is_what_kazoos_own_records_serialize() -> None:
    paths = ("/kafka/delegation_token/tokens/E8gTWaIxRUOaSRH7wY3N1w", "/é")  # never empty: kazoo writes "" as null
    expected = bytearray()
    for path in paths:
        expected += MultiHeader(GetData.type, False, -1).serialize() + GetData(path, None).serialize()
    expected += MultiHeader(-1, True, -1).serialize()
    assert _MultiRead(paths).serialize() == expected


def test_a_request_of_paths_of_one_length_is_what_kazoos_own_records_serialize() -> None:
    """Token paths have one length, and such a request is written in one join: the same bytes."""
    paths = tuple(f"/kafka/delegation_token/tokens/Token{n:017d}" for n in range(3))
    expected = bytearray()
    for path in paths:
        expected += MultiHeader(GetData.type, False, -1).serialize() + GetData(path, None).serialize()
    expected += MultiHeader(-1, True, -1).serialize()
    assert _MultiRead(paths).serialize() == expected
    assert _MultiRead(()).serialize() == MultiHeader(-1, True, -1).serialize()
    # Names given with their folder's prefix: the same request as their paths.
    names = tuple(path.rpartition("/")[2] for path in paths)
    assert _MultiRead(names, prefix="/kafka/delegation_token/tokens/").serialize() == expected
    assert _MultiRead(("a", "bc"), prefix="/x/").serialize() == _MultiRead(("/x/a", "/x/bc")).serialize()


def test_answer_reads_as_kazoos_own_records_read_it() -> None:
    answer = _header(4, False, 0) + struct.pack("!i", 4) + b"\x00\xffab" + _STAT + _header(-1, True, -1)
    header, offset = MultiHeader.deserialize(answer, 0)
    data, stat = GetData.deserialize(answer, offset)
    assert header.type == 4
    assert _MultiRead.deserialize(answer, 0) == [(data, stat)]


def test_answer_with_data_and_an_error_result() -> None:
    answer = (
        _header(4, False, 0) + struct.pack("!i", 3) + b"abc" + _STAT
        + _header(-1, False, -101) + struct.pack("!i", -101)
        + _header(4, False, 0) + struct.pack("!i", -1) + _STAT
        + _header(-1, True, -1)
    )  # fmt: skip
    first, second, third = _MultiRead.deserialize(answer, 0)
    assert isinstance(first, tuple) and first[0] == b"abc" and first[1].version == 7
    assert isinstance(second, NoNodeError)
    assert isinstance(third, tuple) and third[0] == b""  # a znode without data


@pytest.mark.parametrize(
    "answer",
    [b"", b"\x00\x00", _header(4, False, 0) + b"\x00\x00\x00\x09ab", _header(13, False, 0) + _header(-1, True, -1)],
    ids=["empty (an old server's header-only reply)", "short", "truncated data", "foreign operation"],
)
def test_answers_that_are_not_multi_read_answers_say_so(answer: bytes) -> None:
    with pytest.raises(MultiReadNotSupported):
        _MultiRead.deserialize(answer, 0)
    with pytest.raises(MultiReadNotSupported):
        _MultiReadVersions.deserialize(answer, 0)


def test_versions_answer_keeps_each_znodes_data_and_version_of_the_same_answer() -> None:
    """Start-up's reader: the same request, each answer read as the full reader reads it, less the Stat but its
    version; errors in place, as the full reader gives them."""
    stat = struct.pack("!qqqqiiiqiiq", 1, 2, 3, 4, 2_000_000_001, 6, 7, 8, 9, 10, 11)  # version next to other ints
    answer = (
        _header(4, False, 0) + struct.pack("!i", 3) + b"abc" + stat
        + _header(-1, False, -101) + struct.pack("!i", -101)
        + _header(4, False, 0) + struct.pack("!i", -1) + _STAT
        + _header(4, False, 0) + struct.pack("!i", 0) + _STAT
        + _header(-1, True, -1)
    )  # fmt: skip
    full = _MultiRead.deserialize(answer, 0)
    versions = _MultiReadVersions.deserialize(answer, 0)
    assert versions[0] == (b"abc", 2_000_000_001) and versions[2] == (b"", 7) and versions[3] == (b"", 7)
    assert isinstance(versions[1], NoNodeError)
    assert [a if isinstance(a, Exception) else (a[0], a[1].version) for a in full][::2] == versions[::2]
    assert _MultiReadVersions(("/a", "/bc")).serialize() == _MultiRead(("/a", "/bc")).serialize()


def test_versions_answer_of_a_znode_cut_short_in_its_stat_says_so() -> None:
    answer = _header(4, False, 0) + struct.pack("!i", 3) + b"abc" + _STAT[:40]
    with pytest.raises(MultiReadNotSupported):
        _MultiReadVersions.deserialize(answer, 0)
