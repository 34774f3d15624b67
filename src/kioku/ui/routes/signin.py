"""Sign in with an API key (or, on a ``--dev`` server, as the local owner) and sign out."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from kioku.errors import UnauthorizedError
from kioku.ui.auth import (
    SESSION_COOKIE,
    SIGNIN_COOKIE,
    UI_PREFIX,
    CsrfRejected,
    PostedDep,
    SignInRequired,
    address_of,
    is_https,
    runtime_of,
    same_origin,
    sessions_of,
    signin_forms_of,
    tokens_match,
    viewer,
)
from kioku.ui.render import page
from kioku.ui.sessions import SESSION_TTL, SIGNIN_FORM_TTL

router = APIRouter()


def safe_next(target: str) -> str:
    """Where to go after signing in: a UI path of this server, never another site."""
    ok = target.startswith(f"{UI_PREFIX}/") and not target.startswith("//") and "\\" not in target
    return target if ok else f"{UI_PREFIX}/"


def _form(request: Request, *, error: str = "", status: int = 200) -> Response:
    """The sign-in form, with a fresh one-time token (in a hidden field and a cookie)."""
    runtime = runtime_of(request)
    token = signin_forms_of(request).issue(address_of(request), runtime.clock())
    ended = request.query_params.get("ended") == "1"
    response = page(
        request, "signin.html", title="Sign in", viewer=None, status=status, error=error,
        signin_token=token, next=safe_next(request.query_params.get("next", "")),
        dev=runtime.settings.server.dev, ended=ended,
    )  # fmt: skip
    response.set_cookie(
        SIGNIN_COOKIE, token, max_age=int(SIGNIN_FORM_TTL.total_seconds()),
        path=f"{UI_PREFIX}/signin",
        httponly=True, samesite="strict", secure=is_https(request),
    )  # fmt: skip
    return response


def _signed_in(request: Request, workspace_id: str, key_id: str | None, target: str) -> Response:
    runtime = runtime_of(request)
    session_id, _ = sessions_of(request).create(workspace_id, key_id, runtime.clock())
    response = RedirectResponse(safe_next(target), 303)
    response.set_cookie(
        SESSION_COOKIE, session_id, max_age=int(SESSION_TTL.total_seconds()), path=UI_PREFIX,
        httponly=True, samesite="strict", secure=is_https(request),
    )  # fmt: skip
    response.delete_cookie(SIGNIN_COOKIE, path=f"{UI_PREFIX}/signin")
    return response


async def _checked_form(request: Request) -> dict[str, str]:
    """The sign-in form, if it came from our own sign-in page (no login CSRF) and was not
    posted before: its token is used up here, whatever the outcome (a form shown again, with
    an error, has a new one)."""
    form = await request.form()
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    token = fields.get("signin_token", "")
    cookie = request.cookies.get(SIGNIN_COOKIE, "")
    if (
        not same_origin(request)
        or not tokens_match(token, cookie)
        or not signin_forms_of(request).take(token, runtime_of(request).clock())
    ):
        raise CsrfRejected("This sign-in form has expired or did not come from this page.")
    return fields


@router.get("/signin")
def signin_page(request: Request) -> Response:
    """The sign-in form; straight on to the overview when already signed in."""
    try:
        viewer(request)
    except SignInRequired:
        return _form(request)
    return RedirectResponse(safe_next(request.query_params.get("next", "")), 303)


@router.post("/signin")
async def sign_in(request: Request) -> Response:
    """Check the key and start a session; the form again, with why, if it is not valid."""
    fields = await _checked_form(request)
    runtime = runtime_of(request)
    key = fields.get("key", "").strip()
    if not key:
        return _form(request, error="key: enter an API key (kk_...).", status=422)
    try:
        principal = await run_in_threadpool(runtime.keys.authenticate, key, "ui")
    except UnauthorizedError:
        return _form(request, error="That API key is not valid (unknown, revoked or expired).",
                     status=401)  # fmt: skip
    return _signed_in(request, principal.workspace_id, principal.key_id, fields.get("next", ""))


@router.post("/signin/dev")
async def sign_in_dev(request: Request) -> Response:
    """``--dev`` only (a loopback server with no keys needed): sign in as the local owner."""
    fields = await _checked_form(request)
    runtime = runtime_of(request)
    if not runtime.settings.server.dev:
        return _form(request, error="Only a --dev server signs in without a key.", status=403)
    owner = runtime.local_principal("ui")
    return _signed_in(request, owner.workspace_id, None, fields.get("next", ""))


@router.post("/signout")
def sign_out(request: Request, form: PostedDep) -> Response:
    """End the session on the server and drop the cookie."""
    sessions_of(request).end(request.cookies.get(SESSION_COOKIE, ""))
    response = RedirectResponse(f"{UI_PREFIX}/signin", 303)
    response.delete_cookie(SESSION_COOKIE, path=UI_PREFIX)
    return response
