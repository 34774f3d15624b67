"""Client text the server can store and send back: valid Unicode, no NUL, bounded nesting.

JSON may escape a lone UTF-16 surrogate (``"\\udfff"``). Python decodes it into a ``str``, but
no UTF-8 encoder (SQLite, psycopg, a JSON answer) can write it out again. JSON may also escape
a NUL character (``"\\u0000"``), which PostgreSQL stores in neither ``text`` nor ``jsonb`` and
at which SQLite's ``length()`` stops counting. And pydantic cannot serialize a value nested
about 255 deep. All three are found here, in the raw input of a request model or of an MCP
tool's arguments, before anything is stored: strings anywhere (also inside JSON values, and
as object keys), and arrays/objects nested deeper than ``MAX_JSON_DEPTH``.

The same text rule (``text_problem``) holds for what reaches the server outside a JSON body:
the URL path, query parameters, header values and form fields (``kioku.api.storable_text``),
OAuth client metadata (``kioku.mcp.registration``) and cursors (``kioku.service.cursors``).
"""

from __future__ import annotations

import re
from typing import Any

MAX_JSON_DEPTH = 32
"""How deep a field's value may nest arrays and objects (``[[1]]`` is 2 deep)."""

_SURROGATE = re.compile("[\ud800-\udfff]")
NOT_UNICODE = "is not valid Unicode text (it holds a lone UTF-16 surrogate such as \\udfff)"
HOLDS_NUL = "holds a NUL character (\\u0000), which cannot be stored; remove it"
TOO_DEEP = f"nests arrays/objects deeper than {MAX_JSON_DEPTH} levels"

Loc = tuple[str | int, ...]


def loc_path(prefix: str, loc: Loc) -> str:
    """``prefix`` and a location as a field path: ``items[1].content``."""
    return prefix + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


def is_unicode(text: str) -> bool:
    """True when ``text`` can be written as UTF-8 (it holds no lone surrogate)."""
    return _SURROGATE.search(text) is None


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored, said after the name of the field holding it (``content
    holds a NUL character...``); ``None`` when it can. Of valid Unicode, PostgreSQL refuses
    only NUL, in ``text`` and in ``jsonb`` alike: every other character is stored."""
    if "\x00" in text:
        return HOLDS_NUL
    return None if is_unicode(text) else NOT_UNICODE


def find_unstorable(data: Any) -> tuple[Loc, str] | None:
    """The first place in ``data`` (raw input: dicts, lists, scalars) that cannot be stored,
    as its location and what is wrong there; ``None`` when all of it can. A bad object key
    is reported at the object holding it (the key itself cannot be printed)."""
    return _walk(data, (), 0)


def exceeds_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when ``value`` nests arrays/objects deeper than ``limit`` levels."""
    return _walk(value, (), 1, limit=limit, strings=False) is not None


def _walk(
    value: Any, loc: Loc, depth: int, *, limit: int = MAX_JSON_DEPTH, strings: bool = True
) -> tuple[Loc, str] | None:
    # ``depth`` is how many containers deep ``value`` is, if it is one (a field value: 1).
    if isinstance(value, str):
        problem = text_problem(value) if strings else None
        return None if problem is None else (loc, problem)
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    if depth > limit:
        return loc, TOO_DEEP
    for key, item in items:
        problem = text_problem(key) if strings and isinstance(key, str) else None
        if problem is not None:
            return loc, f"has an object key that {problem}"
        found = _walk(item, (*loc, key), depth + 1, limit=limit, strings=strings)
        if found is not None:
            return found
    return None
