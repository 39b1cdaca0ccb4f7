"""Many znodes read in one round trip with ZooKeeper's ``multiRead`` (ZooKeeper 3.6+).

kazoo has no API for it, and reading 100k tokens one ``get`` at a time costs kazoo about 110 µs of Python
per request (a wake-up byte, a loop turn and a callback each), which made start-up take longer than the
reads themselves. One ``multiRead`` carries hundreds of ``getData`` operations and is answered with one
buffer, decoded here in a tight loop. The wire format is ZooKeeper's ``MultiOperationRecord`` /
``MultiResponse``: each operation behind a ``MultiHeader``, a failed read answered by an error header
instead of failing the whole request.

Servers older than 3.6 do not know the operation; callers fall back to pipelined ``get`` requests.

An adapter over private parts of kazoo, fenced here: no other module uses them. Relied on (and checked by
tests/unit/storage/zk/test_kazoo_private_api.py, which fails saying which one moved; pyproject.toml keeps
kazoo below the next minor version):
- ``KazooClient._call(request, async_object)``: queues any request object with ``type``, ``serialize()``
  and ``deserialize(buffer, offset)``; the connection answers ``async_object`` with what ``deserialize``
  returns, or with ``EXCEPTIONS[err]()`` when the whole request fails;
- ``kazoo.protocol.serialization``: ``GetData`` (its ``type`` and ``serialize``), ``MultiHeader`` (fields
  ``type``, ``done``, ``err``; ``serialize``, ``deserialize``), ``read_buffer``, ``int_struct``,
  ``stat_struct``; and ``kazoo.exceptions.EXCEPTIONS`` (error code -> exception class).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.serialization import GetData, MultiHeader, int_struct, read_buffer, stat_struct
from kazoo.protocol.states import ZnodeStat

MULTI_READ_OPCODE = 22
_ERROR_RESULT = -1

# One answer of a multi read: the znode's data and stat, or the error ZooKeeper gave for that path.
ReadResult = tuple[bytes, ZnodeStat] | Exception


class MultiReadNotSupported(Exception):
    """The server answered something that is not a multiRead response (a ZooKeeper older than 3.6)."""


class _MultiRead(NamedTuple):
    """A request kazoo's connection can send: it needs ``type``, ``serialize`` and ``deserialize``."""

    paths: tuple[str, ...]
    type: int = MULTI_READ_OPCODE

    def serialize(self) -> bytearray:
        body = bytearray()
        for path in self.paths:
            body += MultiHeader(GetData.type, False, -1).serialize()
            body += GetData(path, None).serialize()
        body += MultiHeader(-1, True, -1).serialize()
        return body

    @classmethod
    def deserialize(cls, buffer: bytes, offset: int) -> list[ReadResult]:
        results: list[ReadResult] = []
        try:
            header, offset = MultiHeader.deserialize(buffer, offset)
            while not header.done:
                if header.type == GetData.type:
                    data, offset = read_buffer(buffer, offset)
                    stat = ZnodeStat._make(stat_struct.unpack_from(buffer, offset))
                    offset += stat_struct.size
                    results.append((data or b"", stat))
                elif header.type == _ERROR_RESULT:
                    code = int_struct.unpack_from(buffer, offset)[0]
                    offset += int_struct.size
                    results.append(EXCEPTIONS[code]())
                else:
                    raise MultiReadNotSupported(f"unexpected operation type {header.type} in a multiRead answer")
                header, offset = MultiHeader.deserialize(buffer, offset)
        except MultiReadNotSupported:
            raise
        except Exception as exc:  # a short or foreign buffer: struct.error, IndexError
            raise MultiReadNotSupported(f"unreadable multiRead answer: {exc!r}") from exc
        return results


def read_many_async(client: KazooClient, paths: list[str]) -> Any:
    """Send one multiRead for ``paths`` (chroot-relative, as kazoo's own calls take them); the returned
    async result gives a ``ReadResult`` per path, in order."""
    result = client.handler.async_result()
    request = _MultiRead(tuple(client.chroot + path for path in paths))
    # kazoo's own get_async ends in the same call; there is no public way to send a request type it lacks.
    client._call(request, result)
    return result
