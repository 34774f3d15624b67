"""Read a request's body in an ASGI middleware, then hand the app a ``receive`` that replays
it: for middleware that must see (or amend) a body before the app parses it."""

from __future__ import annotations

from starlette.types import Message, Receive


class BodyTooLarge(Exception):
    """The body grew past the limit given to ``read_body``."""


async def read_body(receive: Receive, limit: int | None = None) -> bytes | None:
    """The whole body; ``None`` if the client went away first. Past ``limit`` bytes it stops
    reading and raises ``BodyTooLarge``."""
    body = b""
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        body += message.get("body", b"")
        if limit is not None and len(body) > limit:
            raise BodyTooLarge
        if not message.get("more_body", False):
            return body


def replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, whole, then defers to the real one (for the
    disconnect the app may wait for)."""
    delivered = False

    async def replay() -> Message:
        nonlocal delivered
        if delivered:
            return await receive()
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay
