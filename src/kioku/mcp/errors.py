"""Domain and validation errors → MCP tool errors the model can read and correct."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from kioku.errors import KiokuError

P = ParamSpec("P")
R = TypeVar("R")


def describe(exc: KiokuError | ValidationError) -> str:
    """``not_found (memory_id): memory 'x' not found`` — code, field, message in one line."""
    if isinstance(exc, ValidationError):
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        return f"invalid_input ({field}): {error['msg']}" if field else error["msg"]
    where = f" ({exc.field})" if exc.field else ""
    return f"{exc.code}{where}: {exc.message}"


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
