"""``/docs`` renders in a real headless Chromium with every request that leaves the server
refused: its scripts come from this process, not a CDN."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Route

from tests.e2e.conftest import running_server
from tests.ui.browser import shoot

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("docs"), "--dev") as url:
        yield url


def test_the_pages_name_no_outside_address(base: str) -> None:
    page = httpx.get(f"{base}/docs")
    assert page.status_code == 200
    assert "cdn." not in page.text and "fonts.googleapis" not in page.text, page.text
    script = httpx.get(f"{base}/docs/assets/swagger-ui-bundle.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]


def test_the_api_docs_render_offline(base: str, chromium: Browser) -> None:
    outside: list[str] = []

    def only_this_server(route: Route) -> None:
        if route.request.url.startswith(base):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page = chromium.new_page()
    try:
        page.route("**/*", only_this_server)
        page.goto(f"{base}/docs")
        page.wait_for_selector(".opblock", timeout=30_000)
        assert page.locator(".opblock").count() > 10  # the operations, not an error box
        assert "recall" in page.content()
        shoot(page, "api-docs")
    finally:
        page.close()
    assert outside == []
