"""DNS-rebinding and cross-site protection for every route: one ASGI middleware that checks the
``Host`` header of every request and the ``Origin`` header of every state-changing one.

A web page in the user's browser can point a hostile DNS name at 127.0.0.1 and then talk to a
loopback server as if it were its own origin: the browser sends ``Host: rebind.attacker.example``.
Answering only requests addressed to one of this server's own names defeats that, on REST, the
web UI, ``/mcp``, OAuth and ``/health`` alike.

A state-changing request that carries an ``Origin`` must come from this server's own origin:
the scheme, host and port the request was addressed to (``Host``), ``https`` at that same
authority (a TLS-terminating proxy in front), or ``KIOKU_PUBLIC_URL``'s origin. Any other is
refused, a page on another port of the same machine (``http://localhost:3000``) included: a
body-less ``fetch(..., {mode: "no-cors", method: "POST"})`` needs no CORS preflight, so the
Origin check is all that stands between such a page and ``/purge``. A browser's
``Sec-Fetch-Site: cross-site`` or ``same-site`` on a write is refused too.
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
_DEFAULT_PORTS = {"http": 80, "https": 443}
_FOREIGN_FETCH = frozenset({"cross-site", "same-site"})


def _bare(name: str) -> str:
    """``[::1]`` → ``::1``; lower case (host names compare case-insensitively)."""
    return name.strip().strip("[]").lower()


def allowed_host_names(settings: Settings) -> frozenset[str]:
    """The names this server answers to: the loopback names, the address it is bound to when
    that is a concrete one (not ``0.0.0.0``/``::``), the host of ``KIOKU_PUBLIC_URL``, and
    whatever ``KIOKU_ALLOWED_HOSTS`` adds."""
    names = set(LOOPBACK_NAMES)
    if _bare(settings.server.host) not in _WILDCARDS:
        names.add(_bare(settings.server.host))
    if settings.server.public_url and (public := urlsplit(settings.server.public_url).hostname):
        names.add(_bare(public))
    # An entry may carry a port (``memory.example.com:443``): names are matched without it.
    names.update(
        host_name(name) or _bare(name) for name in settings.server.allowed_hosts if name.strip()
    )
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


Origin = tuple[str, str, int]
"""An origin as compared: scheme, host name (lower case, no brackets), port (the scheme's
default when none is written)."""


def parse_origin(value: str) -> Origin | None:
    """``scheme://host[:port]`` as an ``Origin``, or None (``null``, a path, junk)."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path or parts.query:
        return None
    return scheme, _bare(parts.hostname), port or _DEFAULT_PORTS[scheme]


def public_origin(settings: Settings) -> Origin | None:
    """The origin of ``KIOKU_PUBLIC_URL`` (None when unset or not an http(s) URL)."""
    if not settings.server.public_url:
        return None
    parts = urlsplit(settings.server.public_url)
    return parse_origin(f"{parts.scheme}://{parts.netloc}")


def own_origins(scheme: str, host: str, public: Origin | None) -> set[Origin]:
    """The origins a write addressed to ``scheme://host`` may come from: that one, the public
    URL's, and ``https`` at the same authority when a TLS-terminating proxy may stand in
    front (the Host names a port, which no other server can hold, or a name that is not a
    loopback one: ``https://localhost`` on 443 may be another local server)."""
    found = {origin for origin in (parse_origin(f"{scheme}://{host}"), public) if origin}
    if (secure := parse_origin(f"https://{host}")) is not None:
        named_port = host.rsplit("]", 1)[-1].count(":") == 1
        if named_port or secure[1] not in LOOPBACK_NAMES:
            found.add(secure)
    return found


class HostGuard:
    """Refuses a request whose ``Host`` is not one of ``allowed`` (421 Misdirected Request), and
    a state-changing request from another origin (403): its ``Origin`` is not this server's
    own, or its ``Sec-Fetch-Site`` says another site sent it."""

    def __init__(self, app: ASGIApp, allowed: frozenset[str], public: Origin | None = None) -> None:
        self.app = app
        self.allowed = allowed
        self.public = public

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
        if scope.get("method", "GET") not in _SAFE_METHODS:
            refusal = self._foreign(scope, headers)
            if refusal is not None:
                await _refuse(send, 403, "forbidden_origin", *refusal)
                return
        await self.app(scope, receive, send)

    def _foreign(self, scope: Scope, headers: dict[bytes, str]) -> tuple[str, str] | None:
        """Why a write came from another origin (message, header), or None when it did not."""
        fetch_site = headers.get(b"sec-fetch-site", "").strip().lower()
        if fetch_site in _FOREIGN_FETCH:
            return f"a write from another site (Sec-Fetch-Site: {fetch_site}) refused", (
                "Sec-Fetch-Site"
            )
        origin = headers.get(b"origin")
        if origin is None:
            return None  # not a browser (CLI, SDK, MCP client): nothing to check
        own = own_origins(scope.get("scheme", "http"), headers.get(b"host", ""), self.public)
        if parse_origin(origin) in own:
            return None
        return (
            f"a write from Origin {origin[:100]!r} refused: only this server's own origin "
            "(scheme, host and port) may write from a browser",
            "Origin",
        )


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
