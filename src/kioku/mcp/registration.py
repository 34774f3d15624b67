"""What an OAuth client may register, and where a code may be sent.

Dynamic client registration (RFC 7591) is open to anyone who can reach the server, so what it
stores is bounded: the client name, the number and length of redirect URIs (the body size and
how often one address may register: ``kioku.api.registration_limit``), and no field may hold
text that cannot be stored (a NUL: ``kioku.models.json_input``). Redirect URIs must be
``https``, ``http`` to a loopback host only, or a native app's private-use scheme (RFC 8252
§7.1, e.g. ``cursor://…``); never a fragment, user information, or a scheme that runs or reads
something in the browser (``javascript:``, ``data:``, ``file:``…). The same rule is applied
again when a client is loaded for ``/authorize``, so a URI stored before it existed is never
used.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from mcp.server.auth.provider import RegistrationError
from mcp.shared.auth import OAuthClientInformationFull

from kioku.errors import field_path
from kioku.models.json_input import find_unstorable

MAX_REGISTRATION_BYTES = 16 * 1024
MAX_CLIENT_NAME_CHARS = 200
MAX_REDIRECT_URIS = 10
MAX_REDIRECT_URI_CHARS = 2000

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
    RFC 7591 §3.2.2 says (``invalid_client_metadata`` / ``invalid_redirect_uri``). Text no
    store can hold (a NUL, a lone surrogate) is refused in any field, as in a REST body."""
    found = find_unstorable(client.model_dump(mode="json", exclude_none=True))
    if found is not None:
        loc, problem = found
        raise RegistrationError("invalid_client_metadata", f"{field_path(loc) or 'body'} {problem}")
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
