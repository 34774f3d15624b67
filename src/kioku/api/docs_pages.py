"""``/docs`` (Swagger UI) served from this process, not a CDN.

FastAPI's own page loads its scripts from jsDelivr, so offline (kioku's usual setting: a
laptop, an air-gapped host) it is blank. The scripts come from the ``fastapi-offline`` package
(MIT), which ships Swagger UI 5 as static files; kioku uses only those files, with FastAPI's
own page builder. ReDoc is not offered: its bundle fetches its logo from its CDN.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

ASSETS = "/docs/assets"


def install_docs_pages(app: FastAPI) -> None:
    """Mount the assets and the page (the app is built with ``docs_url=None`` and
    ``redoc_url=None``, so FastAPI's CDN-bound pages do not exist)."""
    static = files("fastapi_offline") / "static"
    app.mount(ASSETS, StaticFiles(directory=str(static)), name="docs-assets")
    title = f"{app.title} {app.version}"
    openapi_url = app.openapi_url or "/openapi.json"

    async def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{title}: REST API",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
        )

    app.add_api_route("/docs", swagger, methods=["GET"], include_in_schema=False)
