"""DNS-rebinding and cross-site protection for every route: one ASGI middleware that checks the
``Host`` header of every request and the ``Origin`` header of every state-changing one.

A web page in the user's browser can point a hostile DNS name at 127.0.0.1 and then talk to a
loopback server as if it were its own origin: the browser sends ``Host: rebind.attacker.example``.
Answering only requests addressed to one of this server's own names defeats that, on REST, the
web UI, ``/mcp``, OAuth and ``/health`` alike. A cross-site ``Origin`` on a write is refused too
(a form or ``fetch`` from another site), whatever its Host.
"""

from __future__ import annotations

import ipaddress
import json
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from kioku.api.errors import error_body
from kioku.settings import Settings

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_WILDCARDS = frozenset({"", "0.0.0.0", "::"})
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _bare(name: str) -> str:
    """``[::1]`` → ``::1``; lower case (host names compare case-insensitively)."""
    return name.strip().strip("[]").lower()


def allowed_host_names(settings: Settings) -> frozenset[str]:
    """The names this server answers to: the loopback names, the address it is bound to when
    that is a concrete one (not ``0.0.0.0``/``::``), the host of ``KIOKU_PUBLIC_URL``, and
    whatever ``KIOKU_ALLOWED_HOSTS`` adds."""
    names = set(LOOPBACK_NAMES)
    if _bare(settings.host) not in _WILDCARDS:
        names.add(_bare(settings.host))
    if settings.public_url and (public := urlsplit(settings.public_url).hostname):
        names.add(_bare(public))
    # An entry may carry a port (``memory.example.com:443``): names are matched without it.
    names.update(host_name(name) or _bare(name) for name in settings.allowed_hosts if name.strip())
    return frozenset(names)


def host_name(value: str) -> str | None:
    """The name part of a ``Host`` header (``name``, ``name:port``, ``[v6]``, ``[v6]:port``),
    or None when it is not one."""
    value = value.strip()
    if value.startswith("["):
        end = value.find("]")
        rest = value[end + 1 :]
        if end < 0 or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return None
        return _bare(value[: end + 1])
    name, _, port = value.partition(":")
    if not name or (port and not port.isdigit()) or ":" in port:
        return None
    try:  # an IPv6 address must come in brackets
        ipaddress.IPv6Address(name)
        return None
    except ValueError:
        return name.lower()


def origin_name(origin: str) -> str | None:
    """The host of an ``Origin`` header (``scheme://host[:port]``), or None (``null``, junk)."""
    try:
        parts = urlsplit(origin)
        return None if parts.scheme not in ("http", "https") else parts.hostname
    except ValueError:
        return None


class HostGuard:
    """Refuses a request whose ``Host`` is not one of ``allowed`` (421 Misdirected Request), and
    a state-changing request whose ``Origin`` is present and names another host (403)."""

    def __init__(self, app: ASGIApp, allowed: frozenset[str]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        host = host_name(headers.get(b"host", "")) if b"host" in headers else None
        if host is None or host not in self.allowed:
            shown = headers.get(b"host", "")[:100]
            message = (
                f"this server does not answer to Host {shown!r}: set KIOKU_ALLOWED_HOSTS or "
                "KIOKU_PUBLIC_URL to serve another name (DNS-rebinding protection)"
            )
            await _refuse(send, 421, "misdirected_request", message, "Host")
            return
        origin = headers.get(b"origin")
        if (
            origin is not None
            and scope.get("method", "GET") not in _SAFE_METHODS
            and origin_name(origin) not in self.allowed
        ):
            message = f"cross-site request from Origin {origin[:100]!r} refused"
            await _refuse(send, 403, "forbidden_origin", message, "Origin")
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, code: str, message: str, field: str) -> None:
    body = json.dumps(error_body(code, message, field, [])).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
