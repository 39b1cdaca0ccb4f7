"""The garbage collector around the loads of start-up and of reloads (app/storage/loaded_for_good.py)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from app.cli.server.collector import collector_paused_for_startup
from app.storage import loaded_for_good


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()


def test_a_reload_while_serving_pauses_the_collector_then_freezes_what_it_loaded() -> None:
    gc.enable()
    frozen = gc.get_freeze_count()
    with loaded_for_good.reloaded_for_good():
        assert not gc.isenabled()
        loaded = [[n] for n in range(1000)]  # lists: always tracked by the collector
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen + len(loaded)


def test_the_first_load_leaves_the_collector_and_the_freezing_to_start_up() -> None:
    with collector_paused_for_startup():
        frozen = gc.get_freeze_count()
        with loaded_for_good.reloaded_for_good():
            loaded = [[n] for n in range(1000)]  # lists: always tracked by the collector
        assert not gc.isenabled() and gc.get_freeze_count() == frozen  # start-up's own pause and freeze
        with loaded_for_good.loaded_for_good():
            pass
        assert gc.isenabled()  # start-up done: collecting again, what it loaded frozen
        assert gc.get_freeze_count() >= frozen + len(loaded)


def test_a_start_up_that_fails_before_loading_resumes_the_collector() -> None:
    with pytest.raises(RuntimeError), collector_paused_for_startup():
        assert not gc.isenabled()
        raise RuntimeError("no such key")
    assert gc.isenabled()


class _Node:
    pass


def _cyclic_garbage() -> weakref.ref[_Node]:
    node = _Node()
    node.itself = node  # type: ignore[attr-defined]
    return weakref.ref(node)  # once returned, only the collector can free the node


def test_start_up_in_a_process_that_worked_before_collects_its_garbage_before_freezing() -> None:
    gc.enable()
    garbage = _cyclic_garbage()
    with loaded_for_good.loaded_for_good():
        pass
    assert garbage() is None
