"""What a tool reads the runtime through: the MCP SDK's typed request context.

``build_mcp`` gives the server a lifespan that yields one ``ToolState`` (the runtime, and who
is calling); the SDK hands it to every request as ``ctx.request_context.lifespan_context``,
on stdio, on streamable HTTP and in-process alike. So the tools are plain module-level
functions: ``caller(ctx)`` is all they need to reach a service.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
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
    session: str = field(default_factory=lambda: uuid.uuid4().hex)
    """This server's one MCP session when it serves one client (stdio: a process is a
    session); over HTTP each client's session is named by its ``Mcp-Session-Id``."""


ToolContext = Context[ToolState, Any]
"""The context a tool declares (the SDK injects it; it is not a tool argument)."""


def caller(ctx: ToolContext) -> tuple[Runtime, Principal]:
    """The runtime and the calling principal of a tool call."""
    state = ctx.request_context.lifespan_context
    return state.runtime(), state.principal_of(ctx)


SESSION_HEADER = "mcp-session-id"
_SESSION_ID = re.compile(r"[\x21-\x7e]{1,128}")  # visible ASCII, as the MCP spec requires
SESSION_THREAD_PREFIX = "mcp:"


def session_thread(ctx: ToolContext) -> str | None:
    """The thread of the caller's MCP session (docs/mcp.md, "Sessions are threads"):
    ``mcp:<Mcp-Session-Id>`` over HTTP (kioku hands every client one at initialize), the
    server's own session on stdio; ``None`` over HTTP from a client that sends no session id."""
    context = ctx.request_context
    request = context.request
    if request is None:  # stdio (and in-process): one client, one session
        return SESSION_THREAD_PREFIX + context.lifespan_context.session
    value = getattr(request, "headers", {}).get(SESSION_HEADER, "")
    return SESSION_THREAD_PREFIX + value if _SESSION_ID.fullmatch(value) else None
