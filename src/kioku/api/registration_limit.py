"""The front door of open OAuth client registration: a body cap and a per-address rate.

Registration (RFC 7591) needs no credentials, so before the MCP SDK parses a request this
middleware refuses a body over ``MAX_REGISTRATION_BYTES`` (413, ``invalid_client_metadata``)
and an address that registered too often (429 with ``Retry-After``). What the metadata may
hold is checked by the provider (``kioku.mcp.registration``).
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from kioku.api.ratelimit import TokenBucketLimiter, address_key, retry_after_seconds
from kioku.asgi_body import BodyTooLarge, read_body, replaying
from kioku.mcp.registration import MAX_REGISTRATION_BYTES

REGISTRATION_BURST = 20
"""Registrations one address may make at once; then ``per_hour`` (a setting) refill."""


class RegistrationGate:
    """ASGI middleware in front of ``POST /register``: a body over ``MAX_REGISTRATION_BYTES``
    is refused with 413 before it is parsed, and each address may register ``per_hour`` times
    an hour (after a burst of ``REGISTRATION_BURST``), then gets 429 with ``Retry-After``."""

    def __init__(self, app: ASGIApp, *, per_hour: float, path: str = "/register") -> None:
        self.app = app
        self.path = path
        self.limiter = TokenBucketLimiter(per_minute=per_hour / 60, burst=REGISTRATION_BURST)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > MAX_REGISTRATION_BYTES:
            await _refuse(send, 413, _too_large())
            return
        try:
            body = await read_body(receive, MAX_REGISTRATION_BYTES)
        except BodyTooLarge:
            await _refuse(send, 413, _too_large())
            return
        if body is None:
            return  # the client went away
        wait = self.limiter.check(address_key(scope))
        if wait is not None:
            retry = retry_after_seconds(wait)
            description = f"too many registrations: retry after {retry} s"
            error = {"error": "too_many_requests", "error_description": description}
            await _refuse(send, 429, error, ((b"retry-after", str(retry).encode()),))
            return
        await self.app(scope, replaying(body, receive), send)


def _too_large() -> dict[str, str]:
    return {
        "error": "invalid_client_metadata",
        "error_description": f"registration request exceeds {MAX_REGISTRATION_BYTES} bytes",
    }


async def _refuse(
    send: Send, status: int, error: dict[str, str], extra: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    raw = json.dumps(error).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(raw)).encode()),
        (b"cache-control", b"no-store"),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": raw})
