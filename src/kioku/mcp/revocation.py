"""A shim for the MCP SDK's token revocation endpoint (mcp 2.3.0).

Its request model declares ``client_secret`` without a default, so a public client (no secret:
the only kind kioku registers) that revokes a token as RFC 7009 describes gets a 400. This
middleware adds an empty ``client_secret`` field to such form posts; the SDK's client check
ignores it for ``token_endpoint_auth_method: none``. Remove it when the SDK is fixed.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

from kioku.asgi_body import read_body, replaying


class PublicClientRevocation:
    """ASGI middleware: complete ``/revoke`` form posts that carry no ``client_secret``."""

    def __init__(self, app: ASGIApp, path: str = "/revoke") -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        if body is None:
            return  # the client went away
        if "client_secret" not in parse_qs(body.decode("latin-1")):
            body += b"&client_secret=" if body else b"client_secret="
        headers = [(k, v) for k, v in scope["headers"] if k != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await self.app({**scope, "headers": headers}, replaying(body, receive), send)
