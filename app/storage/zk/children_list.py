"""A znode's children listed with a watch, decoded fast when their names all have one length.

The notification lists kts follows (``/delegation_token/token_changes`` and the ACL change queues) keep every
change of the last 15 minutes, and every change makes the watch fire, so the list is read again after each
change, as brokers read it. kazoo decodes a listing one name at a time (about 1.3 µs per name here): 4 ms for
3,000 notifications, on every change, on the thread that also answers every other ZooKeeper request. Names of
sequential notifications all have the same length (a prefix and ten digits), so a listing is a run of equal
records; this checks that in a few slices of the buffer and splits one decoded string, several times faster.
Any other listing (names of several lengths, or not ASCII) is decoded as kazoo does.

An adapter over private parts of kazoo, fenced here: no other module uses them. Relied on (and checked by
tests/unit/storage/zk/test_kazoo_private_api.py): ``KazooClient._call`` (see multi_read.py), and that the
connection registers the ``watcher`` of any ``GetChildren`` request (subclasses included) for its ``path`` once
the listing is answered, then calls it, from kazoo's event thread, with a ``WatchedEvent`` at the next change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.protocol.serialization import GetChildren, int_struct, read_string
from kazoo.protocol.states import WatchedEvent

_LENGTH = int_struct.size


def decode_children(buffer: bytes, offset: int) -> list[str]:
    """The names of a ``GetChildren`` answer starting at ``offset``: ZooKeeper's vector of length-prefixed
    UTF-8 strings, decoded exactly as kazoo decodes it."""
    count = int_struct.unpack_from(buffer, offset)[0]
    offset += _LENGTH
    if count <= 0:
        return []
    length = int_struct.unpack_from(buffer, offset)[0]
    stride = _LENGTH + length
    body = bytes(buffer[offset : offset + count * stride])
    if length > 0 and len(body) == count * stride and body.isascii():
        prefix = body[:_LENGTH]
        # Every record starts with the same length: each byte of the prefix repeats every ``stride`` bytes.
        if all(body[index::stride] == prefix[index : index + 1] * count for index in range(_LENGTH)):
            # ZooKeeper refuses control characters in names, so the prefix (a NUL first) occurs at records only.
            names = body.decode("ascii").split(prefix.decode("ascii"))[1:]
            if len(names) == count:
                return names
    names = []
    for _ in range(count):  # kazoo's own loop
        name, offset = read_string(buffer, offset)
        names.append(name)
    return names


class _WatchedListing(GetChildren):  # type: ignore[misc]  # kazoo is untyped
    """kazoo's own ``GetChildren`` request (so its watcher is registered as a children watch), decoded faster."""

    @classmethod
    def deserialize(cls, buffer: bytes, offset: int) -> list[str]:
        return decode_children(buffer, offset)


def list_children_async(client: KazooClient, path: str, watcher: Callable[[WatchedEvent], None] | None) -> Any:
    """List ``path`` (chroot-relative) and leave ``watcher`` on it (None: no watch, as start-up lists the tokens);
    the returned async result gives the names."""
    result = client.handler.async_result()
    # kazoo's own get_children_async ends in the same call; there is no public way to change how it decodes.
    client._call(_WatchedListing(client.chroot + path, watcher), result)
    return result
