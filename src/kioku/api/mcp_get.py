"""``GET /mcp`` answers 405: kioku's MCP endpoint is stateless and offers no standalone SSE
stream.

The SDK would open a server-to-client event stream on ``GET`` and hold it open with nothing to
send (stateless mode has no session to push to), one connection and task per request, for as
long as the client keeps it. The Streamable HTTP transport lets a server that offers no such
stream answer ``405 Method Not Allowed`` instead; the SDK's client takes that in its stride.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from kioku.api.errors import error_body


class NoListenStream:
    """ASGI middleware: ``GET``/``HEAD`` on ``path`` → 405 with ``Allow: POST``."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.paths = {path, f"{path}/"}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["path"] not in self.paths
            or scope["method"] not in ("GET", "HEAD")
        ):
            await self.app(scope, receive, send)
            return
        message = "this MCP endpoint is stateless and offers no server-sent event stream: POST"
        body = json.dumps(error_body("method_not_allowed", message, None, [])).encode()
        headers = [
            (b"allow", b"POST"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 405, "headers": headers})
        await send(
            {"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body}
        )
