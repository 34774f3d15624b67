"""Numbers and names in words for people: ``1 memory``, ``2 memories``, ``accessed once``.

One place for the small rules every human-facing line follows (the CLI, the server's log
lines), so that no line says "1 memories" or prints a float to seventeen digits. Standard
library only: the quick CLI commands import it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def count(n: int, singular: str, plural: str | None = None) -> str:
    """``1 memory``, ``2 memories``, ``0 edges``: a number with its noun in the right form
    (``plural`` defaults to ``singular + "s"``)."""
    return f"{n} {singular if n == 1 else plural or singular + 's'}"


def times(n: int) -> str:
    """How often: ``never``, ``once``, ``twice``, ``3 times``."""
    return {0: "never", 1: "once", 2: "twice"}.get(n) or f"{n} times"


def number(value: object, places: int = 2) -> str:
    """A figure for reading: a float to ``places`` decimals (``0.19``, not
    ``0.18999956919658792``), a whole number as it is, anything else as text."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{places}f}"
    return str(value)


def plain(value: object) -> str:
    """Any JSON-like value in words, never Python's repr: ``none``, ``yes``/``no``, a float
    to six significant digits, a list joined by commas, a mapping as ``name value, ...``."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list | tuple):
        return ", ".join(plain(item) for item in value) or "none"
    if isinstance(value, Mapping):
        parts = [f"{str(k).replace('_', ' ')} {plain(v)}" for k, v in value.items()]
        return ", ".join(parts) or "none"
    return str(value)


def quoted(text: str) -> str:
    """Text a person typed, set off in double quotes (not Python's ``'repr'``)."""
    return f'"{text}"'


def listing(items: Iterable[str], empty: str = "none") -> str:
    """``a, b and c``; ``empty`` when there is nothing."""
    words = list(items)
    if not words:
        return empty
    if len(words) == 1:
        return words[0]
    return f"{', '.join(words[:-1])} and {words[-1]}"


def duration(seconds: float) -> str:
    """A span for reading: ``45 s``, ``12 min``, ``3 h 5 min``, ``2 days 4 h``."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes = whole // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{count(days, 'day')} {hours} h" if hours else count(days, "day")
