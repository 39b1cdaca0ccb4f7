"""Which notifications a follower handles: those named after the greatest name handled, in creation order."""

from __future__ import annotations

from app.storage.zk.change_follower import new_names, next_name


def _name(sequence: int) -> str:
    return f"token_change_{sequence:010d}"


def test_the_names_after_the_latest_in_sequence_order_whatever_order_they_are_listed_in() -> None:
    listed = [_name(n) for n in (12, 3, 10, 9, 11, 2)]  # ZooKeeper lists children in no particular order
    assert new_names(listed, _name(9)) == [_name(10), _name(11), _name(12)]


def test_zero_padding_keeps_ten_after_nine() -> None:
    assert new_names([_name(10), _name(9)], _name(8)) == [_name(9), _name(10)]


def test_a_listing_older_than_what_was_handled_has_nothing_new() -> None:
    assert new_names([_name(1), _name(2)], _name(5)) == []  # a late or stale listing: handled already


def test_purged_names_leave_no_gap_that_matters() -> None:
    assert new_names([_name(200), _name(201)], _name(7)) == [_name(200), _name(201)]


def test_at_first_everything_is_new() -> None:
    assert new_names([_name(1)], "") == [_name(1)]


def test_the_next_name_is_the_sequence_plus_one_zero_padded() -> None:
    assert next_name(_name(9)) == _name(10)
    assert next_name("change_0000000041") == "change_0000000042"


def test_no_guess_before_anything_was_handled_or_for_names_that_are_not_sequential() -> None:
    assert next_name("") is None
    assert next_name("0000000001") is None  # a sequence with no prefix is no name kts follows
    assert next_name("token_change_12") is None
    assert next_name("token_change_00000000x1") is None


def test_no_guess_where_the_counter_wraps_to_negative_numbers() -> None:
    assert next_name(_name(2**31 - 2)) == _name(2**31 - 1)
    assert next_name(_name(2**31 - 1)) is None
