"""ASGI middleware that refuses request bodies over the size cap with a 413, before parsing."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kioku.api.errors import error_body


class BodySizeLimit:
    """Reads the body up to ``max_bytes`` before the app sees it; past that, answers 413.

    Counting inside the app's own ``receive`` does not work: FastAPI turns any error raised
    while it reads the body into a 400, so a chunked (length-less) oversized body must be
    refused here, before the app runs. The body is capped, so buffering it costs at most
    ``max_bytes``, which the app would have held anyway.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._reject(send)
            return
        chunks: list[bytes] = []
        size = 0
        first: Message | None = None
        while True:
            message = await receive()
            if message["type"] != "http.request":
                first = message  # the client went away: let the app see it
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._reject(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = first or {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return replayed
            return await receive()

        await self.app(scope, replay, send)

    async def _reject(self, send: Send) -> None:
        message = f"request body exceeds {self.max_bytes} bytes"
        raw = json.dumps(error_body("payload_too_large", message, None, [])).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(raw)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": raw})
