"""The report's charts: matplotlib ``Figure`` objects (no pyplot state), returned as base64 PNG.

Each function takes plain Python values (``report_data.ReportData``'s fields) and returns a ``Chart``; the
template embeds it as a data URI, so the page links to nothing.
"""

from __future__ import annotations

import base64
import colorsys
import io
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator, StrMethodFormatter

OTHERS = "(others)"
NONE = "(none)"
OTHERS_COLOUR = "#9e9e9e"  # grey: the rest, never a colour of the palette
# matplotlib's tab10 without its grey: the usual colours for up to nine series.
_TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")
_GOLDEN = 0.618033988749895
REFUSED, FAILED_LOGIN = _TAB10[3], _TAB10[1]


def palette(count: int) -> list[str]:
    """``count`` distinct colours, one per series, none of them the grey of ``OTHERS``. Beyond nine, hues
    step by the golden ratio (so neighbours in a stack differ most) and lightness alternates."""
    if count <= len(_TAB10):
        return list(_TAB10[:count])
    colours = []
    for index in range(count):
        red, green, blue = colorsys.hls_to_rgb((index * _GOLDEN) % 1.0, (0.38, 0.55, 0.72)[index % 3], 0.7)
        colours.append(f"#{round(red * 255):02x}{round(green * 255):02x}{round(blue * 255):02x}")
    return colours


@dataclass(frozen=True, slots=True)
class Chart:
    alt: str
    png_base64: str


def _chart(figure: Figure, alt: str) -> Chart:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})  # constrained layout fits it
    return Chart(alt, base64.b64encode(buffer.getvalue()).decode("ascii"))


def _figure(width: float = 9.0, height: float = 3.6) -> tuple[Figure, Any]:
    figure = Figure(figsize=(width, height), dpi=96, layout="constrained")
    return figure, figure.subplots()


def _counts_on(axis: Any) -> None:
    """Whole numbers with thousands separators, never an offset such as ``1e6``."""
    axis.set_major_locator(MaxNLocator(integer=True))
    axis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))


