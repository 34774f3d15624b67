"""The consent page of the OAuth flow: a person signs in by pasting an API key and allows (or
denies) the client the scopes it asked for, at most what the key's role permits.

No cookie is set, so there is no session to ride: the form is bound to a one-time, ten-minute
ticket (a client or address that opens too many drops its oldest: ``kioku.service.oauth``)
and carries the key itself, which a cross-site attacker does not have. Everything the
client chose (its name, scopes, redirect URI) is escaped before it is shown, and the page names
where the code will be sent (the host in large type) so a person can tell an unexpected
destination. No page of it may be framed (``frame-ancestors 'none'``, ``X-Frame-Options``), so
another site cannot overlay it to steal the click.
"""

from __future__ import annotations

import html
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from kioku.errors import ForbiddenError, UnauthorizedError
from kioku.mcp.oauth import SCOPES, KiokuOAuthProvider

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kioku: allow {client}?</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 32rem; margin: 3rem auto">
<h1>Allow {client} to use your kioku memory?</h1>
<p>It asks for: <strong>{scopes}</strong>. It will act as the workspace and role of the API key
you enter here, never beyond them.</p>
<p>If you allow it, the sign-in code is sent to<br>
<strong id="redirect-host" style="font-size: 1.4rem">{host}</strong><br>
<code id="redirect-uri" style="word-break: break-all">{redirect}</code><br>
Deny if you do not recognise this address.</p>
{error}
<form method="post">
<input type="hidden" name="ticket" value="{ticket}">
<label for="key">Your kioku API key</label><br>
<input id="key" name="key" type="password" autocomplete="off" required size="50" autofocus>
<p><button name="decision" value="allow">Allow</button>
<button name="decision" value="deny" formnovalidate>Deny</button></p>
</form></body></html>"""


SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
"""On every answer of the consent page: no framing (clickjacking), no script or outside
resource, and the ticket in its address never sent on as a referrer."""
_EXPIRED = (
    "<p>This sign-in link has expired, was used, or was replaced by a newer one: start the "
    "sign-in again from your app.</p>"
)


def redirect_host(uri: str) -> str:
    """What the page shows in large type: the host (and port) the code goes to, or, for a
    native app's own scheme, ``scheme://``."""
    parts = urlsplit(uri)
    return parts.netloc or f"{parts.scheme}:"


def with_query(uri: str, **params: str | None) -> str:
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return f"{uri}{'&' if '?' in uri else '?'}{query}"


class ConsentPage:
    """``GET`` shows the form for a ticket; ``POST`` turns the decision into a code redirect
    (the grant's rules are the OAuth service's: ``kioku.service.oauth``)."""

    def __init__(self, provider: KiokuOAuthProvider) -> None:
        self.provider = provider

    async def handle(self, request: Request) -> Response:
        if request.method == "POST":
            response = await self._decide(request)
        else:
            response = await self._show(request.query_params.get("ticket", ""))
        response.headers.update(SECURITY_HEADERS)
        return response

    async def _show(self, ticket: str, error: str = "", status: int = 200) -> Response:
        grant = await self.provider.run_sync(self.provider.oauth.consent, ticket)
        if grant is None:
            return HTMLResponse(_EXPIRED, 400)
        client = await self.provider.get_client(grant.client_id)
        name = (client.client_name if client else None) or grant.client_id
        page = _PAGE.format(
            client=html.escape(name),
            scopes=html.escape(", ".join(grant.scopes or SCOPES)),
            ticket=html.escape(ticket),
            host=html.escape(redirect_host(grant.params["redirect_uri"])),
            redirect=html.escape(grant.params["redirect_uri"]),
            error=f'<p role="alert" style="color:#b00">{html.escape(error)}</p>' if error else "",
        )
        return HTMLResponse(page, status)

    async def _decide(self, request: Request) -> Response:
        form = await request.form()
        ticket, key = str(form.get("ticket", "")), str(form.get("key", ""))
        oauth = self.provider.oauth
        grant = await self.provider.run_sync(oauth.consent, ticket)
        if grant is None:
            return HTMLResponse(_EXPIRED, 400)
        redirect_uri, state = grant.params["redirect_uri"], grant.params.get("state")
        if form.get("decision") != "allow":
            await self.provider.run_sync(oauth.deny, ticket)
            return RedirectResponse(
                with_query(redirect_uri, error="access_denied", state=state), 302
            )
        try:
            code = await self.provider.run_sync(oauth.allow, ticket, key)
        except UnauthorizedError:
            return await self._show(ticket, "That API key is not valid.", 401)
        except ForbiddenError:
            return await self._show(ticket, "That key's role allows none of these scopes.", 403)
        if code is None:  # someone else used the ticket meanwhile
            return HTMLResponse(_EXPIRED, 400)
        return RedirectResponse(with_query(redirect_uri, code=code, state=state), 302)
