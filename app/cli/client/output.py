"""How the client commands print: plain, unwrapped tables (as Kafka's tools print them) or JSON.

Tables are laid out by rich but never wrapped or cropped to the terminal width: a token id or HMAC cut in
two is useless, and scripts read these lines with ``awk``. rich is imported when a table is drawn, so that
registering the commands (``kts --help``) stays cheap.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from datetime import datetime, tzinfo
from typing import Any

KAFKA_DATE_FORMAT = "%Y-%m-%dT%H:%M"  # Kafka's tools print dates as yyyy-MM-dd'T'HH:mm, local time
_UNLIMITED_WIDTH = 100_000


def plain_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns separated by two spaces, a header line, no borders, no trailing spaces."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, padding=(0, 2, 0, 0), pad_edge=False, show_edge=False, header_style="")
    for column in columns:
        table.add_column(column, no_wrap=True, overflow="ignore")
    for row in rows:
        # Text, not str: a cell such as "[User:a]" must not be read as rich markup.
        table.add_row(*(Text(cell) for cell in row))
    buffer = io.StringIO()
    Console(file=buffer, width=_UNLIMITED_WIDTH, color_system=None, highlight=False).print(table)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())


def kafka_date(timestamp_ms: int, tz: tzinfo | None = None) -> str:
    moment = datetime.fromtimestamp(timestamp_ms / 1000, tz) if tz else datetime.fromtimestamp(timestamp_ms / 1000)
    return moment.strftime(KAFKA_DATE_FORMAT)


def to_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=False)
