"""Start-up's loads (every token, every ACL) live as long as the replica: the cyclic garbage collector pauses while
they run and never walks what they loaded again. Used by the runtime around its start-up, and by a backend's token
cache around its reloads."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def loaded_for_good() -> Iterator[None]:
    """What start-up loads (every token, every ACL) lives as long as the replica, in objects the cyclic garbage
    collector would otherwise walk again and again: several full collections while 100k tokens load (a third of
    the load's time), then one every so often while serving, each pausing every request for hundreds of ms at
    100k tokens. So the collector pauses while start-up runs, and what it loaded is then frozen (``gc.freeze``:
    never scanned again; freed as usual when no longer referenced, say a token swept). Garbage left by earlier
    work is collected first, so that freezing keeps none of it (tests start many replicas in one process), unless
    the collector was paused already: kts serve pauses it from its first import (app/cli/server/commands.py), and
    all it would find then is some 700 objects the imports dropped, for a walk of every object the imports made
    (0.1 s of start-up)."""
    if gc.isenabled():
        gc.collect()
    gc.disable()
    try:
        yield
        gc.freeze()
    finally:
        gc.enable()


@contextmanager
def reloaded_for_good() -> Iterator[None]:
    """``loaded_for_good`` around the token cache's loads: its first, inside start-up's own (which freezes at its
    end), and those after a lost session while serving, which would otherwise leave 100k tokens to be walked by
    every full collection from then on."""
    if not gc.isenabled():  # start-up's, or the one kts serve holds from its first import (app/cli/server/commands.py)
        yield
        return
    with loaded_for_good():
        yield
