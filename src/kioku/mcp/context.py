"""What a tool reads the runtime through: the MCP SDK's typed request context.

``build_mcp`` gives the server a lifespan that yields one ``ToolState`` (the runtime, and who
is calling); the SDK hands it to every request as ``ctx.request_context.lifespan_context``,
on stdio, on streamable HTTP and in-process alike. So the tools are plain module-level
functions: ``caller(ctx)`` is all they need to reach a service.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import Context

from kioku.runtime import Runtime
from kioku.service.principal import Principal

PrincipalOf = Callable[[Context[Any, Any]], Principal]
"""Who is calling this tool: the local owner on stdio and loopback dev, the key's owner later."""


@dataclass(frozen=True)
class ToolState:
    """The server-wide state every tool reads: the runtime (read at call time: an app's
    runtime is opened by its lifespan, after the tools are built) and the principal hook."""

    runtime: Callable[[], Runtime]
    principal_of: PrincipalOf


ToolContext = Context[ToolState, Any]
"""The context a tool declares (the SDK injects it; it is not a tool argument)."""


def caller(ctx: ToolContext) -> tuple[Runtime, Principal]:
    """The runtime and the calling principal of a tool call."""
    state = ctx.request_context.lifespan_context
    return state.runtime(), state.principal_of(ctx)
