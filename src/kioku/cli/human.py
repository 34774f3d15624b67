"""Output for people, and the same output when it goes down a pipe.

On a terminal a listing is a table sized to the window. Down a pipe (``kioku list | awk``)
nothing may be cut or wrapped at rich's default 80 columns: a listing is one record a line,
its fields separated by tabs and each whole (ids first, so ``awk '{print $1}'`` gives ids),
with no header or borders; a title goes to stderr, where a person still sees it. Lines of
text are never hard-wrapped down a pipe either (``make_console``). ``--json`` is the form for
programs and is not made here.

Importing this module stays cheap (the standard library only): rich loads when printing.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, TextIO

if TYPE_CHECKING:
    from rich.console import Console


def attached(stream: TextIO | Any) -> bool:
    """Whether ``stream`` is a terminal (a person reads it as it comes), not a pipe or file."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # closed
        return False


def make_console(*, stderr: bool) -> Console:
    """A rich console that never hard-wraps a line of text written to a pipe or file: a
    summary longer than 80 characters stays on its line, so line-based tools see one record
    a line. Tables and other layouts are drawn as rich draws them."""
    from rich.console import Console

    class PipeAwareConsole(Console):
        def print(self, *objects: Any, **options: Any) -> None:
            plain_text = all(isinstance(o, str) for o in objects)
            if options.get("soft_wrap") is None and plain_text and not attached(self.file):
                options["soft_wrap"] = True
            super().print(*objects, **options)

    return PipeAwareConsole(stderr=stderr)


@dataclass(frozen=True)
class Column:
    """A column of ``print_table``. ``whole``: never cut nor wrapped (ids, times)."""

    name: str
    whole: bool = False
    justify: Literal["left", "right"] = "left"
    style: str | None = None


Cell = str | tuple[str, str]
"""A cell's text, or (text, rich style) to colour it on a terminal."""


def print_table(
    columns: Sequence[Column], rows: Iterable[Sequence[Cell]], *, title: str | None = None
) -> None:
    """Rows for a person on a terminal (a table), or tab-separated records down a pipe."""
    from kioku.cli.common import console, escape

    rows = list(rows)
    if not attached(sys.stdout):
        if title:
            sys.stderr.write(title + "\n")
        for row in rows:
            sys.stdout.write("\t".join(_plain(_text(cell)) for cell in row) + "\n")
        sys.stdout.flush()
        return
    from rich.table import Table
    from rich.text import Text

    widths = [
        max([len(column.name)] + [len(_text(row[i])) for row in rows]) if column.whole else 0
        for i, column in enumerate(columns)
    ]
    needed = (
        sum(widths)
        + _GAP * (len(columns) - 1)
        + _NARROWEST * sum(not column.whole for column in columns)
    )
    if needed > console.width:  # a table would cut an id: a record a line, as in a pipe
        if title:
            console.print(escape(title), soft_wrap=True)
        for row in rows:
            console.print(escape("  ".join(_text(cell) for cell in row)), soft_wrap=True)
        return
    # No borders: aligned columns under a bold header, as docker ps or kubectl get print.
    table = Table(title=title, box=None, title_justify="left", pad_edge=False,
                  header_style="bold")  # fmt: skip
    for column, width in zip(columns, widths, strict=True):
        table.add_column(
            column.name,
            justify=column.justify,
            style=column.style,
            no_wrap=column.whole,
            min_width=width or None,
        )
    for row in rows:
        cells = [Text(cell[0], style=cell[1]) if isinstance(cell, tuple) else Text(cell)
                 for cell in row]  # fmt: skip
        table.add_row(*cells)
    console.print(table)


_GAP = 2
"""Spaces between two columns of a borderless table (rich's padding, one each side)."""
_NARROWEST = 12
"""Columns a wrapping column (a summary) needs at least to be readable."""


def _text(cell: Cell) -> str:
    return cell[0] if isinstance(cell, tuple) else cell


def _plain(text: str) -> str:
    """A field of a tab-separated record: no tab or line break inside it."""
    return " ".join(text.replace("\t", " ").splitlines())


def when(moment: datetime | str | None) -> str:
    """A time for people: UTC, to the second (``2026-12-05 17:37:06 UTC``); ``-`` for none.
    An ISO 8601 string (a server's JSON) is read first."""
    if moment is None:
        return "-"
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def print_fields(fields: Iterable[tuple[str, str | None]]) -> None:
    """``label: value`` lines for one record; a field without a value is left out."""
    from kioku.cli.common import console, escape

    for label, value in fields:
        if value is None or value == "":
            continue
        console.print(f"[bold]{escape(label)}[/bold]: {escape(value)}", soft_wrap=True)
