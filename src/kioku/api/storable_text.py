"""Text the server cannot store, refused where it enters outside a JSON body: one ASGI
middleware for every route (REST, the web UI, ``/mcp``, OAuth).

A JSON body is checked by its model (``kioku.models.json_input``: request bodies and MCP tool
arguments alike). What reaches a query by another way is checked here, with the same rule,
before any route runs: the decoded URL path (a context name, memory id, state key or run id in
it), each query parameter (list filters, cursors, OAuth ``/authorize`` parameters) and each
field of a form body (the UI's forms, OAuth ``/token`` and ``/revoke``, the consent page). A
NUL there (``%00``) reached PostgreSQL, which refuses it in any query, read or write: a 500.
Header values are held to the same rule (none is stored as sent today; HTTP servers refuse a
NUL in one anyway), so a header stored later cannot bring the 500 back.

The refusal is said the way the route it was meant for speaks: a 422 naming the field in
kioku's error body (the API, ``/mcp``), the UI's error page (422), or an OAuth error (400,
RFC 6749 §5.2 and RFC 7591 §3.2.2) for the OAuth endpoints.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qsl

from python_multipart.multipart import parse_options_header
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kioku.api.errors import error_body
from kioku.asgi_body import read_body, replaying
from kioku.models.json_input import text_problem
from kioku.ui.app import invalid_input_page
from kioku.ui.auth import UI_PREFIX

FORM_TYPES = frozenset({b"application/x-www-form-urlencoded", b"multipart/form-data"})
OAUTH_PATHS = frozenset({"/authorize", "/token", "/revoke", "/register", "/oauth/consent"})
"""The MCP SDK's OAuth endpoints and the consent page between them (``kioku.mcp.oauth``): a
refusal there is an OAuth error, ``{"error", "error_description"}``, as their clients read."""

Problem = tuple[str, str]
"""The field at fault (``path``, a query parameter, header or form field) and what is wrong."""


def url_problem(scope: Scope) -> Problem | None:
    """The first part of the request line or headers that holds unstorable text."""
    problem = text_problem(scope["path"])
    if problem is not None:
        return "path", problem
    # Decoded as Starlette decodes it for the app (percent-escapes as UTF-8).
    query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    headers = [(_header_name(k), v.decode("latin-1")) for k, v in scope.get("headers", [])]
    return first_problem(query, "query") or first_problem(headers, "headers")


async def form_problem(scope: Scope, body: bytes) -> Problem | None:
    """The first field of a form body that holds unstorable text, parsed as the app will
    parse it; ``None`` too for a form the parser refuses (the app answers that itself)."""
    delivered = False

    async def once() -> Message:
        nonlocal delivered
        if delivered:
            return {"type": "http.disconnect"}
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    try:
        form = await Request(scope, once).form()
    except (HTTPException, MultiPartException):
        return None
    try:
        # A file's content is bytes, not text: only its field name is checked.
        fields = [(k, v if isinstance(v, str) else "") for k, v in form.multi_items()]
        return first_problem(fields, "body")
    finally:
        await form.close()


def _header_name(raw: bytes) -> str:
    """``Idempotency-Key``, as a header is written (ASGI gives names in lower case)."""
    return "-".join(part.capitalize() for part in raw.decode("latin-1").split("-"))


def first_problem(fields: Iterable[tuple[str, str]], whole: str) -> Problem | None:
    """The first ``(name, value)`` pair holding unstorable text, as the field to name: the
    name, or ``whole`` when the name itself is at fault."""
    for name, value in fields:
        problem = text_problem(name)
        if problem is not None:
            return whole, f"has a name that {problem}"
        problem = text_problem(value)
        if problem is not None:
            return name, problem
    return None


def refusal(scope: Scope, field: str, message: str) -> Response:
    """The refusal, in the form the route at ``scope``'s path answers errors."""
    path: str = scope["path"]
    if path == UI_PREFIX or path.startswith(f"{UI_PREFIX}/"):
        return invalid_input_page(scope, field, message)
    if path in OAUTH_PATHS:
        code = "invalid_client_metadata" if path == "/register" else "invalid_request"
        body = {"error": code, "error_description": f"{field} {message}"}
        return JSONResponse(body, 400, headers={"Cache-Control": "no-store"})
    details = [{"field": field, "message": message}]
    return JSONResponse(error_body("invalid_input", f"{field}: {message}", field, details), 422)


class StorableText:
    """Refuses a request whose path, query, header values or form fields hold text that no
    store can hold (``text_problem``), before the app parses anything else. Inside
    ``BodySizeLimit``: a form body it reads is already capped."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = url_problem(scope)
        content_type, _ = parse_options_header(Headers(scope=scope).get("content-type"))
        if problem is None and content_type in FORM_TYPES:
            body = await read_body(receive)
            if body is None:
                return  # the client went away
            receive = replaying(body, receive)
            problem = await form_problem(scope, body)
        if problem is not None:
            await refusal(scope, *problem)(scope, receive, send)
            return
        await self.app(scope, receive, send)
