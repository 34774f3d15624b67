"""``build_ui``: the web UI as an ASGI sub-app, mounted at ``/ui`` by ``create_app``.

Its own app (not routes of the API) so its errors are HTML pages, not the API's JSON bodies,
and its cookie never reaches ``/api``. Every page calls the services with the signed-in
viewer's principal (channel ``ui``, so writes are stamped ``source_type=manual``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Scope

from kioku.errors import KiokuError, first_error, http_status
from kioku.runtime import Runtime
from kioku.ui.auth import UI_PREFIX, CsrfRejected, SignInRequired
from kioku.ui.render import page
from kioku.ui.routes import (
    context_page,
    contexts,
    graph,
    keys,
    lanes,
    memories,
    signin,
    sleep,
)
from kioku.ui.sessions import SessionStore, SignInForms

STATIC = Path(__file__).parent / "static"


def build_ui(runtime_of: Callable[[], Runtime]) -> FastAPI:
    """The UI app; ``runtime_of`` returns the runtime of the app it is mounted in."""
    ui = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    ui.state.runtime_of = runtime_of
    ui.state.sessions = SessionStore()
    ui.state.signin_forms = SignInForms()
    ui.mount("/static", StaticFiles(directory=STATIC), name="static")
    for module in (signin, contexts, context_page, memories, lanes, graph, sleep, keys):
        ui.include_router(module.router)
    install_error_pages(ui)
    return ui


def invalid_input_page(scope: Scope, field: str, message: str) -> Response:
    """The 422 page naming the field at fault: for input refused before the UI app runs
    (``kioku.api.storable_text``: a NUL in the path, query or a form field)."""
    return page(
        Request(scope), "error.html", title="Invalid input", status=422,
        heading="Invalid input", message=f"{field}: {message}", viewer=None,
    )  # fmt: skip


def install_error_pages(ui: FastAPI) -> None:
    """Errors as pages: sign-in redirects, 403/404 pages, the field of a bad input."""

    async def sign_in_required(request: Request, exc: Exception) -> Response:
        """GET: to the sign-in page (and back after); POST: a 403 page."""
        assert isinstance(exc, SignInRequired)
        if request.method in ("GET", "HEAD"):
            target = f"{UI_PREFIX}/signin"
            if request.url.path not in (UI_PREFIX, f"{UI_PREFIX}/"):
                target += "?next=" + quote(request.url.path, safe="")
            if exc.reason:
                target += ("&" if "?" in target else "?") + "ended=1"
            return RedirectResponse(target, 303)
        return page(
            request, "error.html", title="Sign-in required", status=403,
            heading="Sign-in required",
            message=exc.reason or "Sign in to use kioku.", viewer=None,
        )  # fmt: skip

    async def csrf_rejected(request: Request, exc: Exception) -> Response:
        """A 403 page: the form was not this session's, or came from elsewhere."""
        return page(
            request, "error.html", title="Form refused", status=403, heading="Form refused",
            message=f"{exc} Reload the page and try again.",
        )  # fmt: skip

    async def kioku_error(request: Request, exc: Exception) -> Response:
        """The service's error as a page, with its status (404, 403, 409, 422...)."""
        assert isinstance(exc, KiokuError)
        status = http_status(exc)
        headings = {
            404: "Not found",
            403: "Not allowed",
            409: "Conflict",
            422: "Invalid input",
            413: "Too large",
        }
        heading = headings.get(status, "Request failed")
        message = f"{exc.field}: {exc.message}" if exc.field else exc.message
        return page(
            request, "error.html", title=heading, status=status, heading=heading,
            message=message,
        )  # fmt: skip

    async def http_error(request: Request, exc: Exception) -> Response:
        """Unknown pages and wrong methods, as pages."""
        assert isinstance(exc, StarletteHTTPException)
        heading = "Not found" if exc.status_code == 404 else "Request failed"
        return page(
            request, "error.html", title=heading, status=exc.status_code, heading=heading,
            message="There is no such page." if exc.status_code == 404 else str(exc.detail),
        )  # fmt: skip

    async def bad_request(request: Request, exc: Exception) -> Response:
        """A malformed query parameter (``k=many``), named on a 422 page."""
        assert isinstance(exc, RequestValidationError)
        field, message = first_error(exc, sourced=True)
        return page(
            request, "error.html", title="Invalid input", status=422, heading="Invalid input",
            message=f"{field}: {message}",
        )  # fmt: skip

    ui.add_exception_handler(SignInRequired, sign_in_required)
    ui.add_exception_handler(CsrfRejected, csrf_rejected)
    ui.add_exception_handler(KiokuError, kioku_error)
    ui.add_exception_handler(StarletteHTTPException, http_error)
    ui.add_exception_handler(RequestValidationError, bad_request)
