"""Session ids for MCP clients over streamable HTTP, without server-side sessions.

kioku's ``/mcp`` is stateless (any replica answers any request), so the SDK issues no
``Mcp-Session-Id``. The MCP spec lets a server assign one at initialization, and clients send
it back on every later request of that session; kioku keeps nothing for it, it only *names*
the session: ``remember`` calls that name no thread go to the thread ``mcp:<session id>``
(docs/mcp.md, "Sessions are threads"). Any replica reads it from the request, so nothing is
shared but the name.
"""

from __future__ import annotations

import secrets

from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = b"mcp-session-id"


class SessionIds:
    """Hands a new session id to a POST on ``path`` that carries none (the client's
    ``initialize``; a client echoes it from then on)."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope.get("method") != "POST"
            or scope.get("path", "").rstrip("/") != self.path.rstrip("/")
            or any(name.lower() == HEADER for name, _ in scope.get("headers") or [])
        ):
            await self.app(scope, receive, send)
            return
        session = secrets.token_urlsafe(16).encode()

        async def with_session(message: Message) -> None:
            if message["type"] == "http.response.start" and 200 <= message["status"] < 300:
                headers = list(message.get("headers") or [])
                if not any(name.lower() == HEADER for name, _ in headers):
                    message = {**message, "headers": [*headers, (HEADER, session)]}
            await send(message)

        await self.app(scope, receive, with_session)
