"""What an OAuth client may register, and where a code may be sent.

Dynamic client registration (RFC 7591) is open to anyone who can reach the server, so what it
stores is bounded: the request body, the client name, the number and length of redirect URIs,
and how often one address may register. Redirect URIs must be ``https``, ``http`` to a loopback
host only, or a native app's private-use scheme (RFC 8252 §7.1, e.g. ``cursor://…``); never a
fragment, user information, or a scheme that runs or reads something in the browser
(``javascript:``, ``data:``, ``file:``…). The same rule is applied again when a client is
loaded for ``/authorize``, so a URI stored before it existed is never used.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

from mcp.server.auth.provider import RegistrationError
from mcp.shared.auth import OAuthClientInformationFull
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kioku.api.ratelimit import TokenBucketLimiter, address_key, retry_after_seconds

MAX_REGISTRATION_BYTES = 16 * 1024
MAX_CLIENT_NAME_CHARS = 200
MAX_REDIRECT_URIS = 10
MAX_REDIRECT_URI_CHARS = 2000
REGISTRATION_BURST = 20
"""Registrations one address may make at once; then ``per_hour`` (a setting) refill."""

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
BLOCKED_SCHEMES = frozenset({
    "javascript", "vbscript", "data", "file", "blob", "about", "filesystem", "view-source",
    "ftp", "ws", "wss", "mailto", "tel", "sms", "chrome", "intent",
})  # fmt: skip
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")


def redirect_uri_problem(uri: str) -> str | None:
    """Why ``uri`` may not receive authorization codes, or ``None`` if it may."""
    if len(uri) > MAX_REDIRECT_URI_CHARS:
        return f"is longer than {MAX_REDIRECT_URI_CHARS} characters"
    if "#" in uri:
        return "must not have a fragment"
    try:
        parts = urlsplit(uri)
    except ValueError:
        return "is not a valid URI"
    scheme = parts.scheme.lower()
    if not _SCHEME.fullmatch(scheme):
        return "has no valid scheme"
    if scheme in ("https", "http"):
        if not parts.hostname:
            return "has no host"
        if "@" in parts.netloc:
            return "must not carry user information"
        if scheme == "http" and parts.hostname.lower() not in LOOPBACK_HOSTS:
            return "must use https (http only to 127.0.0.1, [::1] or localhost)"
        return None
    if scheme in BLOCKED_SCHEMES:
        return f"must not use the {scheme}: scheme"
    if not (parts.netloc or parts.path):
        return "names neither a host nor a path"
    return None  # a native app's private-use scheme (RFC 8252 §7.1)


def check_registration(client: OAuthClientInformationFull) -> None:
    """Refuse metadata past the bounds, or a redirect URI that may not receive codes, as
    RFC 7591 §3.2.2 says (``invalid_client_metadata`` / ``invalid_redirect_uri``)."""
    if client.client_name is not None and len(client.client_name) > MAX_CLIENT_NAME_CHARS:
        raise RegistrationError(
            "invalid_client_metadata",
            f"client_name is longer than {MAX_CLIENT_NAME_CHARS} characters",
        )
    uris = [str(uri) for uri in client.redirect_uris or []]
    if len(uris) > MAX_REDIRECT_URIS:
        raise RegistrationError(
            "invalid_redirect_uri", f"at most {MAX_REDIRECT_URIS} redirect_uris may be registered"
        )
    for index, uri in enumerate(uris):
        problem = redirect_uri_problem(uri)
        if problem is not None:
            raise RegistrationError("invalid_redirect_uri", f"redirect_uris[{index}] {problem}")


def usable_redirect_uris(client: OAuthClientInformationFull) -> OAuthClientInformationFull:
    """The client with only the redirect URIs that may receive codes (for ``/authorize``)."""
    if client.redirect_uris:
        client.redirect_uris = [
            uri for uri in client.redirect_uris if redirect_uri_problem(str(uri)) is None
        ]
    return client


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
        body = b""
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body += message.get("body", b"")
            if len(body) > MAX_REGISTRATION_BYTES:
                await _refuse(send, 413, _too_large())
                return
            if not message.get("more_body", False):
                break
        wait = self.limiter.check(address_key(scope))
        if wait is not None:
            retry = retry_after_seconds(wait)
            description = f"too many registrations: retry after {retry} s"
            error = {"error": "too_many_requests", "error_description": description}
            await _refuse(send, 429, error, ((b"retry-after", str(retry).encode()),))
            return
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if delivered:
                return await receive()
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


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