def stacked_daily(rows: Sequence[tuple[str, str, int]], title: str) -> Chart:
    """Tokens per day, one stacked series per label (``OTHERS`` last)."""
    dates = sorted({date for date, _label, _tokens in rows})
    totals: dict[str, int] = defaultdict(int)
    for _date, label, tokens in rows:
        totals[label] += tokens
    labels = sorted(totals, key=lambda label: (label == OTHERS, -totals[label], label))
    counts = {(date, label): tokens for date, label, tokens in rows}
    colours = iter(palette(sum(label != OTHERS for label in labels)))
    figure, axes = _figure()
    # One collection of rectangles per series, not ``axes.bar``'s artist per bar: a month of days times 21
    # series is some 650 artists, each placed, measured for the layout and drawn apart (most of the page's
    # drawing time). The bars look the same: 0.8 wide, centred on their day, stacked from zero.
    bottoms = [0] * len(dates)
    legend = []
    for label in labels:
        heights = [counts.get((date, label), 0) for date in dates]
        colour = OTHERS_COLOUR if label == OTHERS else next(colours)
        bars = PolyCollection(
            [_bar(day, bottom, height) for day, (bottom, height) in enumerate(zip(bottoms, heights, strict=True))],
            facecolors=colour,
            linewidths=0,
        )
        bars.sticky_edges.y.append(0)
        axes.add_collection(bars)
        legend.append(Patch(color=colour, label=label))
        bottoms = [bottom + height for bottom, height in zip(bottoms, heights, strict=True)]
    axes.autoscale_view()
    axes.set_xticks(range(len(dates)), dates)
    axes.set_xlabel("day (UTC)")
    axes.set_ylabel("tokens issued per day")
    _counts_on(axes.yaxis)
    axes.set_title(title)
    axes.tick_params(axis="x", labelrotation=60, labelsize=7)
    axes.legend(handles=legend, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _chart(figure, title)


def _bar(position: int, bottom: float, height: float) -> list[tuple[float, float]]:
    """The corners of a bar 0.8 wide centred on ``position``, from ``bottom`` up ``height``."""
    left, right, top = position - 0.4, position + 0.4, bottom + height
    return [(left, bottom), (left, top), (right, top), (right, bottom)]


def impersonation_matrix(rows: Sequence[tuple[str, str, int, int]]) -> Chart:
    """Tokens issued per (requester, owner) as a heat map with the counts written in."""
    requesters = sorted({row[0] for row in rows})
    owners = sorted({row[1] for row in rows})
    cells = [[0] * len(owners) for _ in requesters]
    for requester, owner, tokens, _refused in rows:
        cells[requesters.index(requester)][owners.index(owner)] = tokens
    figure, axes = _figure(max(4.0, 1.0 + 0.5 * len(owners)), max(2.5, 1.0 + 0.35 * len(requesters)))
    image = axes.imshow(cells, cmap="Blues", aspect="auto", vmin=0)
    axes.set_xticks(range(len(owners)), owners, rotation=60, ha="right", fontsize=7)
    axes.set_yticks(range(len(requesters)), requesters, fontsize=7)
    axes.set_xlabel("owner")
    axes.set_ylabel("requester")
    peak = max((max(line) for line in cells), default=0)
    for y, line in enumerate(cells):
        for x, tokens in enumerate(line):
            if tokens:
                colour = "white" if tokens > peak / 2 else "black"
                axes.text(x, y, str(tokens), ha="center", va="center", fontsize=7, color=colour)
    _counts_on(figure.colorbar(image, ax=axes, label="tokens issued").ax.yaxis)
    return _chart(figure, "Requester to owner impersonation matrix")


def bars(labels: Sequence[str], series: dict[str, Sequence[float]], title: str, *, xlabel: str, ylabel: str) -> Chart:
    """Grouped bars: one group per label, one bar per series."""
    figure, axes = _figure(height=3.2)
    width = 0.8 / max(1, len(series))
    for index, ((name, values), colour) in enumerate(zip(series.items(), palette(len(series)), strict=True)):
        positions = [x + (index - (len(series) - 1) / 2) * width for x in range(len(labels))]
        axes.bar(positions, values, width=width, label=name, color=colour)
    axes.set_xticks(range(len(labels)), labels, fontsize=8)
    _counts_on(axes.yaxis)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    if len(series) > 1:
        axes.legend(fontsize=8)
    return _chart(figure, title)


def denials(rows: Sequence[tuple[str, int, int]], title: str) -> Chart:
    """Refused requests and authentication failures per name, as stacked horizontal bars."""
    names = [name for name, _refusals, _auth in rows][::-1]
    refusals = [refused for _name, refused, _auth in rows][::-1]
    failures = [auth for _name, _refused, auth in rows][::-1]
    figure, axes = _figure(height=max(2.0, 0.8 + 0.28 * len(rows)))
    axes.barh(names, refusals, label="refused requests", color=REFUSED)
    axes.barh(names, failures, left=refusals, label="authentication failures", color=FAILED_LOGIN)
    axes.tick_params(axis="y", labelsize=7)
    _counts_on(axes.xaxis)
    axes.set_xlabel("denials (attempts) in the period")
    axes.set_title(title)
    axes.legend(fontsize=8)
    return _chart(figure, title)


def bursts(rows: Sequence[dict[str, Any]]) -> Chart:
    """Each flagged hour's denials against its principal's threshold."""
    labels = [f"{burst['principal'] or NONE}\n{burst['hour']}" for burst in rows]
    figure, axes = _figure(height=max(2.0, 0.8 + 0.4 * len(rows)))
    positions = list(range(len(rows)))[::-1]
    axes.barh(positions, [burst["denials"] for burst in rows], color=REFUSED, label="denials in the hour")
    axes.scatter([burst["threshold"] for burst in rows], positions, marker="|", s=200, color="black", label="threshold")
    axes.set_yticks(positions, labels, fontsize=7)
    _counts_on(axes.xaxis)
    axes.set_xlabel("denials (attempts) per hour")
    axes.set_ylabel("principal, hour (UTC)")
    axes.set_title("Bursts against each principal's own baseline")
    axes.legend(fontsize=8)
    return _chart(figure, "Denial bursts")
