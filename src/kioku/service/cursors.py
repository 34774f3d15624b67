"""Opaque keyset cursors: a JSON list of the sort key, base64url-encoded."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from kioku.errors import InvalidInputError
from kioku.models.json_input import text_problem


def pack_cursor(*parts: str | int) -> str:
    """An opaque cursor holding the sort key of the last item of a page."""
    raw = json.dumps(list(parts), ensure_ascii=False)
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def unpack_cursor(cursor: str, *types: type) -> list[Any]:
    """The parts of a cursor from ``pack_cursor``, checked against ``types``; else a 422."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value: Any = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if not isinstance(value, list) or len(value) != len(types):
            raise ValueError
        for part, expected in zip(value, types, strict=True):
            # bool is an int to Python; a cursor never holds one.
            if not isinstance(part, expected) or isinstance(part, bool):
                raise ValueError
            # Text no store can hold (a NUL, a lone surrogate) was never issued, and as a
            # query parameter it would fail the query on PostgreSQL.
            if isinstance(part, str) and text_problem(part) is not None:
                raise ValueError
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise InvalidInputError(
            "cursor is not a cursor this server issued", field="cursor"
        ) from None
    return value
