"""kazoo's threading handler, waiting on its sockets with one ``poll(2)`` call.

kazoo's connection thread waits for its sockets several times per request and per answer (before sending,
before reading a header, before reading a body). Its default handler does each wait with a new ``selectors``
object: an epoll instance created, two descriptors registered, one wait, the instance closed, all in Python,
some 100 µs a wait on this machine, which made up half of what a ZooKeeper round trip cost kts's CPU. ``poll``
needs no kernel object and one system call, and it has no limit on descriptor numbers either (kazoo left
``select()`` for that limit). Same answers: the file objects ready for reading, for writing, and none for
exceptional conditions (kazoo asks for none); a hang-up or an error counts as ready, so the read or write that
follows reports it; a closed socket raises ``TypeError`` and an invalid descriptor ``ValueError``, as from
kazoo's own helper.

``select`` is the handler method kazoo's connection calls for every wait (``IHandler.select``); the handler is
kazoo's public extension point (``KazooClient(handler=...)``).
"""

from __future__ import annotations

import select
from typing import Any

from kazoo.handlers.threading import SequentialThreadingHandler

_READABLE = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR
_WRITABLE = select.POLLOUT | select.POLLHUP | select.POLLERR


class PollingHandler(SequentialThreadingHandler):  # type: ignore[misc]  # kazoo is untyped
    def select(
        self, rlist: list[Any], wlist: list[Any], xlist: list[Any], timeout: float | None = None
    ) -> tuple[list[Any], list[Any], list[Any]]:
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must be non-negative")
        masks: dict[int, int] = {}
        for fileobj in rlist:
            fd = _fd(fileobj)
            masks[fd] = masks.get(fd, 0) | select.POLLIN | select.POLLPRI
        for fileobj in wlist:
            fd = _fd(fileobj)
            masks[fd] = masks.get(fd, 0) | select.POLLOUT
        poller = select.poll()
        for fd, mask in masks.items():
            poller.register(fd, mask)
        ready = dict(poller.poll(None if timeout is None else timeout * 1000))
        if any(events & select.POLLNVAL for events in ready.values()):
            raise ValueError("Invalid event mask or fd")
        readable = [fileobj for fileobj in rlist if ready.get(_fd(fileobj), 0) & _READABLE]
        writable = [fileobj for fileobj in wlist if ready.get(_fd(fileobj), 0) & _WRITABLE]
        return readable, writable, []


def _fd(fileobj: Any) -> int:
    fd = fileobj if isinstance(fileobj, int) else int(fileobj.fileno())
    if fd < 0:  # a closed socket: kazoo's own helper raises the same
        raise TypeError(f"Invalid file descriptor: {fd}")
    return fd
