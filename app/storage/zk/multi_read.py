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
- ``kazoo.protocol.serialization``: ``GetData.type`` and ``stat_struct``; and ``kazoo.exceptions.EXCEPTIONS``
  (error code -> exception class). The records themselves (``MultiHeader``, a ``GetData`` request, a buffer)
  are packed here with structs, in ZooKeeper's jute layout (tests/unit/storage/zk/test_multi_read.py pins the
  bytes, and checks them against kazoo's own records).
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.serialization import GetData, stat_struct
from kazoo.protocol.states import ZnodeStat

MULTI_READ_OPCODE = 22
_ERROR_RESULT = -1
# The records of the wire format, packed and unpacked with structs rather than kazoo's record objects (one
# object per record, to serialize and to read, was some 0.4 s of a start-up reading 100k tokens):
_HEADER = struct.Struct("!iBi")  # MultiHeader: operation type, done, error
_LENGTH = struct.Struct("!i")  # before a string or a buffer (-1: none), and an error result's code
_GET_DATA_HEADER = _HEADER.pack(GetData.type, 0, -1)
_DONE_HEADER = _HEADER.pack(-1, 1, -1)
_NO_WATCH = b"\x00"  # GetData's watch flag, after its path

# After a GetData answer's data: its Stat's version (behind czxid, mzxid, ctime and mtime), then the rest of the Stat
# and the next MultiHeader, read in one go by the answer that keeps only each znode's data and version.
_VERSION_THEN_HEADER = struct.Struct("!32xi32xiBi")
assert _VERSION_THEN_HEADER.size == stat_struct.size + _HEADER.size

# One answer of a multi read: the znode's data and stat, or the error ZooKeeper gave for that path.
ReadResult = tuple[bytes, ZnodeStat] | Exception
# The same, with only the Stat's version (``read_versions_async``).
VersionRead = tuple[bytes, int] | Exception


class MultiReadNotSupported(Exception):
    """The server answered something that is not a multiRead response (a ZooKeeper older than 3.6)."""


class _MultiRead(NamedTuple):
    """A request kazoo's connection can send: it needs ``type``, ``serialize`` and ``deserialize``."""

    paths: tuple[str, ...]
    type: int = MULTI_READ_OPCODE
    # Written before each path (the chroot, and a folder's path for the names in it): a caller reading the 100k
    # tokens of one folder makes no path of each, which was two strings a token.
    prefix: str = ""

    def serialize(self) -> bytes | bytearray:
        prefix = self.prefix.encode("utf-8")
        encoded = [path.encode("utf-8") for path in self.paths]
        if len(set(map(len, encoded))) == 1:
            # Every path of one length (token ids have one): each operation is the same header, the prefix, the path
            # and the watch flag, so the request is one join, not appends for each (some 10 ms of 100k reads).
            head = _GET_DATA_HEADER + _LENGTH.pack(len(prefix) + len(encoded[0])) + prefix
            return head + (_NO_WATCH + head).join(encoded) + _NO_WATCH + _DONE_HEADER
        body = bytearray()
        for path in encoded:
            body += _GET_DATA_HEADER
            body += _LENGTH.pack(len(prefix) + len(path))
            body += prefix
            body += path
            body += _NO_WATCH
        body += _DONE_HEADER
        return body

    @classmethod
    def deserialize(cls, buffer: bytes, offset: int) -> list[ReadResult]:
        results: list[ReadResult] = []
        try:
            op_type, done, _ = _HEADER.unpack_from(buffer, offset)
            offset += _HEADER.size
            while done != 1:
                if op_type == GetData.type:
                    length = _LENGTH.unpack_from(buffer, offset)[0]
                    offset += _LENGTH.size
                    data = b""  # a znode without data (length -1)
                    if length >= 0:
                        data = buffer[offset : offset + length]
                        offset += length
                    results.append((data, ZnodeStat._make(stat_struct.unpack_from(buffer, offset))))
                    offset += stat_struct.size
                elif op_type == _ERROR_RESULT:
                    code = _LENGTH.unpack_from(buffer, offset)[0]
                    offset += _LENGTH.size
                    results.append(EXCEPTIONS[code]())
                else:
                    raise MultiReadNotSupported(f"unexpected operation type {op_type} in a multiRead answer")
                op_type, done, _ = _HEADER.unpack_from(buffer, offset)
                offset += _HEADER.size
        except MultiReadNotSupported:
            raise
        except Exception as exc:  # a short or foreign buffer: struct.error, IndexError
            raise MultiReadNotSupported(f"unreadable multiRead answer: {exc!r}") from exc
        return results


class _MultiReadVersions(_MultiRead):
    """The same request; its answer keeps only each znode's data and version. Start-up reads every token and uses
    nothing else of its Stat: building a ``ZnodeStat`` of eleven fields per znode was two thirds of the decoding
    (some 70 ms of CPU for 100k tokens)."""

    __slots__ = ()

    @classmethod
    def deserialize(cls, buffer: bytes, offset: int) -> list[VersionRead]:
        results: list[VersionRead] = []
        append = results.append
        get_data = GetData.type
        read_length, read_header, read_version_then_header = (
            _LENGTH.unpack_from,
            _HEADER.unpack_from,
            _VERSION_THEN_HEADER.unpack_from,
        )
        try:
            op_type, done, _ = read_header(buffer, offset)
            offset += _HEADER.size
            while done != 1:
                if op_type == get_data:
                    length = read_length(buffer, offset)[0]
                    offset += _LENGTH.size
                    data = b""  # a znode without data (length -1)
                    if length >= 0:
                        data = buffer[offset : offset + length]
                        offset += length
                    version, op_type, done, _ = read_version_then_header(buffer, offset)
                    offset += _VERSION_THEN_HEADER.size
                    append((data, version))
                elif op_type == _ERROR_RESULT:
                    append(EXCEPTIONS[read_length(buffer, offset)[0]]())
                    offset += _LENGTH.size
                    op_type, done, _ = read_header(buffer, offset)
                    offset += _HEADER.size
                else:
                    raise MultiReadNotSupported(f"unexpected operation type {op_type} in a multiRead answer")
        except MultiReadNotSupported:
            raise
        except Exception as exc:  # a short or foreign buffer: struct.error, IndexError, an unknown code
            raise MultiReadNotSupported(f"unreadable multiRead answer: {exc!r}") from exc
        return results


def read_many_async(client: KazooClient, paths: list[str]) -> Any:
    """Send one multiRead for ``paths`` (chroot-relative, as kazoo's own calls take them); the returned
    async result gives a ``ReadResult`` per path, in order."""
    result = client.handler.async_result()
    request = _MultiRead(tuple(paths), prefix=client.chroot)
    # kazoo's own get_async ends in the same call; there is no public way to send a request type it lacks.
    client._call(request, result)
    return result


def read_versions_async(client: KazooClient, paths: list[str], folder: str = "") -> Any:
    """``read_many_async``, each answer a znode's data and its version only (``VersionRead``), not its whole Stat;
    with ``folder``, ``paths`` are names in that folder (its path ends with a slash)."""
    result = client.handler.async_result()
    client._call(_MultiReadVersions(tuple(paths), prefix=client.chroot + folder), result)
    return result
