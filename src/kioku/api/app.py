"""``create_app``: the ASGI app around one Runtime."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import APIRouter, FastAPI
from fastapi.responses import RedirectResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from kioku._version import __version__
from kioku.api.docs_pages import install_docs_pages
from kioku.api.errors import ERROR_RESPONSES, install_error_handlers
from kioku.api.hosts import HostGuard, allowed_host_names, public_origin
from kioku.api.limits import BodySizeLimit
from kioku.api.metrics import Metrics, RequestMetrics, metrics_endpoint
from kioku.api.ratelimit import RateLimit
from kioku.api.routes import (
    access,
    connectors,
    contexts,
    delivery,
    feedback,
    graph,
    health,
    hooks,
    memories,
    recall,
    sleep,
    state,
)
from kioku.api.storable_text import StorableText
from kioku.runtime import Runtime, open_runtime
from kioku.settings import Settings
from kioku.ui import build_ui

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def _unknown_route(path: str) -> None:
    raise StarletteHTTPException(404, f"no route /api/{path}")


def create_app(
    settings: Settings | None = None, *, runtime: Runtime | None = None, with_mcp: bool = True
) -> FastAPI:
    """Build the app. Given a ``runtime`` the caller owns it; else the lifespan opens one.

    ``with_mcp=False`` leaves out the ``/mcp`` endpoint (and the import of the MCP SDK): the
    CLI's in-process client talks REST only and starts faster without it.
    """
    settings = settings or (runtime.settings if runtime else Settings())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = runtime is None
        app.state.runtime = runtime or open_runtime(settings)
        app.state.runtime.start_background()
        try:
            async with AsyncExitStack() as stack:
                if mcp is not None:
                    await stack.enter_async_context(mcp.session_manager.run())
                yield
        finally:
            if owned:
                app.state.runtime.close()

    app = FastAPI(
        title="kioku",
        version=__version__,
        description="A self-hostable memory server for AI agents.",
        lifespan=lifespan,
        docs_url=None,  # served from local files below (install_docs_pages), not a CDN
        redoc_url=None,
    )
    if runtime is not None:  # usable without running the lifespan (in-process tests)
        app.state.runtime = runtime
    install_error_handlers(app)
    install_docs_pages(app)
    metrics = Metrics(lambda: getattr(app.state, "runtime", None))
    app.state.metrics = metrics  # holds the telemetry listener (held weakly there)
    app.add_route("/metrics", metrics_endpoint(metrics, settings), include_in_schema=False)
    api = APIRouter(prefix="/api/v1", responses=ERROR_RESPONSES)
    for module in (contexts, memories, recall, delivery, feedback, state, sleep, access, health):
        api.include_router(module.router)
    api.include_router(graph.router)
    api.include_router(connectors.router)
    api.include_router(hooks.router)
    app.include_router(api)
    app.add_api_route(  # also at /health, where load balancers look
        "/health", health.health, methods=["GET"], include_in_schema=False
    )
    app.add_api_route(  # an unknown API path keeps the JSON error shape
        "/api/{path:path}", _unknown_route, methods=_METHODS, include_in_schema=False
    )
    app.add_api_route(  # the UI's address as people type it
        "/ui", lambda: RedirectResponse("/ui/", 308), methods=["GET"], include_in_schema=False
    )
    app.mount("/ui", build_ui(lambda: app.state.runtime))  # before MCP's catch-all mount
    mcp = None
    if with_mcp:  # last: the MCP app is mounted at the root and takes what nothing else did
        from kioku.api.mcp_mount import mount_mcp

        mcp = mount_mcp(app, settings, metrics)
    # Innermost: a NUL in the path, query, a header or a form field never reaches a route
    # (JSON bodies are checked by their models); a form body it reads is already capped.
    app.add_middleware(StorableText)
    app.add_middleware(BodySizeLimit, max_bytes=settings.limits.max_request_bytes)
    app.add_middleware(  # a refused request costs no parsing
        RateLimit,
        per_minute=settings.effective_rate_limit_per_minute,
        burst=settings.limits.rate_limit_burst,
    )
    # Every route (REST, UI, /mcp, OAuth, /health, /metrics) answers its own names only.
    app.add_middleware(
        HostGuard, allowed=allowed_host_names(settings), public=public_origin(settings)
    )
    app.add_middleware(RequestMetrics, metrics=metrics)  # outermost: counts 421s and 429s too
    return app
