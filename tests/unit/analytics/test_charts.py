"""Charts: a palette that stays distinct for every series a chart can show (top-N plus "others"), and
labelled axes."""

from __future__ import annotations

import colorsys
import itertools

import pytest
from matplotlib.colors import to_rgb

from app.analytics import charts


def hls(colour: str) -> tuple[float, float, float]:
    return colorsys.rgb_to_hls(*to_rgb(colour))


@pytest.mark.parametrize("count", [1, 2, 9, 10, 20, 21, 50])
def test_the_palette_is_distinct_and_never_the_grey_of_the_others(count: int) -> None:
    colours = charts.palette(count)

    assert len(colours) == count == len(set(colours))
    assert charts.OTHERS_COLOUR not in colours
    assert all(hls(colour)[2] > 0.3 for colour in colours)  # saturated: none reads as grey
    for first, second in itertools.pairwise(colours):  # neighbours in a stack differ clearly
        (hue_a, light_a, _), (hue_b, light_b, _) = hls(first), hls(second)
        hue_gap = min(abs(hue_a - hue_b), 1 - abs(hue_a - hue_b))
        assert hue_gap > 0.05 or abs(light_a - light_b) > 0.1, (first, second)


def test_the_palette_is_the_same_every_time() -> None:
    assert charts.palette(21) == charts.palette(21)


def test_a_stacked_chart_of_the_top_twenty_and_the_others_draws() -> None:
    rows = [(f"2026-01-0{day}", f"User:u{rank}", 100 - rank) for day in range(1, 4) for rank in range(20)]
    rows += [(f"2026-01-0{day}", charts.OTHERS, 500) for day in range(1, 4)]

    chart = charts.stacked_daily(rows, "By owner (top 20)")

    assert chart.alt == "By owner (top 20)"
    assert chart.png_base64.startswith("iVBORw0KGgo")  # a PNG
