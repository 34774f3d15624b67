"""Who is asking: the session cookie, turned into a ``Principal`` on every request, and the
CSRF and Origin checks every form post passes before a handler runs.

The cookie is ``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other site's page
sends it), ``Path=/ui`` (the API never sees it) and ``Secure`` when the request came over
https. A POST must carry the session's CSRF token in its ``csrf`` field, and, when the browser
says where it came from (``Origin``, ``Sec-Fetch-Site``), come from this same origin.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from kioku.runtime import Runtime
from kioku.service.principal import Principal
from kioku.ui.sessions import Session, SessionStore, SignInForms

UI_PREFIX = "/ui"
SESSION_COOKIE = "kioku_session"
SIGNIN_COOKIE = "kioku_signin"
"""A short-lived token bound to the sign-in form (double submit): no login CSRF. The server
handed it out (``SignInForms``) and takes it back on the first post: it works once."""


class SignInRequired(Exception):
    """No valid session: GET goes to the sign-in page, POST is refused (403)."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


class CsrfRejected(Exception):
    """A form post without this session's token, or from another origin (403)."""


@dataclass(frozen=True)
class Viewer:
    """The signed-in person behind this request: the principal every service call takes."""

    principal: Principal
    session: Session

    def can(self, permission: str) -> bool:
        """Whether to offer a control that needs ``permission`` (the service checks again)."""
        return self.principal.can(permission)


def runtime_of(request: Request) -> Runtime:
    """The runtime of the app the UI is mounted in."""
    return request.app.state.runtime_of()


def sessions_of(request: Request) -> SessionStore:
    """The UI app's session table."""
    return request.app.state.sessions


def signin_forms_of(request: Request) -> SignInForms:
    """The UI app's sign-in form tokens."""
    return request.app.state.signin_forms


def address_of(request: Request) -> str:
    """The client's address (what the sign-in forms are bounded by)."""
    return request.client.host if request.client else "unknown"


def is_https(request: Request) -> bool:
    """Whether the request came over https (then the cookie is ``Secure``)."""
    return request.url.scheme == "https"


def viewer(request: Request) -> Viewer:
    """The session's viewer; ``SignInRequired`` without a live session or a working key."""
    session_id = request.cookies.get(SESSION_COOKIE)
    if not session_id:
        raise SignInRequired()
    runtime = runtime_of(request)
    sessions = sessions_of(request)
    session = sessions.find(session_id, runtime.clock())
    if session is None:
        raise SignInRequired("Your session has ended; please sign in again.")
    if session.key_id is None:
        principal: Principal | None = (
            runtime.local_principal("ui") if runtime.settings.server.dev else None
        )
    else:  # re-checked every time: a revoked or expired key ends the session here
        principal = runtime.keys.key_principal(session.workspace_id, session.key_id, "ui")
    if principal is None:
        sessions.end(session_id)
        raise SignInRequired("The API key of this session was revoked or has expired.")
    found = Viewer(principal=principal, session=session)
    request.state.viewer = found  # error pages show the navigation of whoever is signed in
    return found


def same_origin(request: Request) -> bool:
    """Whether a post came from a page of this server (when the browser says so)."""
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True  # old browsers and non-browser clients: the CSRF token still applies
    host = request.headers.get("host", "")
    return origin in (f"http://{host}", f"https://{host}")


def tokens_match(sent: str, expected: str) -> bool:
    """A constant-time comparison of a sent token with the expected one."""
    return bool(sent) and hmac.compare_digest(sent.encode(), expected.encode())


@dataclass(frozen=True)
class Posted:
    """A form post that passed the CSRF and Origin checks, and who sent it."""

    viewer: Viewer
    fields: dict[str, str]
    lists: dict[str, list[str]]

    def get(self, name: str, default: str = "") -> str:
        """One field of the form (``default`` when it was not sent)."""
        return self.fields.get(name, default)


async def posted(request: Request, who: Annotated[Viewer, Depends(viewer)]) -> Posted:
    """The form of a POST, checked: same origin, and this session's CSRF token."""
    form = await request.form()
    if not same_origin(request):
        raise CsrfRejected("This form was posted from another site.")
    if not tokens_match(str(form.get("csrf", "")), who.session.csrf_token):
        raise CsrfRejected("This form has expired or did not come from this page.")
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    lists = {k: [v for v in form.getlist(k) if isinstance(v, str)] for k in form}
    return Posted(viewer=who, fields=fields, lists=lists)


ViewerDep = Annotated[Viewer, Depends(viewer)]
PostedDep = Annotated[Posted, Depends(posted)]
