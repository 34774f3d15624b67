"""``create_app``: the ASGI app around one Runtime."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI

from kioku import __version__
from kioku.api.errors import install_error_handlers
from kioku.api.limits import BodySizeLimit
from kioku.api.routes import contexts, delivery, feedback, health, memories, recall, state
from kioku.runtime import Runtime, open_runtime
from kioku.settings import Settings


def create_app(settings: Settings | None = None, *, runtime: Runtime | None = None) -> FastAPI:
    """Build the app. Given a ``runtime`` the caller owns it; else the lifespan opens one."""
    settings = settings or (runtime.settings if runtime else Settings())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = runtime is None
        app.state.runtime = runtime or open_runtime(settings)
        app.state.runtime.start_background()
        try:
            yield
        finally:
            if owned:
                app.state.runtime.close()

    app = FastAPI(
        title="kioku",
        version=__version__,
        description="A self-hostable memory server for AI agents.",
        lifespan=lifespan,
    )
    if runtime is not None:  # usable without running the lifespan (in-process tests)
        app.state.runtime = runtime
    install_error_handlers(app)
    api = APIRouter(prefix="/api/v1")
    for module in (contexts, memories, recall, delivery, feedback, state, health):
        api.include_router(module.router)
    app.include_router(api)
    app.add_api_route(  # also at /health, where load balancers look
        "/health", health.health, methods=["GET"], include_in_schema=False
    )
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_request_bytes)
    return app
