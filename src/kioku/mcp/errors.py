"""Domain and validation errors → MCP tool errors the model can read and correct."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from kioku.errors import KiokuError, field_path, first_error

P = ParamSpec("P")
R = TypeVar("R")


def describe(exc: KiokuError | ValidationError) -> str:
    """``not_found (memory_id): memory 'x' not found`` — code, field, message in one line."""
    if isinstance(exc, ValidationError):
        errors = exc.errors()
        unknown = [_path(e["loc"]) for e in errors if e["type"] == "extra_forbidden"]
        if unknown:
            # Every unknown argument at once: a model fixing one typo should see them all.
            names = ", ".join(unknown)
            return f"invalid_input ({names}): unknown argument(s) {names}, not taken here"
        field, message = first_error(exc)
        return f"invalid_input ({field or 'arguments'}): {message.removeprefix('Value error, ')}"
    where = f" ({exc.field})" if exc.field else ""
    return f"{exc.code}{where}: {exc.message}"


def _path(loc: tuple[int | str, ...]) -> str:
    # An error about the arguments as a whole (a bad key at their top) has no location.
    return field_path(loc) or "arguments"


def tool_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Raise what the service refused as a ``ToolError`` (the model sees the message); anything
    else stays a crash, whose text the SDK keeps on the server."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (KiokuError, ValidationError) as exc:
            raise ToolError(describe(exc)) from None

    return wrapper
