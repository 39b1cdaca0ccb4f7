"""Tombstones: added a batch at a time, each kept for its time from its last addition, then gone."""

from __future__ import annotations

from app.storage.zk.tombstones import Tombstones


class FakeTimer:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_batch_is_kept_for_its_time_then_goes_at_the_next_addition() -> None:
    timer = FakeTimer()
    tombstones = Tombstones(10.0, timer)
    tombstones.add_many(["a", "b"])
    timer.now += 9.0
    tombstones.add_many(["c"])
    assert sorted(tombstones) == ["a", "b", "c"]

    timer.now += 1.0
    tombstones.add_many([])

    assert sorted(tombstones) == ["c"]
    assert "a" not in tombstones
    assert len(tombstones) == 1


def test_an_id_tombstoned_again_lasts_from_its_last_addition() -> None:
    timer = FakeTimer()
    tombstones = Tombstones(10.0, timer)
    tombstones.add_many(["a"])
    timer.now += 5.0
    tombstones.add_many(["a"])
    timer.now += 5.0
    tombstones.add_many([])
    assert "a" in tombstones  # the first batch's deadline passed, not the second's

    timer.now += 5.0
    tombstones.add_many([])
    assert "a" not in tombstones


def test_clear_forgets_everything() -> None:
    tombstones = Tombstones(10.0, FakeTimer())
    tombstones.add_many(["a", "b"])
    tombstones.clear()
    assert list(tombstones) == []
