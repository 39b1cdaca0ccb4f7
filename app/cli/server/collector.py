"""The cyclic garbage collector paused while a server starts: its own module, so that a server started other than by
the ``kts`` command (bench/serve_variant.py) pauses it without importing the command's parsers."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused_for_startup() -> Iterator[None]:
    """The cyclic garbage collector paused from before the server's imports: they make some half a million objects
    that live as long as the process, and the collections they set off cost a tenth of a second of start-up for
    nothing. The runtime's start (app/storage/loaded_for_good.py) collects once, freezes what is loaded by
    then and resumes the collector; this only makes sure it is resumed should start-up end earlier."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
