"""Templates: one Jinja2 environment (autoescaped), a few display filters, and ``page``, which
renders a template into a response with the UI's security headers."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, select_autoescape

from kioku.ui.auth import UI_PREFIX, Viewer
from kioku.wording import times

# Scripts and styles only from /ui/static: an injected <script> in a memory's text could not
# run even if escaping failed. JSON for the graph rides in a non-executable <script> block.
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def when(value: datetime | None) -> str:
    """A timestamp for people: UTC, to the second."""
    if value is None:
        return "—"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def duration(seconds: int | None) -> str:
    """``3 h 5 min``-style time left; ``never`` for no expiry."""
    if seconds is None:
        return "never"
    if seconds < 60:
        return f"{seconds} s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min"
    return f"{hours // 24} days {hours % 24} h"


def as_json(value: Any) -> str:
    """Compact JSON for display (Japanese kept as text, not escapes)."""
    return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)


def score(value: float | None, digits: int = 4) -> str:
    """A score to ``digits`` places; a tiny non-zero one in significant digits, not 0.0000."""
    if value is None:
        return "—"
    if value and abs(value) < 10**-digits:
        return f"{value:.{digits - 1}e}"
    return f"{value:.{digits}f}"


environment = Environment(
    loader=PackageLoader("kioku.ui", "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)
environment.filters.update(when=when, duration=duration, as_json=as_json, score=score, times=times)
environment.globals["ui"] = UI_PREFIX


def page(
    request: Request,
    template: str,
    *,
    title: str,
    viewer: Viewer | None = None,
    status: int = 200,
    **context: Any,
) -> HTMLResponse:
    """Render ``template`` for ``viewer`` (``None``: signed out) as an HTML response."""
    viewer = viewer or getattr(request.state, "viewer", None)
    html = environment.get_template(template).render(
        request=request,
        title=title,
        viewer=viewer,
        csrf=viewer.session.csrf_token if viewer else "",
        **context,
    )
    return HTMLResponse(html, status, headers=_HEADERS)
