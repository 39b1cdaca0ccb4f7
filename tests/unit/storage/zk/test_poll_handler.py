"""The polling handler answers kazoo's waits as kazoo's own selector-based helper does."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from kazoo.handlers.utils import selector_select

from app.storage.zk.poll_handler import PollingHandler


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    left, right = socket.socketpair()
    yield left, right
    left.close()
    right.close()


def _both(rlist: list[object], wlist: list[object], timeout: float) -> tuple[object, object]:
    return PollingHandler().select(rlist, wlist, [], timeout), selector_select(rlist, wlist, [], timeout)


def test_nothing_to_read_times_out_with_empty_lists(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, kazoos = _both([pair[0]], [], 0.01)
    assert ours == kazoos == ([], [], [])


def test_a_socket_with_data_is_readable_and_one_with_room_writable(pair: tuple[socket.socket, socket.socket]) -> None:
    left, right = pair
    right.send(b"x")
    ours, kazoos = _both([left, right], [], 1.0)  # kazoo asks for reading or for writing, never both at once
    assert ours == kazoos == ([left], [], [])
    ours, kazoos = _both([], [right], 1.0)
    assert ours == kazoos == ([], [right], [])


def test_descriptors_and_sockets_alike_and_a_hang_up_counts_as_readable(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, right = pair
    right.close()  # the read that follows sees the end of the stream
    ours = PollingHandler().select([left.fileno()], [], [], 1.0)
    assert ours == ([left.fileno()], [], [])


def test_a_closed_socket_and_a_negative_timeout_are_refused(pair: tuple[socket.socket, socket.socket]) -> None:
    left, _ = pair
    with pytest.raises(ValueError):
        PollingHandler().select([left], [], [], -1)
    left.close()
    with pytest.raises(TypeError):
        PollingHandler().select([left], [], [], 0.01)
    with pytest.raises(TypeError):
        selector_select([left], [], [], 0.01)


def test_no_timeout_waits_until_ready(pair: tuple[socket.socket, socket.socket]) -> None:
    left, right = pair
    right.send(b"x")
    assert PollingHandler().select([left], [], [], None) == ([left], [], [])
